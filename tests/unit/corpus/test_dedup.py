"""Duplicates by hash across partitions and chunks: the first occurrence of each hash stays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xlsent.corpus import dedup
from xlsent.corpus.dedup import Duplicates


def _reference(hashes: np.ndarray) -> np.ndarray:
    """Positions of all but the first occurrence of each hash (what np.unique gives)."""
    _, first = np.unique(hashes, return_index=True)
    duplicate = np.ones(len(hashes), dtype=bool)
    duplicate[first] = False
    return np.flatnonzero(duplicate)


def test_a_hand_made_stream(tmp_path: Path) -> None:
    hashes = np.array([7, 3, 7, 7, 2**63 + 5, 3, 11, 2**63 + 5], dtype=np.uint64)
    positions = np.array([0, 2, 3, 5, 6, 8, 9, 12])  # rows between them were dropped earlier
    found = Duplicates(tmp_path, len(hashes))
    found.add(hashes[:3], positions[:3])
    found.add(hashes[3:], positions[3:])
    assert found.find() == 4
    # Positions 3 and 5 repeat 7 (first at 0), 8 repeats 3, 12 repeats 2^63 + 5.
    assert found.below(4).tolist() == [3]
    assert found.below(4).tolist() == []
    assert sorted(found.below(13).tolist()) == [5, 8, 12]


@pytest.mark.parametrize(("rows_per_partition", "rows"), [(1 << 21, 5000), (64, 5000), (64, 10)])
def test_partitions_and_chunks_give_the_duplicates_of_the_whole_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows_per_partition: int, rows: int
) -> None:
    # With 64 rows a partition, 5000 rows spread over 128 partitions, each read in chunks.
    monkeypatch.setattr(dedup, "PARTITION_ROWS", rows_per_partition)
    monkeypatch.setattr(dedup, "_READ_POSITIONS", 16)
    rng = np.random.default_rng(rows)
    distinct = rng.integers(0, 2**64, size=rows // 3, dtype=np.uint64)
    hashes = rng.choice(distinct, size=rows)  # about two repeats a hash
    positions = np.arange(rows) * 2
    found = Duplicates(tmp_path, rows)
    for batch in np.array_split(np.arange(rows), 9):
        found.add(hashes[batch], positions[batch])
    expected = positions[_reference(hashes)]
    assert found.find() == len(expected)
    taken = [found.below(stop) for stop in range(0, 2 * rows + 200, 157)]
    assert np.array_equal(np.sort(np.concatenate(taken)), expected)
    # Each call gives only positions below its stop and above the previous one's.
    for stop, below in zip(range(0, 2 * rows + 200, 157), taken, strict=True):
        assert np.all((below < stop) & (below >= stop - 157))
    assert not list(tmp_path.glob("part-*"))  # read and removed
