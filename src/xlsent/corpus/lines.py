"""The lines of a byte stream, read in large blocks and split with numpy into Arrow arrays.

A Moses file read line by line in Python costs about a microsecond a line before any filter
runs; here a stream is read a block (`BLOCK_BYTES`) at a time, its line ends are found with
one vectorised comparison, and the lines become an Arrow `binary_view` array whose views
point into the block: no line is copied or decoded. Lines keep the conventions of a Moses
reader: `\\n` ends a line, one `\\r` before it (a Windows ending) is dropped, a lone `\\r` is
part of the line, and a last line without `\\n` is still a line.

A reader may also compute facts about each line while its block is at hand (`Facts`: the
block's bytes and where each line starts and ends), which come with the lines as the other
fields of a struct array.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np
import pyarrow as pa

BLOCK_BYTES = 1 << 24  # 16 MiB a read: ~200K lines; a batch ends where a block does
_INLINE = 12  # a view holds a line of up to 12 bytes itself (the Arrow columnar format)
_PAD = 16  # zero bytes after a block, so that reading 4-byte words past a line stays inside


@dataclass(frozen=True)
class Block:
    """The complete lines of a block: line i is `data[starts[i] : starts[i] + lengths[i]]`."""

    buffer: bytearray  # the block (then `_PAD` zero bytes, and maybe the start of a line)
    data: np.ndarray  # the buffer as uint8
    starts: np.ndarray  # int64
    lengths: np.ndarray  # int64, without the line end


# Per-line numpy arrays (numbers, or bools), one value a line.
Facts = Callable[[Block], dict[str, np.ndarray]]


def read_lines(
    stream: IO[bytes], block_bytes: int = BLOCK_BYTES, facts: Facts | None = None
) -> Iterator[pa.StructArray]:
    """Yield the lines of `stream` in order, one struct array per block read: the field `line`
    (`binary_view`) and the fields `facts` computes.

    Memory is a block and the views of its lines (16 bytes a line); a line longer than a
    block makes the block grow until it holds the line whole.
    """
    rest = b""  # the start of a line that the previous block cut off
    while True:
        size = max(block_bytes, len(rest))
        buffer = bytearray(len(rest) + size + _PAD)
        buffer[: len(rest)] = rest
        with memoryview(buffer) as view:
            end = len(rest) + _read_into(stream, view[len(rest) : len(rest) + size])
        if end == len(rest):
            if rest:  # the last line, which has no line end
                buffer[end] = ord("\n")
                yield _lines(buffer, end + 1, facts)[0]
            return
        lines, used = _lines(buffer, end, facts)
        rest = bytes(buffer[used:end])
        if len(lines):
            yield lines


def _read_into(stream: IO[bytes], view: memoryview) -> int:
    """Fill `view` from `stream` (fewer bytes only at its end); the bytes read."""
    filled = 0
    while filled < len(view):
        read = stream.readinto(view[filled:])  # type: ignore[attr-defined]
        if not read:
            break
        filled += read
    return filled


def _lines(buffer: bytearray, end: int, facts: Facts | None) -> tuple[pa.StructArray, int]:
    """The complete lines in `buffer[:end]` and the bytes they span, line ends included."""
    data = np.frombuffer(buffer, dtype=np.uint8)
    ends = np.flatnonzero(data[:end] == ord("\n"))
    if len(ends) and ends[-1] >= 2**31:  # views address their buffer with 32-bit offsets
        raise ValueError("a block of 2 GiB or more: a single line that long is not text")
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    windows = (ends > starts) & (data[np.maximum(ends - 1, 0)] == ord("\r"))
    block = Block(buffer, data, starts, ends - starts - windows)
    line = pa.Array.from_buffers(
        pa.binary_view(), len(ends), [None, pa.py_buffer(_views(block)), pa.py_buffer(buffer)]
    )
    fields = {"line": line}
    if facts is not None:
        fields.update((name, _arrow(values)) for name, values in facts(block).items())
    lines = pa.StructArray.from_arrays(list(fields.values()), list(fields))
    return lines, int(ends[-1]) + 1 if len(ends) else 0


def _arrow(values: np.ndarray) -> pa.Array:
    """A numpy array as Arrow without a copy (bools as uint8: Arrow packs bools in bits)."""
    values = np.ascontiguousarray(values.view(np.uint8) if values.dtype == bool else values)
    return pa.Array.from_buffers(
        pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)]
    )


_MASKS = np.array([0, 0xFF, 0xFFFF, 0xFF_FFFF, 0xFFFF_FFFF], dtype="<u4")  # the first k bytes


def _views(block: Block) -> np.ndarray:
    """The 16-byte views of the lines (all in buffer 0).

    Layout (little-endian int32 words): the length, then for a line of up to 12 bytes the
    line itself, zero-padded; for a longer one its first 4 bytes, the buffer index (0) and
    its offset.
    """
    data, starts, lengths = block.data, block.starts, block.lengths
    # The 4-byte word at every byte offset (unaligned reads of the block; nothing copied).
    words = np.ndarray(shape=(len(data) - 3,), dtype="<u4", buffer=data, strides=(1,))
    views = np.zeros((len(starts), 4), dtype="<u4")
    views[:, 0] = lengths
    views[:, 1] = words[starts]
    views[:, 3] = starts
    short = np.flatnonzero(lengths <= _INLINE)
    if len(short):  # the line itself, its bytes past its end zero
        for column in (1, 2, 3):
            at = starts[short] + 4 * (column - 1)
            keep = np.clip(lengths[short] - 4 * (column - 1), 0, 4)
            views[short, column] = words[at] & _MASKS[keep]
    return views
