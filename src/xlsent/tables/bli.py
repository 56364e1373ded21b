"""The word translation table (`tables_bli`: BLI, the MUSE protocol)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from xlsent.evaluate.results import load_results
from xlsent.languages import LANGUAGES
from xlsent.tables.devices import devices_notes, results_devices, with_devices
from xlsent.tables.seeds import refuse_duplicates, seed_averaged
from xlsent.tables.write import write_table

BLI_METRICS = tuple(f"p@{k}_{method}" for method in ("nn", "csls") for k in (1, 5, 10))
BLI_DIRECTIONS = ("en2xx", "xx2en")


def bli_table(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> tuple[pl.DataFrame, dict]:
    """Word translation (BLI): one row per run, in order of appearance, and the query counts.

    Columns: `run`, `seeds`, then per language (language-table order) and direction (en2xx,
    xx2en) the P@k of each retrieval, `{lang}_{direction}_{metric}` with metric `p@1_nn`,
    `p@5_nn`, `p@10_nn`, `p@1_csls`, … (percent, seeds averaged; null where the run was not
    evaluated), then `{lang}_{direction}_n`, the test words the run kept after the vocabulary
    filter; last, the run's devices (`xlsent.tables.devices.COLUMNS`: word vectors, a CPU's
    fp32). The counts: {(run, lang, direction): queries} (dictionary source words with a
    translation in both vocabularies; seeds averaged).
    Refuses duplicated results and cells that only some of a run's seeds have.
    """
    results = load_results(frames)
    tasks = results["task"].unique().to_list()
    if tasks != ["bli"]:
        raise ValueError(f"expected BLI results (task 'bli'), got tasks {sorted(tasks)}")
    refuse_duplicates(results, ["run", "seed", "lang", "direction", "metric"])
    cells, seeds, partial = seed_averaged(
        results,
        ["run", "lang", "direction", "metric"],
        pl.col("value").mean(),
        pl.col("n").mean(),
    )
    if partial:
        run, lang, direction = (partial[0][key] for key in ("run", "lang", "direction"))
        raise ValueError(
            f"run {run!r} has {lang} {direction} BLI results from only some of its "
            f"{seeds[run]} seeds: evaluate every seed of a run on the same dictionaries"
        )
    value = {(r, lang, d, m): v for r, lang, d, m, v, _ in cells.rows()}
    queries = {(r, lang, d): n for r, lang, d, _, _, n in cells.rows()}
    langs = sorted(
        cells["lang"].unique(maintain_order=True),
        key=lambda c: list(LANGUAGES).index(c) if c in LANGUAGES else len(LANGUAGES),
    )
    metrics = [m for m in BLI_METRICS if m in set(cells["metric"])]
    metrics += sorted(set(cells["metric"]) - set(metrics))
    columns = [
        (lang, d, m)
        for lang in langs
        for d in BLI_DIRECTIONS
        if any((r, lang, d) in queries for r in seeds)
        for m in [*metrics, "n"]
    ]
    rows = [
        {
            "run": run,
            "seeds": n_seeds,
            **{
                f"{lang}_{d}_{m}": queries.get((run, lang, d))
                if m == "n"
                else value.get((run, lang, d, m))
                for lang, d, m in columns
            },
        }
        for run, n_seeds in seeds.items()
    ]
    schema = {
        "run": pl.String,
        "seeds": pl.Int64,
        **{f"{lang}_{d}_{m}": pl.Float64 for lang, d, m in columns},
    }
    return with_devices(pl.DataFrame(rows, schema=schema), results_devices(frames)), queries


def write_bli_table(table: pl.DataFrame, queries: dict, out_csv: Path, *, digits: int = 1) -> None:
    """Write the BLI table (`bli_table`) to `out_csv` and its `.md`, the query counts as notes."""
    notes = [
        "Test words kept after the vocabulary filter (`_n`: test dictionary source words with "
        "a translation, both in the run's vocabularies): "
        + "; ".join(f"{run} {lang} {d} {n:.0f}" for (run, lang, d), n in queries.items())
        + ".",
        *devices_notes(table),
    ]
    write_table(
        table,
        out_csv,
        digits=digits,
        caption="Word translation (BLI, MUSE protocol): P@k (%) by nearest neighbour (`nn`) "
        "and CSLS (`csls`), per language and direction (`en2xx`: English words query the "
        "foreign vocabulary); seeds averaged.",
        notes=notes,
    )
