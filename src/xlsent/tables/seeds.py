"""What every table does to the results first: seeds averaged per cell, refusing duplicated
results and languages that only some of a run's seeds have."""

from __future__ import annotations

import polars as pl


def refuse_duplicates(results: pl.DataFrame, key: list[str]) -> None:
    """Stop when two rows fill the same cell (`key` starts with run and seed)."""
    duplicated = results.filter(pl.struct(key).is_duplicated())
    if not duplicated.is_empty():
        first = duplicated.row(0, named=True)
        cell = " ".join(str(first[column]) for column in key[2:])
        raise ValueError(
            f"run {first['run']!r} seed {first['seed']} has more than one {cell} result: was a "
            "result file passed twice?"
        )


def seed_means(results: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Accuracy averaged over seeds per (run, lang, direction), and each run's seed count.

    Refuses duplicated results and languages missing for some of a run's seeds: averaging
    those would silently weight seeds unequally across languages.
    """
    acc = results.filter(pl.col("metric") == "accuracy")
    if acc.is_empty():
        raise ValueError("the results hold no 'accuracy' rows")
    tasks = acc["task"].unique().to_list()
    if len(tasks) > 1:
        raise ValueError(f"results of several tasks were mixed into one table: {sorted(tasks)}")
    refuse_duplicates(acc, ["run", "seed", "lang", "direction", "metric"])
    cells, seeds, partial = seed_averaged(acc, ["run", "lang", "direction"], pl.col("value").mean())
    if partial:
        run = partial[0]["run"]
        langs = ", ".join(dict.fromkeys(cell["lang"] for cell in partial if cell["run"] == run))
        raise ValueError(
            f"run {run!r} has results for {langs} from only some of its {seeds[run]} seeds: "
            "evaluate every seed of a run on the same languages"
        )
    return cells, seeds


def seed_averaged(
    results: pl.DataFrame, by: list[str], *values: pl.Expr
) -> tuple[pl.DataFrame, dict[str, int], list[dict]]:
    """The cells of `by` (run first) aggregated over seeds by `values`, each run's seed count,
    and the cells that only some of their run's seeds fill, in order: every table refuses
    those (its own words say what to evaluate again), as averaging them would weight seeds
    unequally."""
    seeds = dict(results.group_by("run", maintain_order=True).agg(pl.col("seed").n_unique()).rows())
    cells = results.group_by(*by, maintain_order=True).agg(
        *values, pl.col("seed").n_unique().alias("seeds")
    )
    runs_seeds = pl.col("run").replace_strict(seeds, return_dtype=pl.Int64)
    partial = cells.filter(pl.col("seeds") < runs_seeds).to_dicts()
    return cells.drop("seeds"), seeds, partial


def mean(values: list[float | None]) -> float | None:
    """The average, or None when a value is missing (a partial group is not averaged)."""
    if not values or any(v is None for v in values):
        return None
    return sum(values) / len(values)
