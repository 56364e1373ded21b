"""The exact median of a stream of float32 values in constant memory.

`np.median` of the whole column needs the column in memory (4 bytes a value, and a copy to
partition). Here the values are counted into 2^16 bins by the high 16 bits of an
order-preserving integer key while they stream past; the bins that hold the middle rank(s)
are then counted by the low 16 bits in one more pass, which gives the middle values exactly.
Memory: two arrays of 2^16 counts, whatever the number of values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

_BINS = 1 << 16


def _keys(values: np.ndarray) -> np.ndarray:
    """uint32 keys in the order of the float32 values (IEEE 754: flip negatives, set the sign
    bit of positives), so that counting keys counts values in order."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    negative = (bits >> 31).astype(bool)
    return np.where(negative, ~bits, bits | np.uint32(0x8000_0000))


def _value(key: int) -> np.float32:
    bits = np.uint32(key & 0x7FFF_FFFF) if key & 0x8000_0000 else np.uint32(~key & 0xFFFF_FFFF)
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


class StreamingMedian:
    """`add` the values batch by batch, then `median(passes)` with a callable that streams
    them again; the result equals `np.median` of all values (NaN-free float32)."""

    def __init__(self) -> None:
        self.count = 0
        self._high = np.zeros(_BINS, dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        self._high += np.bincount(_keys(values) >> 16, minlength=_BINS)
        self.count += len(values)

    def median(self, again: Callable[[], Iterable[np.ndarray]]) -> np.float32 | None:
        """The median, or None for no value; `again()` yields the same values once more."""
        if self.count == 0:
            return None
        ranks = sorted({(self.count - 1) // 2, self.count // 2})  # one or two middle values
        below = np.concatenate([[0], np.cumsum(self._high)])
        bins = [int(np.searchsorted(below, rank, side="right")) - 1 for rank in ranks]
        low = {b: np.zeros(_BINS, dtype=np.int64) for b in bins}
        for values in again():
            keys = _keys(values)
            for b, counts in low.items():
                counts += np.bincount(keys[(keys >> 16) == b] & 0xFFFF, minlength=_BINS)
        middle = []
        for rank, b in zip(ranks, bins, strict=True):
            within = np.cumsum(low[b])  # values of bin b up to each low key
            k = int(np.searchsorted(within, rank - below[b], side="right"))
            middle.append(_value((b << 16) | k))
        return np.median(np.array(middle, dtype=np.float32))  # the mean of two, as np.median
