"""Block-wise reading of Moses files: the same lines and the same errors as reading line by line.

The reference is Python's own line iteration of the same bytes, with one `\\r` dropped before
each line end (what the corpus stage did before it read in blocks).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import random
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from xlsent.corpus import bitext as bitext_module
from xlsent.corpus.bitext import CorpusError, moses_files
from xlsent.corpus.lines import Block, Facts, read_lines


def _by_line(data: bytes) -> list[bytes]:
    return [line.removesuffix(b"\n").removesuffix(b"\r") for line in io.BytesIO(data)]


def _by_block(data: bytes, block_bytes: int) -> list[bytes]:
    blocks = read_lines(io.BytesIO(data), block_bytes)
    return [line for lines in blocks for line in lines.field("line").to_pylist()]


def test_lines_lose_their_ends_and_one_carriage_return() -> None:
    data = "a\r\nb\rc\n\n\r\nKazakh: Көк түстіліктің теңгерімі.\r\r\nno end\r".encode()
    lines = pa.concat_arrays([block.field("line") for block in read_lines(io.BytesIO(data))])
    expected = [
        "a",
        "b\rc",  # a lone \r is part of the line
        "",
        "",  # only a Windows ending
        "Kazakh: Көк түстіліктің теңгерімі.\r",  # one \r dropped, not two
        "no end",  # the last line has no \n; its \r goes as a Windows ending's would
    ]
    # Short lines live in their view, longer ones point into the block: both read back.
    assert pl.from_arrow(lines).cast(pl.String).to_list() == expected


def test_facts_are_computed_per_block_and_come_with_the_lines() -> None:
    def facts(block: Block) -> dict[str, np.ndarray]:
        first = block.data[block.starts]
        return {
            "length": block.lengths.astype(np.int32),
            "x": (first == ord("x")) & (block.lengths > 0),
        }

    blocks = list(read_lines(io.BytesIO(b"xa\nb\r\n\nxyz\n"), 4, facts))
    assert len(blocks) > 1
    rows = [row for lines in blocks for row in lines.to_pylist()]
    assert rows == [
        {"line": b"xa", "length": 2, "x": 1},
        {"line": b"b", "length": 1, "x": 0},
        {"line": b"", "length": 0, "x": 0},
        {"line": b"xyz", "length": 3, "x": 1},
    ]


@pytest.mark.parametrize("block_bytes", [1, 2, 3, 5, 13, 64, 1 << 22])
def test_blocks_of_any_size_give_the_lines_of_line_by_line_reading(block_bytes: int) -> None:
    # Lines of every length around the 12 bytes a view holds itself, Windows endings split
    # between blocks, empty lines, non-ASCII text and no line end at the very end.
    rng = random.Random(block_bytes)
    alphabet = [b"a", b" ", b"\r", "ә".encode(), "中".encode(), b"\xff"]
    lines = [b"".join(rng.choices(alphabet, k=rng.randrange(30))) for _ in range(300)]
    data = b"".join(line + rng.choice([b"\n", b"\r\n"]) for line in lines) + b"last\r"
    assert _by_block(data, block_bytes) == _by_line(data)


def test_empty_input_and_a_single_line_end() -> None:
    assert _by_block(b"", 4) == []
    assert _by_block(b"\n", 4) == [b""]
    assert _by_block(b"\r", 4) == [b""]


def test_a_line_longer_than_a_block_is_read_whole() -> None:
    data = b"x" * 1000 + b"\nshort\n"
    assert _by_block(data, 7) == [b"x" * 1000, b"short"]


# -- bitexts: batches and the errors of line-by-line reading --------------------------------------
EN = [f"English line {i}".encode() for i in range(1, 31)]
KK = [f"Қазақ жолы {i}".encode() for i in range(1, 31)]


def _write(path: Path, lines: list[bytes]) -> Path:
    data = b"".join(line + b"\n" for line in lines)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def _use_blocks(monkeypatch: pytest.MonkeyPatch, block_bytes: int) -> None:
    def reader(stream: IO[bytes], facts: Facts | None = None) -> Iterator[pa.StructArray]:
        return read_lines(stream, block_bytes, facts)

    monkeypatch.setattr(bitext_module, "read_lines", reader)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 16 bytes, so that a few lines span many blocks and batches."""
    _use_blocks(monkeypatch, 16)


