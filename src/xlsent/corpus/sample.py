"""Seeded uniform sampling of the cleaned corpus and the train/dev split.

The dev set is min(`dev_fraction` · N, `dev_pairs`) pairs of the N clean pairs (WACSE
Table 1: 10% where a language has little data, 10K otherwise) and the training set up to
`max_pairs` of the rest, both drawn uniformly without replacement.

With `mining_pairs` > 0, min(`mining_pairs`, `dev_fraction` · N) pairs are first held out
for the offline mining set (`xlsent.evaluate.mining_set`), on a random stream of their own:
no run trains, selects checkpoints or counts anything on them. With 0 (the default) the
draw is exactly the one without this split, so train and dev stay byte for byte the same.

Memory holds one label byte per clean pair (and, while drawing, numpy's permutation of the
indices: eight bytes per pair); the text is streamed batch by batch.

A language with fewer than `min_train_pairs` training or `min_dev_pairs` dev pairs stops
here with an error naming it (`min_pairs_action: error`), before anything is trained on it;
with `warn` it goes on and its statistics say so (`below_min`), which the tables show.
"""

from __future__ import annotations

import contextlib
import logging
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from xlsent.corpus.bitext import CorpusError
from xlsent.corpus.clean_base import CORPUS_SCHEMA, SENTENCES
from xlsent.defaults import schema_defaults
from xlsent.failures.kill_points import kill_point
from xlsent.failures.unreadable import reading
from xlsent.io import parquet_writer

log = logging.getLogger(__name__)

_TRAIN, _DEV, _MINING = 1, 2, 3


@dataclass(frozen=True)
@schema_defaults("corpus")
class SampleConfig:
    """The `corpus` block's sampling settings (`xlsent sample --settings`). The config schema
    holds their defaults (`schema_defaults` gives them to the fields) and validates them;
    `batch_size` is no setting."""

    max_pairs: int
    dev_pairs: int
    dev_fraction: float
    seed: int
    min_train_pairs: int
    min_dev_pairs: int
    min_pairs_action: str  # or "warn"
    per_source_cap: int | None
    mining_pairs: int
    batch_size: int = 100_000


def below_minimum(n_train: int, n_dev: int, cfg: SampleConfig) -> dict[str, list[int]]:
    """The splits a language has too few pairs for, as {split: [pairs, minimum]}. A minimum
    above what is asked for (`max_pairs`, `dev_pairs`) is what is asked for."""
    sizes = {
        "train": (n_train, min(cfg.min_train_pairs, cfg.max_pairs)),
        "dev": (n_dev, min(cfg.min_dev_pairs, cfg.dev_pairs)),
    }
    return {split: [n, minimum] for split, (n, minimum) in sizes.items() if n < minimum}


def split_sizes(available: int, cfg: SampleConfig) -> tuple[int, int]:
    """(train, dev) sizes for a corpus of `available` clean pairs."""
    dev = min(round(available * cfg.dev_fraction), cfg.dev_pairs)
    return min(available - dev, cfg.max_pairs), dev


def labels(
    available: int, lang: str, cfg: SampleConfig, eligible: np.ndarray | None = None
) -> np.ndarray:
    """One label per clean pair: 0 unused, 1 train, 2 dev. Seeded by (seed, language).

    `eligible` (a mask over the pairs, `per_source_caps`) limits the draw to those pairs."""
    pool = np.arange(available) if eligible is None else np.flatnonzero(eligible)
    n_train, n_dev = split_sizes(len(pool), cfg)
    # Each language draws from its own stream, so adding a language changes no other sample.
    rng = np.random.default_rng([cfg.seed, zlib.crc32(lang.encode())])
    chosen = pool[rng.choice(len(pool), size=n_train + n_dev, replace=False)]
    out = np.zeros(available, dtype=np.int8)
    out[chosen[:n_dev]] = _DEV
    out[chosen[n_dev:]] = _TRAIN
    return out


def mining_split(
    available: int,
    lang: str,
    cfg: SampleConfig,
    eligible: np.ndarray | None = None,
) -> np.ndarray | None:
    """The mask of the pairs held out for the mining set, or None when `cfg.mining_pairs` is 0.

    min(`mining_pairs`, `dev_fraction` of the pool) of the eligible pairs (a small language
    keeps its training pairs), drawn before the train/dev split on a stream seeded by (seed,
    language, "mining"): the train/dev draw over the rest is the same function of its pool.
    """
    if cfg.mining_pairs == 0:
        return None
    pool = np.arange(available) if eligible is None else np.flatnonzero(eligible)
    n = min(cfg.mining_pairs, round(len(pool) * cfg.dev_fraction))
    rng = np.random.default_rng([cfg.seed, zlib.crc32(lang.encode()), zlib.crc32(b"mining")])
    mask = np.zeros(available, dtype=bool)
    mask[pool[rng.choice(len(pool), size=n, replace=False)]] = True
    return mask


