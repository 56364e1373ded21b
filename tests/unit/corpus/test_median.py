"""The streaming median equals numpy's median of all values, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from xlsent.corpus.median import StreamingMedian


def _streamed(values: np.ndarray, batches: int = 7) -> np.float32 | None:
    median = StreamingMedian()
    for batch in np.array_split(values, batches):
        median.add(batch)
    return median.median(lambda: np.array_split(values, 3))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 1000, 1001])
@pytest.mark.parametrize("kind", ["spread", "ties", "negative", "one_value"])
def test_the_median_of_a_stream_is_numpys(n: int, kind: str) -> None:
    values = np.random.default_rng(n).normal(size=n).astype(np.float32)
    if kind == "ties":  # many equal values: the middle ones share a bin and a key
        values = np.round(values, 1).astype(np.float32)
    elif kind == "negative":
        values = -np.abs(values)
    elif kind == "one_value":
        values = np.full(n, -0.25, dtype=np.float32)
    got, expected = _streamed(values), np.median(values)
    assert got.dtype == np.float32
    assert got == expected


def test_two_middle_values_are_averaged_in_float32() -> None:
    # log ratios of l10n-like pairs; the two middle ones are 0.25 and 0.3125: 0.28125.
    values = np.array([0.5, 0.25, -1.0, 0.3125, 2.0, 0.0], dtype=np.float32)
    assert _streamed(values, batches=2) == np.float32(0.28125)


def test_no_value_has_no_median() -> None:
    median = StreamingMedian()
    median.add(np.zeros(0, dtype=np.float32))
    assert median.median(lambda: []) is None
