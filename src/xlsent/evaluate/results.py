"""The results contract: the one Parquet layout every evaluation writes and the tables read.

Each run's evaluation lives in `results/eval/{task}/{run}/seed{seed}.parquet` (columns
`task, run, seed, lang, direction, metric, value, n`). Every evaluation writes its file with
`write_results`, beside the reader, so the columns have one definition; the tables
(`xlsent.tables`) read them with `load_results`.

The file's metadata (`DEVICES_KEY`) records what the run trained and was encoded on
(`xlsent.devices`): `{"train": [records] or null, "eval": record or null}`, which the
tables read with `read_devices` and print on each row. Metadata rather than columns: a file
is one run and seed, and the columns every reader selects stay as they were.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

import polars as pl
import pyarrow.parquet as pq

from xlsent.devices import CPU_FP32
from xlsent.failures.unreadable import reading
from xlsent.io import write_parquet

COLUMNS = ("task", "run", "seed", "lang", "direction", "metric", "value", "n")
# A task's rows as read (`results_frame`): a count may come as a float (a mean over pairs).
_ROW = {
    "lang": pl.String,
    "direction": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "n": pl.Float64,
}
# The key of the devices' record in a results file's Parquet metadata.
DEVICES_KEY = "xlsent.devices"
# A word-vector run's: trained and evaluated in the CPU's fp32 by construction.
WORD_VECTOR_DEVICES = {"train": [CPU_FP32], "eval": CPU_FP32}


def vectors_devices(metadata: Mapping[str, object]) -> dict:
    """The devices' record of an evaluation that scored the vectors whose metadata is
    `metadata` (`xlsent.evaluate.vectors`): what the model trained on and what encoded."""
    return {"train": metadata.get("trained_on"), "eval": metadata.get("encoded_on")}


def results_frame(rows: Sequence[dict], task: str, run: str, seed: int) -> pl.DataFrame:
    """One run's evaluation rows (lang, direction, metric, value, n) as `COLUMNS`.

    Every task (tatoeba, bucc, bli) writes through here, so `load_results` finds the same
    types whatever wrote them: `value` a float and `n` an integer even when a task's rows hold
    integral accuracies or float counts.
    """
    return pl.DataFrame(rows, schema=_ROW).select(
        task=pl.lit(task),
        run=pl.lit(run),
        seed=pl.lit(seed, dtype=pl.Int64),
        lang=pl.col("lang"),
        direction=pl.col("direction"),
        metric=pl.col("metric"),
        value=pl.col("value"),
        n=pl.col("n").cast(pl.Int64),
    )


def write_results(
    rows: Sequence[dict],
    task: str,
    run: str,
    seed: int,
    out: str | os.PathLike[str],
    devices: Mapping[str, object] | None = None,
) -> None:
    """One run's evaluation rows (lang, direction, metric, value, n) as its results Parquet
    (`results_frame`), with `devices` (`vectors_devices`, `WORD_VECTOR_DEVICES`) in its
    metadata."""
    table = results_frame(rows, task, run, seed).to_arrow()
    if devices is not None:
        table = table.replace_schema_metadata({DEVICES_KEY: json.dumps(devices)})
    write_parquet(out, table)


def read_devices(path: str | os.PathLike[str]) -> dict | None:
    """The devices' record of the results file `path` (`write_results`); None for a file
    written before evaluations recorded them."""
    with reading(path):
        metadata = pq.read_schema(path).metadata or {}
    value = metadata.get(DEVICES_KEY.encode())
    return None if value is None else json.loads(value)


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
