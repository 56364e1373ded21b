"""Training data: subword ids of every language pooled into ragged arrays, and a resumable
sampler over them.

Pairs of all languages share one pool, so a batch mixes languages in proportion to their
data (its in-batch negatives come from several languages). Ids are truncated once at load
time to the run's length limit; padding happens per micro-batch, to the longest sequence in
it rather than to the limit (`xlsent.train.collate`). The trainer's pool is read here once, a
batch of rows at a time, into files that its processes memory-map and share
(`xlsent.train.mapped_pool`); the dev pairs are read into each process's memory.

The word-level objectives (WACSE) read the word spans (`xlsent.train.word_spans`) instead:
the same ids plus, per pair, each word's subword span and the alignment links. Truncation drops
the words it cuts (and their links) once, at load time; a micro-batch then only slices arrays.

Masked language modelling reads the same files as monolingual text (`Monolingual`): each
language's side on its own and English once, drawn language by language with XLM-R's
exponentially smoothed sampling (`LanguageSampler`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from xlsent.failures.unreadable import reading
from xlsent.ragged import Ragged, offsets_of
from xlsent.train.columns import PAIR_INPUTS, WORD_FIELDS


@dataclass(frozen=True)
class Pairs:
    """Aligned (xx, en) subword sequences with the language of each pair; for TR's hard
    negatives (`with_negatives`) each pair's mined English negatives, as rows of the pool."""

    xx: Ragged
    en: Ragged
    lang: np.ndarray  # index into `langs`
    langs: tuple[str, ...]
    negatives: np.ndarray | None = None  # N×mined pool rows, -1 for an empty slot

    def __len__(self) -> int:
        return len(self.lang)


@dataclass(frozen=True)
class WordAligned:
    """Per pair of a `Pairs` pool (same order): each word's subword span on both sides and
    the (x word, y word) alignment links. A word truncated away or without a subword of its
    own has an empty span (start == end) and no links."""

    xx_starts: Ragged
    xx_ends: Ragged
    en_starts: Ragged
    en_ends: Ragged
    links: Ragged  # values: L×2 int32 (xx word, en word)


# A pool as named arrays (a part of it, some rows of one language, or all of them): the `xx`,
# `en` and `lang` of a `Pairs`, and for WACSE the fields of a `WordAligned`. The in-memory
# loaders join the parts (`joined`); `xlsent.train.mapped_pool` appends them to files instead.
Arrays = dict[str, Ragged | np.ndarray]


def pairs_of(arrays: Arrays, langs: tuple[str, ...]) -> Pairs:
    """The `Pairs` of a pool's arrays; `langs`: its languages, in the order of `lang`."""
    return Pairs(arrays["xx"], arrays["en"], arrays["lang"], langs, arrays.get("negatives"))


def word_aligned_of(arrays: Arrays) -> WordAligned:
    """The `WordAligned` of a WACSE pool's arrays."""
    return WordAligned(**{name: arrays[name] for name in WORD_FIELDS})


def joined(parts: Iterable[Arrays]) -> Arrays:
    """The parts as one pool, in memory."""
    parts = list(parts)
    out: Arrays = {}
    for name, first in parts[0].items():
        arrays = [part[name] for part in parts]
        out[name] = Ragged.concat(arrays) if isinstance(first, Ragged) else np.concatenate(arrays)
    return out


def _ragged(column, limit: int | None = None) -> Ragged:
    """A list<int> Arrow column (truncated to `limit` values per row) as int32 arrays."""
    column = column.combine_chunks()
    sliced = column if limit is None else pc.list_slice(column, 0, limit)
    sizes = pc.list_value_length(sliced).to_numpy(zero_copy_only=False).astype(np.int64)
    values = pc.list_flatten(sliced).to_numpy(zero_copy_only=False).astype(np.int32)
    return Ragged(values, offsets_of(sizes))


# Rows read at a time: besides the pool, its writer (`xlsent.train.mapped_pool`) holds a few
# copies of one such batch, whatever the size of a language (`xlsent.train.memory`).
BATCH_ROWS = 65_536


