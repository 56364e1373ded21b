"""The dual-pivot transfer table (`tables_transfer`): Tatoeba on each run's pivot language
and over the others."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from xlsent.evaluate.results import load_results
from xlsent.tables.devices import devices_notes, results_devices, with_devices
from xlsent.tables.seeds import mean, seed_means
from xlsent.tables.write import BLANK, write_table


def transfer_table(
    frames: Sequence[pl.DataFrame | str | os.PathLike[str]],
    pivots: dict[str, str],
    trained: list[str],
    groups: Mapping[str, Sequence[str]],
) -> pl.DataFrame:
    """The dual-pivot paper's transfer (its Tables 3–4): one row per run of `pivots` (in that
    order), Tatoeba accuracy (both directions averaged, seeds averaged) on the run's pivot
    language, and averaged over the other languages: those trained on (`trained`, the
    corpus's languages, pivot excepted) and those of each of `groups` (name → languages;
    pivot excepted). A column whose languages were not all evaluated for the run is blank.
    Last, the run's devices (`xlsent.tables.devices.COLUMNS`)."""
    cells, seeds = seed_means(load_results(frames))
    value = {(run, lang): v for run, lang, d, v in cells.rows() if d == "mean"}
    absent = [run for run in pivots if run not in seeds]
    if absent:
        raise ValueError(f"no Tatoeba results for the transfer runs {absent}")
    rows = []
    for run, pivot in pivots.items():
        row = {
            "run": run,
            "seeds": seeds[run],
            "pivot": pivot,
            "pivot_acc": value.get((run, pivot)),
        }
        for name, codes in {"trained": trained, **groups}.items():
            row[name] = mean([value.get((run, c)) for c in codes if c != pivot])
        rows.append(row)
    schema = {
        "run": pl.String,
        "seeds": pl.Int64,
        "pivot": pl.String,
        **dict.fromkeys(["pivot_acc", "trained", *groups], pl.Float64),
    }
    return with_devices(pl.DataFrame(rows, schema=schema), results_devices(frames))


def write_transfer_table(table: pl.DataFrame, out_csv: Path, *, digits: int = 1) -> None:
    write_table(
        table,
        out_csv,
        digits=digits,
        caption="Transfer from one pivot pair (dual-pivot, Tien and Steinert-Threlkeld 2022): "
        "Tatoeba accuracy (%), both directions and seeds averaged, on the pivot language "
        "(`pivot_acc`) and over the other languages: those trained on (`trained`) and each "
        f"group's, the pivot left out. {BLANK}: a language of the column was not evaluated.",
        notes=devices_notes(table),
    )
