"""The bitext mining table (`tables_bucc`: the BUCC protocol)."""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from pathlib import Path

import polars as pl

from xlsent.evaluate.results import load_results
from xlsent.languages import LANGUAGES
from xlsent.tables.devices import COLUMNS as DEVICE_COLUMNS
from xlsent.tables.devices import devices_notes, results_devices, with_devices
from xlsent.tables.seeds import mean, refuse_duplicates, seed_averaged
from xlsent.tables.write import marked, write_table

# The test split's scores: at the threshold chosen on the threshold split (the protocol's),
# at its own best threshold (XTREME's, DAP Table 2), at the pivot's (dual-pivot Table 6).
BUCC_SCHEMES = {"test": "", "test_oracle": "_oracle", "test_pivot": "_pivot"}


def bucc_table(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> pl.DataFrame:
    """Bitext mining: one row per run, in order of appearance.

    Columns: `run`, `seeds`, then per language (language-table order) `{lang}_p`, `{lang}_r`
    and `{lang}_f1` on the test split at the threshold chosen on the threshold split (DAP
    Table 3), `{lang}_f1_oracle` at the test split's own best threshold, and `{lang}_f1_pivot`
    at the pivot language's threshold where evaluated; then `avg_f1`, `avg_f1_oracle` (and
    `avg_f1_pivot`) over the languages, null for a run that lacks one; last, the run's
    devices (`xlsent.tables.devices.COLUMNS`). Percent, seeds averaged; refuses duplicated
    results and cells that only some of a run's seeds have.
    """
    results = load_results(frames)
    tasks = results["task"].unique().to_list()
    if tasks != ["bucc"]:
        raise ValueError(f"expected mining results (task 'bucc'), got tasks {sorted(tasks)}")
    refuse_duplicates(results, ["run", "seed", "lang", "direction", "metric"])
    cells, seeds, partial = seed_averaged(
        results, ["run", "lang", "direction", "metric"], pl.col("value").mean()
    )
    if partial:
        run, lang, direction = (partial[0][key] for key in ("run", "lang", "direction"))
        raise ValueError(
            f"run {run!r} has {lang} {direction} mining results from only some of its "
            f"{seeds[run]} seeds: evaluate every seed of a run on the same languages"
        )
    value = {(r, lang, d, m): v for r, lang, d, m, v in cells.rows()}
    langs = sorted(
        cells["lang"].unique(maintain_order=True),
        key=lambda c: list(LANGUAGES).index(c) if c in LANGUAGES else len(LANGUAGES),
    )
    schemes = [d for d in BUCC_SCHEMES if d in set(cells["direction"])]
    columns = []  # (name, lang, direction, metric)
    for lang in langs:
        columns += [(f"{lang}_{m[0]}", lang, "test", m) for m in ("precision", "recall")]
        columns += [(f"{lang}_f1{BUCC_SCHEMES[d]}", lang, d, "f1") for d in schemes]
    rows = []
    for run, n_seeds in seeds.items():
        row: dict = {"run": run, "seeds": n_seeds}
        row.update({name: value.get((run, lang, d, m)) for name, lang, d, m in columns})
        for d in schemes:
            row[f"avg_f1{BUCC_SCHEMES[d]}"] = mean([value.get((run, c, d, "f1")) for c in langs])
        rows.append(row)
    schema = {
        "run": pl.String,
        "seeds": pl.Int64,
        **{name: pl.Float64 for name, _, _, _ in columns},
        **{f"avg_f1{BUCC_SCHEMES[d]}": pl.Float64 for d in schemes},
    }
    return with_devices(pl.DataFrame(rows, schema=schema), results_devices(frames))


# Marks a mined language (and the averages over it) whose margin read fewer neighbours than k.
LOWERED_K = "†"


def bucc_lowered(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> list[str]:
    """The languages of a split whose margin read fewer neighbours than
    `evaluate.bucc.mining.k` (fewer sentences than k on a side), for any run."""
    lowered = load_results(frames).filter(pl.col("metric") == "k")
    return sorted(lowered["lang"].unique())


def bucc_notes(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> list[str]:
    """The mining table's footnote on the splits whose margin read fewer neighbours than
    `evaluate.bucc.mining.k` (fewer sentences than k on a side), with the k used."""
    results = load_results(frames)
    lowered = results.filter(pl.col("metric") == "k").sort("run", "lang", "direction")
    if lowered.is_empty():
        return []
    cells = ", ".join(
        f"{run} {lang} {direction} k = {int(k)}"
        for run, lang, direction, k in lowered.select("run", "lang", "direction", "value")
        .unique(maintain_order=True)
        .rows()
    )
    return [
        f"{LOWERED_K} Fewer sentences than the margin's k on a side, so every sentence was a "
        f"neighbour: {cells}. Lower evaluate.bucc.mining.k or mine larger sets."
    ]


def write_bucc_table(
    table: pl.DataFrame,
    out_csv: Path,
    *,
    digits: int = 1,
    notes: Sequence[str] = (),
    lowered: Collection[str] = (),
) -> None:
    """Write the mining table (`bucc_table`) to `out_csv` and its `.md`, with `notes`
    (`bucc_notes`); the Markdown marks the columns of the `lowered` languages (`bucc_lowered`)
    and the averages over them."""
    scores = [c for c in table.columns if c not in ("run", "seeds", *DEVICE_COLUMNS)]
    langs = [c.split("_")[0] for c in scores]
    covered = {c: [c.split("_")[0]] if c.split("_")[0] != "avg" else langs for c in scores}
    write_table(
        table,
        out_csv,
        digits=digits,
        notes=[*notes, *devices_notes(table)],
        shown=table.rename(marked(table, covered, lowered, LOWERED_K)),
        caption="Bitext mining (BUCC protocol): precision, recall and F1 (%) per language on "
        "the test split, at the margin threshold chosen on the threshold split's gold; "
        "`_f1_oracle` at the test split's own best threshold (XTREME's and DAP Table 2's "
        "numbers), `_f1_pivot` at the pivot language's threshold (dual-pivot Table 6); "
        "seeds averaged.",
    )