def _tables(path: Path, columns: list[str] | None) -> Iterator[pa.Table]:
    """The rows of the Parquet file `path` (its `columns`, None: all), `BATCH_ROWS` at a
    time; one empty table for a file without rows."""
    # Without pre-buffering: with it, the reader keeps every row group it read until closed.
    with reading(path), pq.ParquetFile(path, pre_buffer=False) as file:
        read = 0
        for batch in file.iter_batches(batch_size=BATCH_ROWS, columns=columns):
            read += 1
            yield pa.Table.from_batches([batch])
        if not read:
            empty = file.schema_arrow.empty_table()
            yield empty if columns is None else empty.select(columns)


def _pair_arrays(table: pa.Table, index: int, limit: int) -> Arrays:
    """Pairs of one language, truncated to `limit` subwords a side; `index`: the language's
    place in the pool's languages."""
    return {
        "xx": _ragged(table.column("xx_ids"), limit),
        "en": _ragged(table.column("en_ids"), limit),
        "lang": np.full(table.num_rows, index, dtype=np.int16),
    }


def subset_rows(rows: int, code: str, max_pairs: int | None) -> np.ndarray:
    """The rows of language `code`'s file of `rows` pairs that a cap of `max_pairs` keeps: a
    seeded random subset in file order, the same for every run and every stage that caps
    (all of them without a cap, or if it has no more)."""
    if max_pairs is None or rows <= max_pairs:
        return np.arange(rows)
    rng = np.random.default_rng([0, zlib.crc32(code.encode())])
    return np.sort(rng.choice(rows, size=max_pairs, replace=False))


def _subset(
    path: Path, code: str, max_pairs: int, columns: list[str] | None = PAIR_INPUTS
) -> pa.Table:
    """The file's pairs (its `columns`, None: all) that `subset_rows` keeps."""
    with reading(path):
        table = pq.read_table(path, columns=columns)
    if table.num_rows <= max_pairs:
        return table
    return table.take(subset_rows(table.num_rows, code, max_pairs))


def pair_parts(
    paths: dict[str, Path], max_length: int, max_pairs_per_lang: int | None = None
) -> Iterator[tuple[str, Arrays, dict[str, int]]]:
    """The pairs of `load_pairs` a batch of rows at a time, in the pool's order (its
    languages sorted): (language, arrays, statistics: none)."""
    for index, code in enumerate(sorted(paths)):
        if max_pairs_per_lang is None:
            tables = _tables(paths[code], PAIR_INPUTS)
        else:
            tables = iter([_subset(paths[code], code, max_pairs_per_lang)])
        for table in tables:
            yield code, _pair_arrays(table, index, max_length - 2), {}


def load_pairs(
    paths: dict[str, Path], max_length: int, max_pairs_per_lang: int | None = None
) -> Pairs:
    """Read the subword files of each language; keep room for the two special tokens.

    `max_pairs_per_lang` keeps a seeded random subset of each language's rows (in file
    order), the same for every run: the dev files keep the order of their source corpora, so
    their first rows would come mostly from the first corpus.
    """
    parts = pair_parts(paths, max_length, max_pairs_per_lang)
    return pairs_of(joined(part for _, part, _ in parts), tuple(sorted(paths)))


def word_aligned_parts(
    paths: dict[str, Path], max_length: int, max_pairs_per_lang: int | None = None
) -> Iterator[tuple[str, Arrays, dict[str, int]]]:
    """The pairs, words and links of `load_word_aligned` a batch of rows at a time, in the
    pool's order: (language, arrays, the links the batch kept and dropped by truncation);
    `max_pairs_per_lang` as `pair_parts`."""
    limit = max_length - 2
    for index, code in enumerate(sorted(paths)):
        if max_pairs_per_lang is None:
            tables = _tables(paths[code], None)
        else:
            tables = iter([_subset(paths[code], code, max_pairs_per_lang, None)])
        for table in tables:
            part = _pair_arrays(table, index, limit)
            for side in ("xx", "en"):
                starts = _ragged(table.column(f"{side}_starts"))
                ends = _ragged(table.column(f"{side}_ends"))
                cut = ends.values > limit
                starts.values[cut] = ends.values[cut] = 0
                part[f"{side}_starts"], part[f"{side}_ends"] = starts, ends
            xx, en = (part["xx_starts"], part["xx_ends"]), (part["en_starts"], part["en_ends"])
            part["links"], dropped = _links(table.column("links"), xx, en)
            yield code, part, {"links": len(part["links"].values), "links_truncated": dropped}


