"""The dev table (`tables_dev`): each encoder run's dev P@1 at every evaluation of its
training, and the checkpoint it kept; the numbers the `dev_curves` figure draws, for a reader
who compares runs at equal steps (WACSE §4.3 chooses its checkpoint on dev the same way)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from xlsent.tables.write import write_table


def _records(log: Path) -> list[dict]:
    records = []
    for number, line in enumerate(log.read_text().splitlines(), 1):
        if not line:
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{log} line {number} is not JSON ({err.msg}): train the run again "
                "(delete its model directory) to write its record anew"
            ) from None
    return records


def dev_table(models: Mapping[str, str | os.PathLike[str]]) -> pl.DataFrame:
    """One row per run and seed, in the order of `models` ({"run/seedN": model directory}).

    Columns: `run`, `seed`, the dev P@1 (%) at each evaluated step, one column per step
    across all runs in step order (`0` is the encoder before training; null where a run did
    not evaluate that step), then `chosen_step` and `chosen` (dev P@1) of the checkpoint the
    run kept, as its `best.json` records it.
    """
    rows, steps = [], set()
    for label, directory in models.items():
        run, _, seed = label.rpartition("/seed")
        if not run or not seed.isdigit():
            raise ValueError(f"model label {label!r} is not RUN/seedN")
        directory = Path(directory)
        curve = {
            record["step"]: record["dev_p1"]
            for record in _records(directory / "train_log.jsonl")
            if "dev_p1" in record
        }
        best = json.loads((directory / "best.json").read_text())
        steps |= curve.keys()
        rows.append((run, int(seed), curve, best["step"], best["dev_p1"]))
    columns = [str(step) for step in sorted(steps)]
    schema = {
        "run": pl.String,
        "seed": pl.Int64,
        **dict.fromkeys(columns, pl.Float64),
        "chosen_step": pl.Int64,
        "chosen": pl.Float64,
    }
    return pl.DataFrame(
        [
            [run, seed, *(curve.get(step) for step in sorted(steps)), chosen_step, chosen]
            for run, seed, curve, chosen_step, chosen in rows
        ],
        schema=schema,
        orient="row",
    )


def seed_spread(table: pl.DataFrame) -> dict[str, float]:
    """Each run with more than one seed: the spread (max − min) of its seeds' chosen dev P@1."""
    spread = (
        table.group_by("run", maintain_order=True)
        .agg(pl.len().alias("seeds"), (pl.col("chosen").max() - pl.col("chosen").min()))
        .filter(pl.col("seeds") > 1)
    )
    return dict(spread.select("run", "chosen").rows())


def write_dev_table(table: pl.DataFrame, out_csv: Path) -> None:
    """Write the dev table (`dev_table`) to `out_csv` and its `.md`, with the seeds' spread."""
    spread = seed_spread(table)
    notes = (
        [
            "Seeds' spread of the chosen dev P@1 (max − min): "
            + ", ".join(f"{run} {value:.2f}" for run, value in spread.items())
            + "."
        ]
        if spread
        else []
    )
    write_table(
        table,
        out_csv,
        digits=2,
        notes=notes,
        caption="Dev P@1 (%, the mean over languages of similarity search both ways on each "
        "language's dev pairs) at each evaluated training step (0: before training), and the "
        "checkpoint each run kept: the step of its best dev P@1 (the last step for "
        "pretraining, which keeps its latest weights).",
    )
