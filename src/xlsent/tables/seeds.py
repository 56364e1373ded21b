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
    seeds = dict(acc.group_by("run", maintain_order=True).agg(pl.col("seed").n_unique()).rows())
    cells = acc.group_by("run", "lang", "direction", maintain_order=True).agg(
        pl.col("value").mean(), pl.col("seed").n_unique().alias("seeds")
    )
    partial = [(run, lang) for run, lang, _, _, n in cells.rows() if n < seeds[run]]
    if partial:
        run = partial[0][0]
        langs = ", ".join(dict.fromkeys(lang for r, lang in partial if r == run))
        raise ValueError(
            f"run {run!r} has results for {langs} from only some of its {seeds[run]} seeds: "
            "evaluate every seed of a run on the same languages"
        )
    return cells.drop("seeds"), seeds


def mean(values: list[float | None]) -> float | None:
    """The average, or None when a value is missing (a partial group is not averaged)."""
    if not values or any(v is None for v in values):
        return None
    return sum(values) / len(values)