def with_negatives(
    parts: Iterable[tuple[str, Arrays, dict[str, int]]], paths: dict[str, Path]
) -> Iterator[tuple[str, Arrays, dict[str, int]]]:
    """`parts` (a pool's batches of rows, in the pool's order: `pair_parts`,
    `word_aligned_parts`) with each pair's mined English negatives (`paths`: per language,
    the hard-negative stage's file, a row per training pair) as `negatives`, N×mined rows of
    the pool: a language's rows start after those of the languages before it."""
    start, lang, mined, taken = 0, None, np.zeros((0, 0), np.int32), 0

    def check(rows: int) -> None:
        if rows != len(mined):
            raise ValueError(
                f"{paths[lang]} holds the negatives of {len(mined)} pairs, but the training "
                f"pool has {rows} or more of {lang}: the hard-negative stage read other pairs"
            )

    for code, arrays, counts in parts:
        if code != lang:
            if lang is not None:
                check(taken)
                start += taken
            lang, mined, taken = code, read_negatives(paths[code]), 0
        n = len(arrays["lang"])
        if taken + n > len(mined):
            check(taken + n)
        arrays["negatives"] = np.where(
            mined[taken : taken + n] >= 0, mined[taken : taken + n] + start, -1
        ).astype(np.int32)
        taken += n
        yield code, arrays, counts
    if lang is not None:
        check(taken)


def read_negatives(path: Path) -> np.ndarray:
    """A language's hard-negative file (`xlsent.hard_negatives.mine`, a row per pair of its
    pool) as an N×mined int32 array of rows of that pool (-1: none)."""
    with reading(path):
        column = pq.read_table(path, columns=["negatives"]).column("negatives")
    mined = column.type.list_size
    values = column.combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return values.reshape(-1, mined).astype(np.int32, copy=False)


def add_counts(stats: dict[str, dict[str, int]], code: str, counts: dict[str, int]) -> None:
    """Add a batch's `counts` to its language's in `stats`."""
    total = stats.setdefault(code, {})
    for name, count in counts.items():
        total[name] = total.get(name, 0) + count


def load_word_aligned(
    paths: dict[str, Path], max_length: int
) -> tuple[Pairs, WordAligned, dict[str, dict[str, int]]]:
    """Read the word-span files of each language (`xlsent.train.word_spans`): the pairs,
    their words and links, and per language the links kept and dropped by truncation."""
    parts, stats = [], {}
    for code, part, counts in word_aligned_parts(paths, max_length):
        parts.append(part)
        add_counts(stats, code, counts)
    arrays = joined(parts)
    return pairs_of(arrays, tuple(sorted(paths))), word_aligned_of(arrays), stats


def _links(column, xx: tuple[Ragged, Ragged], en: tuple[Ragged, Ragged]) -> tuple[Ragged, int]:
    """The links of every pair whose two words kept a span, and how many were dropped."""
    column = column.combine_chunks()
    counts = pc.list_value_length(column).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(column)
    x = flat.field("xx").to_numpy(zero_copy_only=False).astype(np.int64)
    y = flat.field("en").to_numpy(zero_copy_only=False).astype(np.int64)
    pair = np.repeat(np.arange(len(counts)), counts)
    gx, gy = xx[0].offsets[pair] + x, en[0].offsets[pair] + y  # word indices in the pools
    keep = (xx[1].values[gx] > xx[0].values[gx]) & (en[1].values[gy] > en[0].values[gy])
    sizes = np.bincount(pair[keep], minlength=len(counts))
    values = np.stack([x[keep], y[keep]], axis=1).astype(np.int32)
    return Ragged(values, offsets_of(sizes)), int((~keep).sum())


