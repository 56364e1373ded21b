"""The comparison table (`tables_compare`): two runs side by side, language by language.

For each named pair of runs (a, b) and each task both were evaluated on (`TASKS`: Tatoeba's
accuracy, the mean of both directions; mining's F1 on the test split at the threshold chosen
on the threshold split; and `dev`, where the runs' models are given: the dev P@1 of the
checkpoint each kept, both directions, as its `best.json` records it per language), one row
per group (Tatoeba only: the groups of `tables.groups`), then `all` (every language both runs
have), then one per language, with

- `a_mean`, `b_mean`: each run's score averaged over its seeds (a group's: averaged over its
  languages too); `a_min`, `a_max`, `b_min`, `b_max`: the range of that score over the run's
  seeds (a group's: its average over the group's languages, seed by seed);
- `diff`: a − b, the mean over the row's languages of their differences (which is the
  difference of the two means);
- `above`, `below`, `level`: of the row's languages, how many a is above, below or level
  with, level meaning a difference within ±`LEVEL` (0.05): half the last digit the tables
  print (one decimal of a percentage), a difference that rounds to 0.0 there; one of exactly
  0.05 is level too (Tatoeba's mean of both directions moves in steps of 0.05 on 1,000 pairs,
  so such ties are common, and floats cannot tell them from rounding);
- `languages`: the row's languages; `a_seeds`, `b_seeds`: how many seeds each run has;
- last, each run's devices (`a_train_device`, …, `b_eval_precision`: the columns of
  `xlsent.tables.devices` with the side's prefix) and `devices_differ`: whether the two
  trained or were encoded on other devices or in other precisions (null where their results
  record none), which the Markdown says under the table: such a difference holds the
  device's own effect.

A row with a language that one run lacks leaves that run's scores, the difference and the
counts blank (a group is never averaged over fewer languages), as the Tatoeba table does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from xlsent.evaluate.results import load_results
from xlsent.languages import LANGUAGES
from xlsent.tables.dev import chosen_scores, models_devices
from xlsent.tables.devices import COLUMNS as DEVICE_COLUMNS
from xlsent.tables.devices import EFFECT, described, differ, results_devices
from xlsent.tables.seeds import refuse_duplicates, seed_averaged
from xlsent.tables.write import BLANK, write_table

# What a task's per-language score is: (metric, direction) of its results files.
TASKS = {"tatoeba": ("accuracy", "mean"), "bucc": ("f1", "test")}
# The task of the models' kept checkpoints (`xlsent.tables.dev.chosen_scores`), last.
DEV = "dev"
# Decimals of the scores in the tables; a difference within half the last one is level.
DIGITS = 1
LEVEL = 0.5 * 10**-DIGITS
# Differences are sums of floats: 95.05 − 95.00 must count as 0.05, not 0.0500000000001.
_ROUNDING = 1e-9

SCORES = ("a_mean", "a_min", "a_max", "b_mean", "b_min", "b_max", "diff")
COUNTS = ("above", "below", "level")
SCHEMA = {
    "a": pl.String,
    "b": pl.String,
    "task": pl.String,
    "unit": pl.String,
    "languages": pl.Int64,
    "a_seeds": pl.Int64,
    "b_seeds": pl.Int64,
    **dict.fromkeys(SCORES, pl.Float64),
    **dict.fromkeys(COUNTS, pl.Int64),
    # Last, so that the columns before keep their places.
    **{f"{side}_{column}": pl.String for side in ("a", "b") for column in DEVICE_COLUMNS},
    "devices_differ": pl.Boolean,
}


def _per_seed(results: pl.DataFrame, task: str) -> dict[str, dict[int, dict[str, float]]]:
    """{run: {seed: {lang: score}}} of one task, refusing duplicated results and languages that
    only some of a run's seeds have (as every table does)."""
    metric, direction = TASKS[task]
    rows = results.filter(
        (pl.col("task") == task) & (pl.col("metric") == metric) & (pl.col("direction") == direction)
    )
    refuse_duplicates(rows, ["run", "seed", "task", "lang", "direction", "metric"])
    _, seeds, partial = seed_averaged(rows, ["run", "lang"], pl.col("value").mean())
    if partial:
        run, lang = partial[0]["run"], partial[0]["lang"]
        raise ValueError(
            f"run {run!r} has {task} results for {lang} from only some of its {seeds[run]} "
            "seeds: evaluate every seed of a run on the same languages"
        )
    scores: dict[str, dict[int, dict[str, float]]] = {}
    for run, seed, lang, value in rows.select("run", "seed", "lang", "value").rows():
        scores.setdefault(run, {}).setdefault(seed, {})[lang] = value
    return scores


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _row(
    a: Mapping[int, Mapping[str, float]], b: Mapping[int, Mapping[str, float]], langs: list[str]
) -> dict:
    """The scores and counts of one row over `langs` ({seed: {lang: score}} of each run); a
    run's scores are blank where it lacks one of them, the difference and counts where
    either does."""
    row: dict = {"languages": len(langs), **dict.fromkeys((*SCORES, *COUNTS))}
    complete = {}
    for side, run in (("a", a), ("b", b)):
        complete[side] = bool(langs) and all(lang in s for s in run.values() for lang in langs)
        if complete[side]:
            by_seed = [_mean([scores[lang] for lang in langs]) for scores in run.values()]
            row[f"{side}_mean"] = _mean(by_seed)
            row[f"{side}_min"], row[f"{side}_max"] = min(by_seed), max(by_seed)
    if complete["a"] and complete["b"]:
        differences = [
            _mean([s[lang] for s in a.values()]) - _mean([s[lang] for s in b.values()])
            for lang in langs
        ]
        row["diff"] = _mean(differences)
        row["above"] = sum(d > LEVEL + _ROUNDING for d in differences)
        row["below"] = sum(d < -LEVEL - _ROUNDING for d in differences)
        row["level"] = len(differences) - row["above"] - row["below"]
    return row


