"""eflomal's estimation pairs: what a shard of fewer than `align.eflomal.min_estimation_pairs`
pairs borrows to estimate its model on. The shard aligns and writes its own pairs only.

eflomal has no pretrained parameters (`xlsent.align.statistical`): a shard of 2,000 pairs
estimated alone learns little. A small shard borrows, until its own pairs and the borrowed
ones reach `min_estimation_pairs` (as far as there are):

1. the language's other training shards, its neighbours first (`other_shards`);
2. then the language's cleaned pairs that its sample kept out of every split
   (`BeyondCap`): results/corpus/{lang}/clean.parquet less the train, dev and mining
   splits, i.e. the pairs beyond `corpus.max_pairs` (and any a per-source cap left out).
   Never a dev or a mining pair: checkpoints are chosen and models scored on those.

The pairs beyond the cap are taken in a seeded order: a permutation of the clean file's rows
drawn from (`align.eflomal.seed`, language), its first rows that are in no split, so that a
shard wanting more pairs gets the same ones and then some. Only those rows are read (the
row groups that hold them) and word-tokenized, as the `words` rule tokenizes a split
(`xlsent.tokenize.word_tokenizer`). A pool with no pair beyond its splits (the demo's: every
clean pair is train or dev) reads nothing more and borrows exactly its other shards.

Memory: the permutation (eight bytes per clean pair, as `xlsent.corpus.sample` draws), the
splits' ids and the borrowed pairs.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from xlsent.align.links import SentencePair
from xlsent.align.shards import read_pairs, shard_count
from xlsent.failures.unreadable import reading

log = logging.getLogger(__name__)


def other_shards(
    corpus: Path, words: Path, index: int, shard_size: int, total: int, wanted: int
) -> list[SentencePair]:
    """Up to `wanted` pairs of the language outside shard `index` (its neighbours first)."""
    extra: list[SentencePair] = []
    n_shards = shard_count(total, shard_size)
    others = sorted((i for i in range(n_shards) if i != index), key=lambda i: abs(i - index))
    for other in others:
        if len(extra) >= wanted:
            break
        extra += read_pairs(corpus, words, other, shard_size)[1][: wanted - len(extra)]
    return extra


@dataclass(frozen=True)
class BeyondCap:
    """Where a language's pairs beyond its sample are: its cleaned pairs (`clean`) and the
    sample's splits (`splits`: train, dev and mining), whose pairs are never among them."""

    lang: str
    clean: Path
    splits: tuple[Path, ...]

    def pairs(self, wanted: int, seed: int) -> list[SentencePair]:
        """Up to `wanted` cleaned pairs in no split, in the order seeded by (`seed`, the
        language), word-tokenized as the `words` rule tokenizes a split."""
        rows = self.rows(wanted, seed)
        if rows.num_rows == 0:
            return []
        from xlsent.tokenize import word_tokenizer  # spaCy: only when pairs are borrowed

        en, xx = rows.column("en").to_pylist(), rows.column("xx").to_pylist()
        en_words = word_tokenizer("en")(en)
        xx_words = word_tokenizer(self.lang)(xx)
        return [SentencePair(*pair) for pair in zip(en, xx, en_words, xx_words, strict=True)]

    def rows(self, wanted: int, seed: int) -> pa.Table:
        """`id`, `en`, `xx` of up to `wanted` cleaned pairs in no split, in the seeded order."""
        if wanted <= 0:
            return _EMPTY
        with reading(self.clean):
            available = pq.ParquetFile(self.clean, pre_buffer=False).metadata.num_rows
        kept = _ids(self.splits)
        if available <= len(kept):  # every clean pair is in a split
            return _EMPTY
        rng = np.random.default_rng([seed, zlib.crc32(self.lang.encode()), _STREAM])
        # Of the first wanted + |kept| rows of the order, at most |kept| are in a split.
        drawn = rng.permutation(available)[: wanted + len(kept)]
        rows = _rows_at(self.clean, drawn)
        free = ~np.isin(rows.column("id").to_numpy(), kept)
        return rows.filter(pa.array(free)).slice(0, wanted)


_STREAM = zlib.crc32(b"beyond_cap")  # the draw's own stream beside the sample's
_SCHEMA = pa.schema([("id", pa.int64()), ("en", pa.string()), ("xx", pa.string())])
_EMPTY = _SCHEMA.empty_table()


def _ids(paths: Sequence[Path]) -> np.ndarray:
    """The ids of the pairs of the Parquet files `paths` (the sample's splits)."""
    parts = []
    for path in paths:
        with reading(path):
            parts.append(pq.read_table(path, columns=["id"]).column("id").to_numpy())
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def _rows_at(path: Path, positions: np.ndarray) -> pa.Table:
    """`id`, `en`, `xx` of the rows of a Parquet file at `positions`, in that order, reading
    only the row groups that hold them."""
    order = np.argsort(positions, kind="stable")
    wanted = positions[order]
    parts, start = [], 0
    with reading(path):
        source = pq.ParquetFile(path, pre_buffer=False)
        for group in range(source.num_row_groups):
            stop = start + source.metadata.row_group(group).num_rows
            lo, hi = np.searchsorted(wanted, [start, stop])
            if hi > lo:
                table = source.read_row_group(group, columns=_SCHEMA.names)
                parts.append(table.take(pa.array(wanted[lo:hi] - start)))
            start = stop
    if not parts:
        return _EMPTY
    rows = pa.concat_tables(parts).cast(_SCHEMA)
    return rows.take(pa.array(np.argsort(order, kind="stable")))


def estimation_pairs(
    corpus: Path,
    words: Path,
    index: int,
    shard_size: int,
    total: int,
    wanted: int,
    beyond: BeyondCap | None,
    seed: int,
) -> tuple[list[SentencePair], int]:
    """Up to `wanted` pairs for shard `index` to estimate on: its language's other shards
    first, then (with `beyond`) pairs beyond the cap; and how many of them are the latter."""
    extra = other_shards(corpus, words, index, shard_size, total, wanted) if wanted > 0 else []
    more: list[SentencePair] = []
    if beyond is not None and len(extra) < wanted:
        more = beyond.pairs(wanted - len(extra), seed)
    return extra + more, len(more)
