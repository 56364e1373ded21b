"""Exact duplicates among hundreds of millions of rows, in memory that does not grow with them.

A row is a duplicate when an earlier row has the same 64-bit hash. Rows arrive in order as
(hash, position); they are spread over `2^b` partition files by the top `b` bits of the hash,
so that every partition holds about `PARTITION_ROWS` rows and all rows of one hash share a
partition. Each partition is then read back in order, a chunk at a time, and a row is a
duplicate if its hash occurred earlier in its chunk or in an earlier chunk of its partition
(the distinct hashes seen so far). The duplicates' positions, ascending per partition, are
merged back into one ascending stream (`Duplicates.below`) for the pass that writes the rows.

Memory: a chunk of `PARTITION_ROWS` rows (16 bytes each, plus polars' hash table), the
distinct hashes of one partition (about `PARTITION_ROWS` when hashes are distinct), and a
64 KiB read buffer per partition: about 120 MB (measured at 2M rows a partition) for any
corpus of up to `PARTITION_ROWS * MAX_PARTITIONS` (537M) rows; beyond that partitions grow
past `PARTITION_ROWS`, and the distinct hashes of one partition with them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

PARTITION_ROWS = 1 << 21
MAX_PARTITIONS = 256  # files open at once while partitioning
_ROW = np.dtype([("hash", "<u8"), ("position", "<i8")])
_READ_POSITIONS = 1 << 13  # duplicate positions read at a time from each partition's list


class Duplicates:
    """Collect rows with `add`, find the duplicates with `find`, then take their positions in
    ascending order with `below`. Files live in `directory`; `rows` bounds the rows to come."""

    def __init__(self, directory: Path, rows: int):
        wanted = max(1, -(-rows // PARTITION_ROWS))
        self._bits = min((wanted - 1).bit_length(), MAX_PARTITIONS.bit_length() - 1)
        self._parts = [directory / f"part-{i:03d}" for i in range(1 << self._bits)]
        self._runs = [_Run(directory / f"duplicates-{i:03d}") for i in range(1 << self._bits)]
        for part in self._parts:
            part.write_bytes(b"")
        self.count = 0

    def add(self, hashes: np.ndarray, positions: np.ndarray) -> None:
        """Rows in ascending position, after those of earlier calls."""
        rows = np.empty(len(hashes), dtype=_ROW)
        rows["hash"], rows["position"] = hashes, positions
        part = (rows["hash"] >> np.uint64(64 - self._bits)).astype(np.uint16)
        if self._bits:  # group the rows by partition; stable: positions stay ascending
            rows = rows[np.argsort(part, kind="stable")]
        bounds = np.cumsum(np.bincount(part, minlength=len(self._parts)))
        for path, start, stop in zip(self._parts, [0, *bounds[:-1]], bounds, strict=True):
            if stop > start:
                with open(path, "ab") as sink:
                    rows[start:stop].tofile(sink)

    def find(self) -> int:
        """Find the duplicates of every partition; return how many rows are duplicates."""
        for part, run in zip(self._parts, self._runs, strict=True):
            self.count += _find(part, run.path)
            part.unlink()
        return self.count

    def below(self, stop: int) -> np.ndarray:
        """The positions of duplicates below `stop` not returned by an earlier call."""
        return np.concatenate([run.below(stop) for run in self._runs])


def _find(part: Path, run: Path) -> int:
    """Write the positions of the duplicates in the partition `part` to `run`; count them."""
    seen: pl.Series | None = None  # the distinct hashes of the chunks before
    count = 0
    with open(part, "rb") as source, open(run, "wb") as sink:
        while len(rows := np.fromfile(source, dtype=_ROW, count=PARTITION_ROWS)):
            hashes = pl.Series(rows["hash"])
            first = hashes.is_first_distinct()
            if seen is not None:
                first &= ~hashes.is_in(seen.implode())
            duplicate = ~first.to_numpy()
            rows["position"][duplicate].tofile(sink)
            count += int(duplicate.sum())
            new = hashes.filter(first)
            seen = new if seen is None else pl.concat([seen, new])
    return count


class _Run:
    """An ascending file of positions, read a buffer at a time."""

    def __init__(self, path: Path):
        self.path = path
        self._read = 0  # positions read from the file
        self._buffer = np.zeros(0, dtype="<i8")

    def below(self, stop: int) -> np.ndarray:
        taken = []
        while True:
            cut = int(np.searchsorted(self._buffer, stop))
            taken.append(self._buffer[:cut])
            self._buffer = self._buffer[cut:]
            if len(self._buffer):
                break
            with open(self.path, "rb") as source:
                source.seek(8 * self._read)
                self._buffer = np.fromfile(source, dtype="<i8", count=_READ_POSITIONS)
            self._read += len(self._buffer)
            if not len(self._buffer):
                break
        return np.concatenate(taken)
