"""Ragged arrays: many variable-length rows in one flat array, selected and joined with
vectorised index arithmetic (no Python loop over rows on the training hot path)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ragged:
    """Variable-length sequences: row i is values[offsets[i]:offsets[i+1]] (values may have
    trailing dimensions, e.g. the (x, y) word indices of links). Selection and concatenation
    are vectorised: batches are built from these on every training step."""

    values: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def row(self, i: int) -> np.ndarray:
        return self.values[self.offsets[i] : self.offsets[i + 1]]

    def to_list(self) -> list[np.ndarray]:
        return [self.row(i) for i in range(len(self))]

    def take(self, index: np.ndarray) -> Ragged:
        """The rows `index`, in that order."""
        index = np.asarray(index, dtype=np.int64)
        lengths = self.offsets[index + 1] - self.offsets[index]
        values = self.values[np.repeat(self.offsets[index], lengths) + within(lengths)]
        return Ragged(values, offsets_of(lengths))

    @classmethod
    def from_rows(cls, rows: list[np.ndarray]) -> Ragged:
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        return cls(np.concatenate(rows) if rows else np.zeros(0, np.int32), offsets_of(lengths))

    @classmethod
    def concat(cls, parts: list[Ragged]) -> Ragged:
        values = np.concatenate([p.values for p in parts])
        return cls(values, offsets_of(np.concatenate([p.lengths for p in parts])))


def offsets_of(lengths: np.ndarray) -> np.ndarray:
    """Row offsets (length n + 1) of ragged rows of `lengths`."""
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def row_of_each(lengths: np.ndarray) -> np.ndarray:
    """For ragged rows of `lengths`, the row of every element: 0 0 0 1 1 2 …"""
    return np.repeat(np.arange(len(lengths)), lengths)


def within(lengths: np.ndarray) -> np.ndarray:
    """For ragged rows of `lengths`, every element's index inside its row: 0 1 2 0 1 0 …"""
    return np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
