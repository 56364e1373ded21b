"""The results contract: the one Parquet layout every evaluation writes and the tables read.

Each run's evaluation lives in `results/eval/{task}/{run}/seed{seed}.parquet` (columns
`task, run, seed, lang, direction, metric, value, n`). Every evaluation writes its file with
`write_results`, beside the reader, so the columns have one definition; the tables
(`xlsent.tables`) read them with `load_results`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from xlsent.failures.unreadable import reading
from xlsent.io import write_parquet

COLUMNS = ("task", "run", "seed", "lang", "direction", "metric", "value", "n")


def write_results(
    rows: Sequence[dict], task: str, run: str, seed: int, out: str | os.PathLike[str]
) -> None:
    """One run's evaluation rows (lang, direction, metric, value, n) as its results Parquet.

    Every task (tatoeba, bli) writes through here, so `load_results` finds `COLUMNS` with the
    same types whatever wrote them: `value` a float and `n` an integer even when a task's
    rows hold integral accuracies or float counts.
    """
    frame = pl.DataFrame(rows).select(
        task=pl.lit(task),
        run=pl.lit(run),
        seed=pl.lit(seed, dtype=pl.Int64),
        lang=pl.col("lang"),
        direction=pl.col("direction"),
        metric=pl.col("metric"),
        value=pl.col("value").cast(pl.Float64),
        n=pl.col("n").cast(pl.Int64),
    )
    write_parquet(out, frame.to_arrow())


def load_results(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> pl.DataFrame:
    """Concatenate evaluation results given as data frames or Parquet paths."""
    parts = []
    for frame in frames:
        if isinstance(frame, pl.DataFrame):
            df = frame
        else:
            with reading(frame):
                df = pl.read_parquet(frame)
        missing = [c for c in COLUMNS if c not in df.columns]
        if missing:
            source = "a data frame" if isinstance(frame, pl.DataFrame) else str(frame)
            raise ValueError(f"{source} lacks the result columns {missing}; expected {COLUMNS}")
        parts.append(df.select(COLUMNS))
    if not parts:
        raise ValueError("no evaluation results to tabulate")
    return pl.concat(parts, how="vertical_relaxed")