def compare_table(
    frames: Sequence[pl.DataFrame | str | os.PathLike[str]],
    pairs: Sequence[tuple[str, str]],
    groups: Mapping[str, Sequence[str]],
    models: Mapping[str, str | os.PathLike[str]] | None = None,
) -> pl.DataFrame:
    """The comparison of each pair (a, b) of `pairs`, in order (the module docstring): per
    task both runs were evaluated on, the groups of `groups` (Tatoeba's), `all`, then each
    language (in the language table's order), a row each. `models` ({"run/seedN": model
    directory}) adds the dev task of the runs it names."""
    results = load_results(frames) if frames else None
    tasks = [task for task in TASKS if results is not None and task in set(results["task"])]
    scores = {task: _per_seed(results, task) for task in tasks}
    if models:
        tasks.append(DEV)
        scores[DEV] = chosen_scores(models)
    if not tasks:
        raise ValueError(f"no results of {', '.join([*TASKS, DEV])} to compare")
    # The results files' devices; where they record none, the models' (dev's encoder is the
    # training's).
    devices = results_devices(frames) if frames else {}
    for run, cells in models_devices(models or {}).items():
        known = devices.setdefault(run, dict.fromkeys(DEVICE_COLUMNS))
        known.update({c: value for c, value in cells.items() if known.get(c) is None})
    rows = []
    for a, b in pairs:
        compared = [task for task in tasks if a in scores[task] and b in scores[task]]
        if not compared:
            absent = [run for run in (a, b) if not any(run in s for s in scores.values())]
            raise ValueError(
                f"pair {a}:{b}: "
                + (
                    f"no results of {', '.join(absent)} among the files given"
                    if absent
                    else f"the two runs share no task ({', '.join([*TASKS, DEV])})"
                )
            )
        for task in compared:
            first = {run: next(iter(scores[task][run].values())) for run in (a, b)}
            langs = sorted(
                set(first[a]) | set(first[b]),
                key=lambda c: list(LANGUAGES).index(c) if c in LANGUAGES else len(LANGUAGES),
            )
            shared = [lang for lang in langs if lang in first[a] and lang in first[b]]
            units = {**(groups if task == "tatoeba" else {}), "all": shared}
            units.update({lang: [lang] for lang in langs})
            seeds = {"a_seeds": len(scores[task][a]), "b_seeds": len(scores[task][b])}
            on = {
                f"{side}_{column}": devices.get(run, {}).get(column)
                for side, run in (("a", a), ("b", b))
                for column in DEVICE_COLUMNS
            }
            on["devices_differ"] = differ(devices.get(a), devices.get(b))
            for unit, members in units.items():
                cells = _row(scores[task][a], scores[task][b], list(members))
                rows.append({"a": a, "b": b, "task": task, "unit": unit, **seeds, **cells, **on})
    return pl.DataFrame(rows, schema=SCHEMA)


