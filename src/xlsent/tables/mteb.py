"""The MTEB table (`tables_mteb`): each task's main score, and per subset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from xlsent.io import atomic_path
from xlsent.tables.devices import Devices, devices_notes, with_devices
from xlsent.tables.seeds import refuse_duplicates, seed_averaged
from xlsent.tables.write import write_table

MTEB_SCHEMA = {
    "run": pl.String,
    "seed": pl.Int64,
    "task": pl.String,
    "split": pl.String,
    "subset": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
}


def mteb_table(
    rows: Sequence[dict], devices: Mapping[str, Devices] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(summary, per_subset) tables of MTEB's main scores (×100), seeds averaged, each row
    ending with its run's `devices` (`xlsent.tables.devices`: blank for a run it lacks).

    `rows`: {run, seed, task, split, subset, metric, value (a fraction, as MTEB writes it)},
    e.g. `xlsent.evaluate.mteb.read_results` of each run's seed directory. Summary: one row
    per run in order of appearance, `run`, `seeds`, then per task (in order of appearance) its
    main score averaged over the task's splits and subsets, as MTEB's
    `TaskResult.get_score` averages them; null for a run without the task. Per subset: `run`,
    `task`, `split`, `subset`, `metric` (the task's main score: cosine_spearman, f1, ...),
    `value`. Refuses duplicated results and cells that only some of a run's seeds have.
    """
    if not rows:
        raise ValueError("no MTEB results to tabulate")
    results = pl.DataFrame(rows, schema=MTEB_SCHEMA)
    refuse_duplicates(results, ["run", "seed", "task", "split", "subset"])
    per_subset, seeds, partial = seed_averaged(
        results,
        ["run", "task", "split", "subset", "metric"],
        (pl.col("value").mean() * 100).alias("value"),
    )
    if partial:
        run, task, split, subset = (partial[0][k] for k in ("run", "task", "split", "subset"))
        raise ValueError(
            f"run {run!r} has MTEB results for {task} {split} {subset} from only some of "
            f"its {seeds[run]} seeds: evaluate every seed of a run on the same tasks"
        )
    means = {
        (run, task): value
        for run, task, value in per_subset.group_by("run", "task", maintain_order=True)
        .agg(pl.col("value").mean())
        .rows()
    }
    tasks = per_subset["task"].unique(maintain_order=True).to_list()
    summary = pl.DataFrame(
        [
            {"run": run, "seeds": n, **{task: means.get((run, task)) for task in tasks}}
            for run, n in seeds.items()
        ],
        schema={"run": pl.String, "seeds": pl.Int64, **dict.fromkeys(tasks, pl.Float64)},
    )
    devices = devices or {}
    return with_devices(summary, devices), with_devices(per_subset, devices)


def write_mteb_tables(summary: pl.DataFrame, per_subset: pl.DataFrame, out_csv: Path) -> list[Path]:
    """Write the MTEB summary (`mteb_table`) to `out_csv` and its `.md`, the task's metrics as
    a note, and the per-subset scores to `{stem}_subsets.csv`. Returns the paths written."""
    out_csv = Path(out_csv)
    metrics = dict(per_subset.select("task", "metric").unique(maintain_order=True).rows())
    write_table(
        summary,
        out_csv,
        caption="MTEB (Muennighoff et al., 2023): each task's main score (×100) averaged over "
        "its evaluated subsets and splits (subsets of English and the evaluated languages), "
        "seeds averaged; per subset in the `_subsets.csv` beside it.",
        notes=[
            "Main scores: " + ", ".join(f"{task} {m}" for task, m in metrics.items()) + ".",
            *devices_notes(summary),
        ],
    )
    subsets_csv = out_csv.with_name(f"{out_csv.stem}_subsets.csv")
    with atomic_path(subsets_csv) as tmp:
        per_subset.write_csv(tmp, check_extension=False)
    return [out_csv, out_csv.with_suffix(".md"), subsets_csv]