class EpochSampler:
    """Seeded shuffles of the pool, epoch after epoch; its state is two integers.

    With `lengths` (each example's, `pair_lengths`), `batch` (the indices a `take` draws: a
    global micro-batch) and `window` (`train.length_window`), micro-batches of similar
    length: the epoch's shuffle, less its tail (what `take` never reaches), is cut into
    windows of `window` micro-batches; each window is sorted by length (ties in the
    shuffle's order) and cut into micro-batches, which are taken in a seeded random order.
    An epoch draws the same examples as without, in micro-batches that need less padding.
    The order is a function of the seed, the epoch and the pool, so that the two integers
    still say where a resumed run stands."""

    def __init__(
        self,
        size: int,
        seed: int,
        epoch: int = 0,
        position: int = 0,
        *,
        lengths: np.ndarray | None = None,
        batch: int = 0,
        window: int = 0,
    ):
        self.size, self.seed, self.epoch, self.position = size, seed, epoch, position
        self.lengths, self.batch, self.window = lengths, batch, window
        if window and (lengths is None or batch < 1):
            raise ValueError("micro-batches by length need the examples' lengths and a batch")
        self._order = self._permutation()

    def _permutation(self) -> np.ndarray:
        order = np.random.default_rng([self.seed, self.epoch]).permutation(self.size)
        return order if not self.window else self._by_length(order)

    def _by_length(self, order: np.ndarray) -> np.ndarray:
        """`order`'s micro-batches by length (the class docstring)."""
        n, rng = self.batch, np.random.default_rng([self.seed, self.epoch, 1])
        used = order[: len(order) // n * n]
        windows = [order[:0].reshape(0, n)]
        for start in range(0, len(used), self.window * n):
            part = used[start : start + self.window * n]
            rows = part[np.argsort(self.lengths[part], kind="stable")].reshape(-1, n)
            windows.append(rows[rng.permutation(len(rows))])
        return np.concatenate(windows).ravel()

    def take(self, n: int) -> np.ndarray:
        """The next `n` indices; a batch never spans two epochs (the tail is dropped)."""
        if self.window and n != self.batch:
            raise ValueError(f"this sampler's micro-batches have {self.batch} rows, not {n}")
        if self.position + n > self.size:
            self.epoch, self.position = self.epoch + 1, 0
            self._order = self._permutation()
        out = self._order[self.position : self.position + n]
        self.position += n
        return out

    def state(self) -> dict:
        return {"epoch": self.epoch, "position": self.position}


def pair_lengths(pairs: Pairs) -> np.ndarray:
    """Each pair's longer side in subwords: what its micro-batch is padded to (its 2N
    sentences share one width)."""
    return np.maximum(pairs.xx.lengths, pairs.en.lengths).astype(np.int16)


@dataclass(frozen=True)
class Monolingual:
    """Sentences of every language as monolingual text: each language's side of its pairs,
    and English once (the English sides of all languages, duplicates removed).

    `meaning` gives each sentence the id of its English side (an English sentence its own):
    sentences that share it are translations of each other, which a batch keeps apart.
    """

    sentences: Ragged
    lang: np.ndarray  # index into `langs`
    langs: tuple[str, ...]
    meaning: np.ndarray

    def __len__(self) -> int:
        return len(self.lang)

    def counts(self) -> np.ndarray:
        """Sentences per language, in the order of `langs`."""
        return np.bincount(self.lang, minlength=len(self.langs))


def row_hashes(rows: Ragged) -> np.ndarray:
    """A 64-bit hash of each row's values (polars' hash of a list column)."""
    values = pa.array(rows.values)
    column = pa.LargeListArray.from_arrays(pa.array(rows.offsets, pa.int64()), values)
    return pl.from_arrow(column).hash(seed=0).to_numpy()


def monolingual(pairs: Pairs) -> Monolingual:
    """The pairs as monolingual text (`Monolingual`): English is the last language."""
    _, first, meaning = np.unique(row_hashes(pairs.en), return_index=True, return_inverse=True)
    english = pairs.en.take(first)
    langs = (*pairs.langs, "en")
    return Monolingual(
        Ragged.concat([pairs.xx, english]),
        np.concatenate([pairs.lang, np.full(len(first), len(pairs.langs), np.int16)]),
        langs,
        np.concatenate([meaning, np.arange(len(first))]).astype(np.int64),
    )


def language_probabilities(counts: np.ndarray, alpha: float, english: int | None) -> np.ndarray:
    """XLM-R's language sampling (Conneau et al. 2020, arXiv:1911.02116, §3.1, after Lample
    and Conneau 2019, eq. 1): q_i = p_i^α / Σ_j p_j^α with p_i = n_i / Σ_j n_j, which raises
    the share of small languages for α < 1 (α = 1: in proportion to the data; 0: uniform).

    English (index `english`) is counted as no larger than the largest other language: its
    pool holds the English side of every language's pairs, and it is to be sampled no more
    than the others, as a pretraining corpus without parallel data would hold it.
    """
    n = counts.astype(np.float64)
    if english is not None and len(n) > 1:
        others = np.delete(n, english)
        n[english] = min(n[english], others.max())
    p = n / n.sum()
    q = np.where(p > 0, p, 0.0) ** alpha * (p > 0)
    return q / q.sum()


class LanguageSampler:
    """MLM's draws from a `Monolingual` pool: a micro-batch's sentences are split over the
    languages by a multinomial draw over `probabilities`, each language taking its next
    sentences from its own seeded shuffles, epoch after epoch. Sentences that are
    translations of one already drawn into the micro-batch are dropped (a batch never holds
    a sentence with its translation). Deterministic from the seed and the state, which is a
    few integers per language."""

    def __init__(
        self,
        pool: Monolingual,
        probabilities: np.ndarray,
        seed: int,
        draws: int = 0,
        epochs: list[int] | None = None,
        positions: list[int] | None = None,
        dropped: int = 0,
    ):
        self.pool, self.probabilities, self.seed, self.draws = pool, probabilities, seed, draws
        self.members = [np.flatnonzero(pool.lang == i) for i in range(len(pool.langs))]
        self.epochs = list(epochs or [0] * len(self.members))
        self.positions = list(positions or [0] * len(self.members))
        self.dropped = dropped  # sentences left out for their translation, so far
        self._orders: dict[int, tuple[int, np.ndarray]] = {}

    def _order(self, lang: int) -> np.ndarray:
        """The language's shuffle of its current epoch (kept until the epoch ends)."""
        epoch = self.epochs[lang]
        if self._orders.get(lang, (None,))[0] != epoch:
            rng = np.random.default_rng([self.seed, lang, epoch])
            self._orders[lang] = (
                epoch,
                self.members[lang][rng.permutation(len(self.members[lang]))],
            )
        return self._orders[lang][1]

    def _take(self, lang: int, n: int) -> np.ndarray:
        out = []
        while n > 0:
            order = self._order(lang)
            part = order[self.positions[lang] : self.positions[lang] + n]
            out.append(part)
            n -= len(part)
            self.positions[lang] += len(part)
            if self.positions[lang] == len(order):
                self.epochs[lang], self.positions[lang] = self.epochs[lang] + 1, 0
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def take(self, n: int) -> np.ndarray:
        """About `n` sentence indices (fewer by the translations dropped), in language order."""
        rng = np.random.default_rng([self.seed, self.draws])
        self.draws += 1
        counts = rng.multinomial(n, self.probabilities)
        index = np.concatenate([self._take(lang, int(k)) for lang, k in enumerate(counts)])
        _, first = np.unique(self.pool.meaning[index], return_index=True)
        self.dropped += len(index) - len(first)
        return index[np.sort(first)]

    def state(self) -> dict:
        return {
            "draws": self.draws,
            "epochs": list(self.epochs),
            "positions": list(self.positions),
            "dropped": self.dropped,
        }