def per_source_caps(
    sources: np.ndarray, names: list[str], lang: str, cfg: SampleConfig
) -> np.ndarray:
    """DAP's corpus (its `gen_sent_pair.py`): at most `per_source_cap` pairs of each source
    corpus, drawn at random, before the train/dev draw over all sources together. Without
    the cap, the largest source dominates the sample (CCMatrix is about 80% of fr, de, ru and
    zh). `sources`: each pair's index into `names`; returns the mask of eligible pairs.
    Seeded by (seed, language, source), so a source's draw does not depend on the others."""
    eligible = np.ones(len(sources), dtype=bool)
    for code, name in enumerate(names):
        rows = np.flatnonzero(sources == code)
        if cfg.per_source_cap is None or len(rows) <= cfg.per_source_cap:
            continue
        rng = np.random.default_rng(
            [cfg.seed, zlib.crc32(lang.encode()), zlib.crc32(name.encode())]
        )
        dropped = rng.choice(len(rows), size=len(rows) - cfg.per_source_cap, replace=False)
        eligible[rows[dropped]] = False
    return eligible


def _source_codes(clean_path: str | Path) -> tuple[np.ndarray, list[str]]:
    """Each pair's source as an index into the source names (dictionary-encoded on read: a
    few bytes per pair)."""
    column = pq.read_table(clean_path, columns=["source"], read_dictionary=["source"]).column(
        "source"
    )
    column = column.combine_chunks()
    if not isinstance(column.type, pa.DictionaryType):
        column = pc.dictionary_encode(column)
    return column.indices.to_numpy(zero_copy_only=False), column.dictionary.to_pylist()


def sample(
    clean_path: str | Path,
    lang: str,
    train_path: str | Path,
    dev_path: str | Path,
    cfg: SampleConfig = SampleConfig(),
    mining_path: str | Path | None = None,
) -> dict:
    """Write the train and dev splits of one language, and its held-out mining split to
    `mining_path` when given (empty with `cfg.mining_pairs` 0); return their sizes."""
    # pre_buffer (on by default) reads ahead across row groups: memory would grow with the file.
    with reading(clean_path):
        source = pq.ParquetFile(clean_path, pre_buffer=False)
    available = source.metadata.num_rows
    codes, names = _source_codes(clean_path)
    capped = per_source_caps(codes, names, lang, cfg) if cfg.per_source_cap else None
    mining = mining_split(available, lang, cfg, capped)
    eligible = capped
    if mining is not None:  # train and dev are drawn from what the mining split leaves
        eligible = ~mining if capped is None else capped & ~mining
    pool = available if eligible is None else int(eligible.sum())
    below = below_minimum(*split_sizes(pool, cfg), cfg)
    if below and cfg.min_pairs_action == "error":
        lacking = " and ".join(
            f"{n} {split} pairs, fewer than the minimum of {minimum} (corpus.min_{split}_pairs)"
            for split, (n, minimum) in below.items()
        )
        raise CorpusError(
            f"{lang}: {pool} clean pairs give {lacking}. Add data for {lang}, lower the "
            "minimum, set corpus.min_pairs_action: warn to go on with the language marked in "
            f"the tables, or remove {lang} from `languages`"
        )
    label = labels(available, lang, cfg, eligible)
    if mining is not None:
        label[mining] = _MINING
    outputs = {_TRAIN: train_path, _DEV: dev_path}
    if mining_path is not None:
        outputs[_MINING] = mining_path
    start = 0
    with contextlib.ExitStack() as stack:
        writers = {
            part: stack.enter_context(parquet_writer(path, CORPUS_SCHEMA, SENTENCES))
            for part, path in outputs.items()
        }
        for batch in source.iter_batches(batch_size=cfg.batch_size):
            rows = pl.from_arrow(batch)
            part = pl.Series(label[start : start + batch.num_rows])
            start += batch.num_rows
            for code, writer in writers.items():
                writer.write_table(rows.filter(part == code).to_arrow().cast(CORPUS_SCHEMA))
        kill_point("sample")
    n_train, n_dev = int((label == _TRAIN).sum()), int((label == _DEV).sum())
    per_source = {}
    for code, name in enumerate(names):
        mine = codes == code
        per_source[name] = {
            "available": int(mine.sum()),
            "eligible": int(mine.sum() if capped is None else (mine & capped).sum()),
            "train": int((mine & (label == _TRAIN)).sum()),
            "dev": int((mine & (label == _DEV)).sum()),
            "mining": int((mine & (label == _MINING)).sum()),
        }
    stats = {
        "lang": lang,
        "available": available,
        "train": n_train,
        "dev": n_dev,
        "mining": int((label == _MINING).sum()),
        "max_pairs": cfg.max_pairs,
        "per_source_cap": cfg.per_source_cap,
        "seed": cfg.seed,
        "below_min": below,
        "sources": per_source,
    }
    if below:
        log.warning(
            "%s: fewer pairs than the minimum (%s); going on as corpus.min_pairs_action is warn: "
            "the tables mark the language",
            lang,
            ", ".join(f"{split} {n} < {minimum}" for split, (n, minimum) in below.items()),
        )
    if n_train < cfg.max_pairs:
        log.warning(
            "%s: %d clean pairs, fewer than max_pairs %d: training on %d, dev %d",
            lang,
            available,
            cfg.max_pairs,
            n_train,
            n_dev,
        )
    else:
        log.info("%s: sampled %d train + %d dev of %d clean pairs", lang, n_train, n_dev, available)
    return stats