def _range(low: float | None, high: float | None) -> str | None:
    return None if low is None else f"{low:.{DIGITS}f}–{high:.{DIGITS}f}"


def _signed(value: float | None) -> str | None:
    return None if value is None else f"{value:+.{DIGITS + 1}f}".replace("-", "−")


def write_compare_table(table: pl.DataFrame, out_csv: Path) -> None:
    """Write the comparison table to `out_csv` (full precision) and its `.md`: each run's mean
    beside its seeds' range, the difference to one decimal more, and the counts."""
    shown = pl.DataFrame(
        [
            {
                **{key: row[key] for key in ("a", "b", "task", "unit", "a_mean")},
                "a range": _range(row["a_min"], row["a_max"]),
                "b_mean": row["b_mean"],
                "b range": _range(row["b_min"], row["b_max"]),
                "a − b": _signed(row["diff"]),
                **{key: row[key] for key in (*COUNTS, "languages")},
            }
            for row in table.iter_rows(named=True)
        ],
        schema={
            **{key: SCHEMA[key] for key in ("a", "b", "task", "unit", "a_mean")},
            "a range": pl.String,
            "b_mean": pl.Float64,
            "b range": pl.String,
            "a − b": pl.String,
            **{key: SCHEMA[key] for key in (*COUNTS, "languages")},
        },
    )
    write_table(
        table,
        out_csv,
        digits=DIGITS,
        shown=shown,
        caption="Run a against run b, seeds averaged: Tatoeba accuracy (%, the mean of both "
        "directions), mining F1 (%, the test split at the threshold split's threshold) and, "
        "where the models are given, dev P@1 (%, both directions, of the checkpoint each "
        "kept), per group, over `all` the languages both have, and per language. `range`: the "
        "lowest and the highest seed (a group's average, seed by seed); `a − b`: the mean of "
        "the languages' differences; above, below, level: how many of the row's languages a "
        f"is above, below or level with, level meaning a difference within ±{LEVEL:.2f}.",
        notes=[
            f"{BLANK} A run lacks a language of the row: nothing is averaged over fewer.",
            *devices_differ_notes(table),
        ],
    )


def devices_differ_notes(table: pl.DataFrame) -> list[str]:
    """A note for each pair of `table` whose runs trained or were encoded on other devices or
    in other precisions (`devices_differ`), saying where each ran."""
    notes = []
    for row in (
        table.filter(pl.col("devices_differ"))
        .unique(["a", "b"], maintain_order=True)
        .rows(named=True)
    ):
        sides = {side: described({c: row[f"{side}_{c}"] for c in DEVICE_COLUMNS}) for side in "ab"}
        notes.append(
            f"`{row['a']}` and `{row['b']}` ran on different devices or precisions "
            f"(`devices_differ`): `{row['a']}` {sides['a']}; `{row['b']}` {sides['b']}. "
            f"Their difference holds the device's own effect: {EFFECT}."
        )
    return notes
