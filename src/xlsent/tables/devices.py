"""Each row's devices: what the run trained on and what encoded its evaluation's sentences,
and in which precision (`xlsent.devices`), as the last columns of every table with a row per
run, so that rows from a GPU in bf16 and a CPU in fp32 are never compared in one table
without the table saying so.

The columns (`COLUMNS`): `train_device` (`cpu`, `cuda (NVIDIA H200)`), `train_precision`
(fp32, bf16, tf32), `eval_device` and `eval_precision`. A run whose seeds differ gives the
set of their values, sorted and joined (`cpu, cuda (NVIDIA H100)`), `unknown` among them for
a seed whose results record none; a run none of whose results record them (written before
the records existed) is blank, and so is `train_*` for a model no training of the workflow
exported. Word-vector runs read `cpu` and `fp32` (their evaluations record it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

import polars as pl
import pyarrow.parquet as pq

from xlsent.devices import device_label
from xlsent.evaluate.results import read_devices
from xlsent.failures.unreadable import reading

COLUMNS = ("train_device", "train_precision", "eval_device", "eval_precision")
# A seed whose results record no devices, beside seeds whose results do.
UNKNOWN = "unknown"

Devices = dict[str, str | None]


def joined(values: Sequence[str | None]) -> str | None:
    """One cell of the seeds' `values`: the distinct known ones sorted and joined, `unknown`
    after them where a seed has none; None where no seed has one."""
    known = sorted({value for value in values if value is not None})
    if not known:
        return None
    return ", ".join([*known, *([UNKNOWN] if None in values else [])])


def seeds_devices(records: Iterable[Mapping | None]) -> Devices:
    """The four cells of a run from its seeds' records (`xlsent.evaluate.results`: train, a
    list of the training's records, and eval, the encoding's; None for a seed with none)."""
    cells: dict[str, list[str | None]] = {column: [] for column in COLUMNS}
    for record in records:
        train = (record or {}).get("train") or [None]
        cells["train_device"] += [None if r is None else device_label(r) for r in train]
        cells["train_precision"] += [None if r is None else r["precision"] for r in train]
        encoded = (record or {}).get("eval")
        cells["eval_device"].append(None if encoded is None else device_label(encoded))
        cells["eval_precision"].append(None if encoded is None else encoded["precision"])
    return {column: joined(values) for column, values in cells.items()}


def results_devices(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> dict[str, Devices]:
    """{run: its four cells} of the results `frames` (files record their devices in their
    metadata; a data frame records none)."""
    records: dict[str, dict[int, Mapping | None]] = {}
    for frame in frames:
        if isinstance(frame, pl.DataFrame):
            keys, record = frame.select("run", "seed").unique().rows(), None
        else:
            with reading(frame):
                keys = pl.from_arrow(pq.read_table(frame, columns=["run", "seed"])).unique().rows()
            record = read_devices(frame)
        for run, seed in keys:
            seeds = records.setdefault(run, {})
            # A seed's tasks in one table (compare: Tatoeba and mining) are one set of seeds.
            seeds[seed] = seeds.get(seed) or record
    return {run: seeds_devices(seeds.values()) for run, seeds in records.items()}


def with_devices(table: pl.DataFrame, devices: Mapping[str, Devices]) -> pl.DataFrame:
    """`table` (a `run` column) with the four columns of `devices` last, blank for a run
    `devices` lacks."""
    return table.with_columns(
        pl.col("run")
        .replace_strict(
            {run: cells[column] for run, cells in devices.items()},
            default=None,
            return_dtype=pl.String,
        )
        .alias(column)
        for column in COLUMNS
    )


def differ(a: Devices | None, b: Devices | None) -> bool | None:
    """Whether two runs' cells name other devices or precisions, over the columns both know
    (a run without a training of the workflow's compares on its encoding alone); None where
    they share no known column."""
    a, b = a or {}, b or {}
    known = [c for c in COLUMNS if a.get(c) is not None and b.get(c) is not None]
    if not known:
        return None
    return any(a[c] != b[c] for c in known)


def described(cells: Devices) -> str:
    """A run's devices in words: `trained on cpu in fp32, encoded on cpu in fp32`."""
    parts = []
    for verb, side in (("trained", "train"), ("encoded", "eval")):
        device, precision = cells.get(f"{side}_device"), cells.get(f"{side}_precision")
        if device is not None:
            parts.append(f"{verb} on {device} in {precision}")
    return ", ".join(parts) or "devices not recorded"


# What a reader needs before comparing rows of other devices: the device's own effect, as
# measured on one model (docs/results.md, "WACSE given a fair test on me5"), is the size of
# the differences the tables are read for.
EFFECT = (
    "the device and precision alone move a score (me5's own weights on Tatoeba: low4 79.4 "
    "and low8 83.1 on an H100 in bf16, 79.6 and 83.2 on a CPU in fp32; docs/results.md), so "
    "measure that effect on one model on both before reading a difference of that size "
    "between such rows"
)


def devices_notes(table: pl.DataFrame) -> list[str]:
    """The Markdown's notes on the four columns of `table`: rows whose devices or
    precisions differ, and rows that record none beside rows that do."""
    if not set(COLUMNS) <= set(table.columns):
        return []
    rows = table.select(COLUMNS).rows()
    known = {row for row in rows if any(cell is not None for cell in row)}
    notes = []
    if len(known) > 1:
        notes.append(
            "Rows trained or evaluated on different devices or precisions (`train_device`, "
            f"`train_precision`, `eval_device`, `eval_precision`): {EFFECT}."
        )
    if known and any(all(cell is None for cell in row) for row in rows):
        notes.append(
            "A row without devices: its results were written before the evaluations recorded "
            "them; evaluate the run again to know them."
        )
    return notes
