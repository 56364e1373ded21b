"""The train job's memory request: the pool's bytes from the Parquet footers, equal to the
mapped pool's files, counted once per node, and the processes' fixed part."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xlsent.tokenize import SUBWORDS_SCHEMA
from xlsent.train.distributed import World
from xlsent.train.mapped_pool import POOL, mapped_pairs, mapped_word_aligned
from xlsent.train.memory import BUILD_BYTES, PROCESS_BYTES, job_mem_mb, node_bytes, pool_bytes

MIB = 2**20


def _subwords(path: Path, xx: list[list[int]], en: list[list[int]]) -> Path:
    ids = list(range(len(xx)))
    pq.write_table(pa.table({"id": ids, "en_ids": en, "xx_ids": xx}, schema=SUBWORDS_SCHEMA), path)
    return path


@pytest.fixture
def by_hand(tmp_path: Path) -> dict[str, Path]:
    """de: 3 pairs, 3 xx and 5 en ids (an empty sentence among them); kk: 1 pair, 1 + 2 ids."""
    return {
        "de": _subwords(tmp_path / "de.parquet", [[1, 2], [3], []], [[4], [5, 6, 7], [8]]),
        "kk": _subwords(tmp_path / "kk.parquet", [[9]], [[10, 11]]),
    }


def _files(directory: Path) -> int:
    return sum(path.stat().st_size for path in (directory / POOL).glob("*.bin"))


def test_pool_bytes_by_hand_are_the_mapped_pools(by_hand, tmp_path):
    # ids: 4 B each; a pair: an 8 B offset a side and a 2 B language; each side's offsets
    # start with a 0 (8 B).
    de = 4 * (3 + 5) + 3 * (2 * 8 + 2)  # 86
    kk = 4 * (1 + 2) + 1 * (2 * 8 + 2)  # 30
    assert pool_bytes(by_hand.values(), "tr") == de + kk + 2 * 8 == 132
    mapped_pairs(by_hand, 100, tmp_path / "checkpoints", World())
    assert _files(tmp_path / "checkpoints") == 132


def test_a_node_holds_the_pool_once_and_each_process_its_own_part(by_hand):
    pool = 132  # above
    assert node_bytes(by_hand.values(), "tr", 1) == pool + BUILD_BYTES + PROCESS_BYTES
    assert node_bytes(by_hand.values(), "dap", 4) == pool + BUILD_BYTES + 4 * PROCESS_BYTES
    # MLM's monolingual sentences: a copy of the pool in each process.
    assert node_bytes(by_hand.values(), "mlm", 4) == (
        pool + BUILD_BYTES + 4 * (PROCESS_BYTES + pool)
    )
    mib = -(-(pool + BUILD_BYTES + 4 * PROCESS_BYTES) // MIB)
    assert job_mem_mb([str(p) for p in by_hand.values()], "tr", 4, 1) == mib
    assert job_mem_mb([str(p) for p in by_hand.values()], "tr", 4, 3) == 3 * mib


@pytest.mark.parametrize("method", ["tr", "wacse"])
def test_pool_bytes_of_real_inputs_are_the_mapped_pools(
    method, small_subwords, small_word_spans, tmp_path
):
    """The subwords and word spans as their rules write them: the footers' counts are the
    files' exactly when nothing is truncated, and an upper bound when something is."""
    if method == "wacse":
        paths = small_word_spans
        mapped = mapped_word_aligned
    else:
        paths = {lang: p["train"] for lang, p in small_subwords.items()}
        mapped = mapped_pairs
    mapped(paths, 10_000, tmp_path / "whole", World())
    assert pool_bytes(paths.values(), method) == _files(tmp_path / "whole")
    mapped(paths, 16, tmp_path / "truncated", World())
    assert pool_bytes(paths.values(), method) > _files(tmp_path / "truncated")


def test_a_missing_input_is_a_resource_snakemake_evaluates_later(by_hand, tmp_path):
    """Snakemake takes a FileNotFoundError naming one of the job's inputs, as its input lists
    them, for a resource not known yet (its inputs are made first)."""
    missing = os.path.join(str(tmp_path), "results", "subwords", "xx.parquet")
    with pytest.raises(FileNotFoundError) as err:
        job_mem_mb([str(by_hand["de"]), missing], "tr", 1, 1)
    assert err.value.filename == missing
