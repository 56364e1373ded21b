"""Seeded uniform sampling of the cleaned corpus and the train/dev split.

The dev set is min(`dev_fraction` · N, `dev_pairs`) pairs of the N clean pairs (WACSE
Table 1: 10% where a language has little data, 10K otherwise) and the training set up to
`max_pairs` of the rest, both drawn uniformly without replacement. Memory holds one label
byte per clean pair (and, while drawing, numpy's permutation of the indices: eight bytes per
pair); the text is streamed batch by batch.
"""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from xlsent.corpus.clean import CORPUS_SCHEMA
from xlsent.io import parquet_writer

log = logging.getLogger(__name__)

_TRAIN, _DEV = 1, 2


@dataclass(frozen=True)
class SampleConfig:
    max_pairs: int = 1_000_000
    dev_pairs: int = 10_000
    dev_fraction: float = 0.1
    seed: int = 0
    batch_size: int = 100_000


def split_sizes(available: int, cfg: SampleConfig) -> tuple[int, int]:
    """(train, dev) sizes for a corpus of `available` clean pairs."""
    dev = min(round(available * cfg.dev_fraction), cfg.dev_pairs)
    return min(available - dev, cfg.max_pairs), dev


def labels(available: int, lang: str, cfg: SampleConfig) -> np.ndarray:
    """One label per clean pair: 0 unused, 1 train, 2 dev. Seeded by (seed, language)."""
    n_train, n_dev = split_sizes(available, cfg)
    # Each language draws from its own stream, so adding a language changes no other sample.
    rng = np.random.default_rng([cfg.seed, zlib.crc32(lang.encode())])
    chosen = rng.choice(available, size=n_train + n_dev, replace=False)
    out = np.zeros(available, dtype=np.int8)
    out[chosen[:n_dev]] = _DEV
    out[chosen[n_dev:]] = _TRAIN
    return out


def sample(
    clean_path: str | Path,
    lang: str,
    train_path: str | Path,
    dev_path: str | Path,
    cfg: SampleConfig = SampleConfig(),
) -> dict:
    """Write the train and dev splits of one language; return their sizes."""
    # pre_buffer (on by default) reads ahead across row groups: memory would grow with the file.
    source = pq.ParquetFile(clean_path, pre_buffer=False)
    available = source.metadata.num_rows
    label = labels(available, lang, cfg)
    start = 0
    with (
        parquet_writer(train_path, CORPUS_SCHEMA) as train,
        parquet_writer(dev_path, CORPUS_SCHEMA) as dev,
    ):
        for batch in source.iter_batches(batch_size=cfg.batch_size):
            rows = pl.from_arrow(batch)
            part = pl.Series(label[start : start + batch.num_rows])
            start += batch.num_rows
            train.write_table(rows.filter(part == _TRAIN).to_arrow().cast(CORPUS_SCHEMA))
            dev.write_table(rows.filter(part == _DEV).to_arrow().cast(CORPUS_SCHEMA))
    n_train, n_dev = int((label == _TRAIN).sum()), int((label == _DEV).sum())
    stats = {
        "lang": lang,
        "available": available,
        "train": n_train,
        "dev": n_dev,
        "max_pairs": cfg.max_pairs,
        "seed": cfg.seed,
    }
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
