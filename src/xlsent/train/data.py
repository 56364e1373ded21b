"""Training data: subword ids of every language pooled into ragged arrays, and a resumable
sampler over them.

Pairs of all languages share one pool, so a batch mixes languages in proportion to their
data (its in-batch negatives come from several languages). Ids are truncated once at load
time to the run's length limit; padding happens per micro-batch, to the longest sequence in
it rather than to the limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import torch


@dataclass(frozen=True)
class Ragged:
    """Variable-length int32 sequences: row i is values[offsets[i]:offsets[i+1]]."""

    values: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def rows(self, index: np.ndarray) -> list[np.ndarray]:
        return [self.values[self.offsets[i] : self.offsets[i + 1]] for i in index]

    @classmethod
    def concat(cls, parts: list[Ragged]) -> Ragged:
        values = np.concatenate([p.values for p in parts])
        sizes = np.concatenate([np.diff(p.offsets) for p in parts])
        return cls(values, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))


@dataclass(frozen=True)
class Pairs:
    """Aligned (xx, en) subword sequences with the language of each pair."""

    xx: Ragged
    en: Ragged
    lang: np.ndarray  # index into `langs`
    langs: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.lang)


def _ragged(column, limit: int) -> Ragged:
    """A list<int32> Arrow column truncated to `limit` ids per row."""
    column = column.combine_chunks()
    sliced = pc.list_slice(column, 0, limit)
    sizes = pc.list_value_length(sliced).to_numpy(zero_copy_only=False).astype(np.int64)
    values = pc.list_flatten(sliced).to_numpy(zero_copy_only=False).astype(np.int32)
    return Ragged(values, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))


def load_pairs(
    paths: dict[str, Path], max_length: int, max_pairs_per_lang: int | None = None
) -> Pairs:
    """Read the subword files of each language; keep room for the two special tokens."""
    xx, en, lang = [], [], []
    langs = tuple(sorted(paths))
    for index, code in enumerate(langs):
        table = pq.read_table(paths[code], columns=["xx_ids", "en_ids"])
        if max_pairs_per_lang is not None:
            table = table.slice(0, max_pairs_per_lang)
        xx.append(_ragged(table.column("xx_ids"), max_length - 2))
        en.append(_ragged(table.column("en_ids"), max_length - 2))
        lang.append(np.full(table.num_rows, index, dtype=np.int16))
    return Pairs(Ragged.concat(xx), Ragged.concat(en), np.concatenate(lang), langs)


def collate(
    rows: list[np.ndarray], cls_id: int, sep_id: int, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """`<s> ids </s>` per row, right-padded to the longest row: (input_ids, attention_mask)."""
    width = max(len(r) for r in rows) + 2
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, 0] = cls_id
        ids[i, 1 : len(r) + 1] = torch.from_numpy(r.astype(np.int64))
        ids[i, len(r) + 1] = sep_id
        mask[i, : len(r) + 2] = 1
    return ids, mask


class EpochSampler:
    """Seeded shuffles of the pool, epoch after epoch; its state is two integers."""

    def __init__(self, size: int, seed: int, epoch: int = 0, position: int = 0):
        self.size, self.seed, self.epoch, self.position = size, seed, epoch, position
        self._order = self._permutation()

    def _permutation(self) -> np.ndarray:
        return np.random.default_rng([self.seed, self.epoch]).permutation(self.size)

    def take(self, n: int) -> np.ndarray:
        """The next `n` indices; a batch never spans two epochs (the tail is dropped)."""
        if self.position + n > self.size:
            self.epoch, self.position = self.epoch + 1, 0
            self._order = self._permutation()
        out = self._order[self.position : self.position + n]
        self.position += n
        return out

    def state(self) -> dict:
        return {"epoch": self.epoch, "position": self.position}
