"""The Tatoeba tables (`tables_tatoeba`: the summary by language group and per language) and
WACSE's ablation table (`tables_ablation`: the same results, chosen runs)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from xlsent.evaluate.results import load_results
from xlsent.languages import LANGUAGES
from xlsent.tables.devices import COLUMNS as DEVICE_COLUMNS
from xlsent.tables.devices import devices_notes, results_devices, with_devices
from xlsent.tables.seeds import mean, seed_means
from xlsent.tables.write import BLANK, marked, scarce_note, write_table

DIRECTIONS = ("xx2en", "en2xx")


def tatoeba_tables(
    frames: Sequence[pl.DataFrame | str | os.PathLike[str]],
    groups: Mapping[str, Sequence[str]],
    scarce: dict[str, str] | None = None,
    language_directions: Sequence[str] = ("mean",),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(summary, per_language) Tatoeba tables, one row per run in order of appearance.

    `groups`: each group's languages by name (`languages.members`). Summary columns: `run`,
    `seeds`; per group of `groups` (and `all`, every evaluated
    language) the average over its languages of the mean of both directions (WACSE Table 3),
    then the per-direction averages `{group}_xx2en` and `{group}_en2xx` (DAP Table 1);
    `missing`, the languages of `groups` the run lacks (their groups are null), or null; and
    `scarce`, the evaluated languages of `scarce` (`scarce_languages`: trained on fewer pairs
    than the minimum), or null. Per-language: `run` and, per language, the accuracy of each of
    `language_directions` (`mean`: the column `{lang}`; `xx2en`, `en2xx`: `{lang}_{direction}`,
    DAP Tables 7–8). Both end with the run's devices (`xlsent.tables.devices.COLUMNS`), as
    its results files record them.
    """
    cells, seeds = seed_means(load_results(frames))
    value = {(run, lang, d): v for run, lang, d, v in cells.rows()}
    needed = list(dict.fromkeys(lang for codes in groups.values() for lang in codes))
    # Language columns in the order of the language table (order seen for any code outside it).
    langs = sorted(
        cells["lang"].unique(maintain_order=True),
        key=lambda c: list(LANGUAGES).index(c) if c in LANGUAGES else len(LANGUAGES),
    )

    language_columns = [
        (c if d == "mean" else f"{c}_{d}", c, d) for c in langs for d in language_directions
    ]
    summary, per_language = [], []
    for run, n_seeds in seeds.items():
        evaluated = [lang for lang in langs if (run, lang, "mean") in value]
        members = {**groups, "all": evaluated}
        row: dict = {"run": run, "seeds": n_seeds}
        for direction, suffix in (("mean", ""), *((d, f"_{d}") for d in DIRECTIONS)):
            for name, codes in members.items():
                row[name + suffix] = mean([value.get((run, c, direction)) for c in codes])
        row["missing"] = " ".join(c for c in needed if c not in evaluated) or None
        row["scarce"] = " ".join(c for c in evaluated if c in (scarce or {})) or None
        summary.append(row)
        per_language.append(
            {"run": run, **{name: value.get((run, c, d)) for name, c, d in language_columns}}
        )

    names = [*groups, "all"]
    score_columns = [*names, *(f"{g}_{d}" for d in DIRECTIONS for g in names)]
    summary_schema = {
        "run": pl.String,
        "seeds": pl.Int64,
        **dict.fromkeys(score_columns, pl.Float64),
        "missing": pl.String,
        "scarce": pl.String,
    }
    language_schema = {
        "run": pl.String,
        **dict.fromkeys((name for name, _, _ in language_columns), pl.Float64),
    }
    devices = results_devices(frames)
    return (
        with_devices(pl.DataFrame(summary, schema=summary_schema), devices),
        with_devices(pl.DataFrame(per_language, schema=language_schema), devices),
    )


def write_tables(
    summary: pl.DataFrame,
    per_language: pl.DataFrame,
    out_csv: Path,
    groups: Mapping[str, Sequence[str]],
    *,
    digits: int = 1,
    scarce: dict[str, str] | None = None,
) -> list[Path]:
    """Write the Tatoeba tables: `out_csv` (e.g. tatoeba.csv), `{stem}_langs.csv`, both `.md`.

    Returns the four paths written. `groups`: the summary's groups and their languages, as
    `tatoeba_tables` took them. `scarce` (`scarce_languages`): languages whose columns and
    group averages the Markdown marks, with a footnote.
    """
    out_csv = Path(out_csv)
    scarce = scarce or {}
    langs_csv = out_csv.with_name(f"{out_csv.stem}_langs.csv")
    # The Markdown turns the `missing` column into footnotes under the table.
    notes = [
        f"{BLANK} Run `{run}` has no Tatoeba result for {missing.replace(' ', ', ')}; group "
        "averages that need a missing language are left blank rather than taken over fewer "
        "languages."
        for run, missing in summary.select("run", "missing").rows()
        if missing
    ]
    used = {lang for text in summary["scarce"].drop_nulls() for lang in text.split()}
    scarce = {lang: text for lang, text in scarce.items() if lang in used}
    covered = {
        column: groups[column.split("_")[0]]
        for column in summary.columns
        if column.split("_")[0] in groups
    }
    for column in summary.columns:  # `all` and its directions: every language of the run
        if column.split("_")[0] == "all":
            covered[column] = sorted(used)
    shown = summary.select(c for c in summary.columns if c not in ("missing", "scarce"))
    write_table(
        summary,
        out_csv,
        digits=digits,
        caption="Tatoeba accuracy (%), seeds averaged. Group columns average both directions "
        "over the group's languages; `_xx2en` and `_en2xx` are single directions; `all` is "
        "every language evaluated for the run.",
        notes=notes + scarce_note(scarce) + devices_notes(summary),
        shown=shown.rename(marked(shown, covered, scarce)),
    )
    languages = {
        c: [c.split("_")[0]] for c in per_language.columns if c not in ("run", *DEVICE_COLUMNS)
    }
    write_table(
        per_language,
        langs_csv,
        digits=digits,
        caption="Tatoeba accuracy (%) per language, seeds averaged: `xx` the mean of both "
        "directions, `xx_xx2en` and `xx_en2xx` single directions where asked for. "
        f"{BLANK}: not evaluated.",
        notes=scarce_note(scarce) + devices_notes(per_language),
        shown=per_language.rename(marked(per_language, languages, scarce)),
    )
    return [out_csv, out_csv.with_suffix(".md"), langs_csv, langs_csv.with_suffix(".md")]


def ablation_table(
    frames: Sequence[pl.DataFrame | str | os.PathLike[str]],
    runs: list[str],
    groups: Mapping[str, Sequence[str]],
) -> pl.DataFrame:
    """WACSE Table 10: one row per run of `runs` (in that order), the mean of both directions
    averaged over each group of `groups` (name → languages), then each of their languages,
    then the run's devices (`xlsent.tables.devices.COLUMNS`)."""
    summary, per_language = tatoeba_tables(frames, groups)
    absent = [run for run in runs if run not in summary["run"].to_list()]
    if absent:
        raise ValueError(f"no Tatoeba results for the ablation runs {absent}")
    langs = [c for c in per_language.columns if c != "run" and any(c in g for g in groups.values())]
    order = pl.DataFrame({"run": runs})
    return (
        order.join(summary.select("run", "seeds", *groups), on="run", how="left")
        .join(per_language.select("run", *langs), on="run", how="left")
        .join(summary.select("run", *DEVICE_COLUMNS), on="run", how="left", maintain_order="left")
    )