@pytest.mark.parametrize("size", [1, 4, 7, 30, 100])
def test_batches_pair_the_lines_in_order_with_their_numbers(
    tmp_path: Path, size: int, small_blocks: None
) -> None:
    bitext = moses_files("c", _write(tmp_path / "c.en", EN), _write(tmp_path / "c.kk.gz", KK))
    batches = list(bitext.batches(size))
    assert all(0 < len(en) == len(xx) <= size for _, en, xx in batches)
    assert [first for first, _, _ in batches] == [
        1 + sum(len(en) for _, en, _ in batches[:i]) for i in range(len(batches))
    ]
    assert [line for _, en, _ in batches for line in en.field("line").to_pylist()] == EN
    assert [line for _, _, xx in batches for line in xx.field("line").to_pylist()] == KK
    assert list(bitext.lines()) == [(i + 1, EN[i], KK[i]) for i in range(30)]


@pytest.mark.parametrize(("en_lines", "kk_lines"), [(30, 29), (29, 30), (0, 1), (30, 0)])
def test_sides_of_different_length_fail_after_the_pairs_they_share(
    tmp_path: Path, en_lines: int, kk_lines: int, small_blocks: None
) -> None:
    en = _write(tmp_path / "c.en", EN[:en_lines])
    kk = _write(tmp_path / "c.kk", KK[:kk_lines])
    short, long = (en, kk) if en_lines < kk_lines else (kk, en)
    rows = []
    with pytest.raises(CorpusError) as err:
        rows.extend(moses_files("c", en, kk).lines())
    assert len(rows) == min(en_lines, kk_lines)
    assert str(err.value).startswith(
        f"{short} ends after {min(en_lines, kk_lines)} lines but {long} goes on"
    )


def _truncated_gzip(path: Path, lines: list[bytes]) -> int:
    """Write `lines` gzip'd and cut in half; return how many lines gzip reads whole from it."""
    data = gzip.compress(b"".join(line + b"\n" for line in lines), mtime=0)
    path.write_bytes(data[: len(data) // 2])
    whole = 0
    with contextlib.suppress(EOFError, zlib.error), gzip.open(path, "rb") as f:
        for _ in f:
            whole += 1
    return whole


# A block read that fails loses the lines it had decompressed: with blocks of 16 bytes a few,
# with the default blocks (4 MiB) all of them; they are read again line by line.
@pytest.mark.parametrize("block_bytes", [16, 1 << 22])
def test_a_damaged_side_is_reported_where_line_by_line_reading_meets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bytes: int
) -> None:
    _use_blocks(monkeypatch, block_bytes)
    many = [f"Қазақ жолы {i} ".encode() * 20 for i in range(2000)]  # incompressible enough
    kk = tmp_path / "c.kk.gz"
    whole = _truncated_gzip(kk, many)
    assert 0 < whole < len(many)
    # The English side goes on: every line gzip read whole is paired, then the damage.
    en = _write(tmp_path / "long.en", [b"English"] * len(many))
    rows = []
    with pytest.raises(
        CorpusError, match=rf"c\.kk\.gz: the gzip stream ends early after line {whole} "
    ):
        rows.extend(moses_files("c", en, kk).lines())
    assert [xx for _, _, xx in rows] == many[:whole]
    # The English side ends exactly there: the damage is still what a reader meets first.
    en = _write(tmp_path / "same.en", [b"English"] * whole)
    with pytest.raises(CorpusError, match="the gzip stream ends early"):
        list(moses_files("c", en, kk).lines())
    # The English side ends before: the sides' lengths differ before any damage is reached.
    en = _write(tmp_path / "short.en", [b"English"] * (whole - 1))
    with pytest.raises(CorpusError, match=f"ends after {whole - 1} lines but {kk} goes on"):
        list(moses_files("c", en, kk).lines())


def test_a_damaged_english_side_is_reported_before_a_damaged_foreign_one(tmp_path: Path) -> None:
    many = [f"line {i} ".encode() * 20 for i in range(2000)]
    en, kk = tmp_path / "c.en.gz", tmp_path / "c.kk.gz"
    assert _truncated_gzip(en, many) == _truncated_gzip(kk, many)
    with pytest.raises(CorpusError) as err:
        list(moses_files("c", en, kk).lines())
    assert str(err.value).startswith(f"{en}: the gzip stream ends early")
