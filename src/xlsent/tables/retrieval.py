"""The sentence retrieval table of held-out pairs (`tables_retrieval`, Bi-Sent2vec §4.3)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from xlsent.evaluate.results import load_results
from xlsent.tables.devices import COLUMNS as DEVICE_COLUMNS
from xlsent.tables.devices import devices_notes, results_devices, with_devices
from xlsent.tables.tatoeba import DIRECTIONS, tatoeba_tables
from xlsent.tables.write import BLANK, marked, scarce_note, write_table

RETRIEVAL_DIRECTIONS = ("mean", *DIRECTIONS)


def retrieval_table(
    frames: Sequence[pl.DataFrame | str | os.PathLike[str]],
    groups: Mapping[str, Sequence[str]],
    scarce: dict[str, str] | None = None,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Sentence retrieval among held-out pairs (Bi-Sent2vec §4.3): one row per run, in order
    of appearance, and the pairs of each language.

    Columns: `run`, `seeds`; per group of `groups` and `all` (every language retrieved for
    the run) the average of the languages' mean of both directions, then `{group}_xx2en`
    and `{group}_en2xx` (as `tatoeba_tables`' summary); per language (language-table order)
    `{lang}` (the mean of both directions), `{lang}_xx2en` and `{lang}_en2xx`; `missing` and
    `scarce` as in `tatoeba_tables`; the run's devices (`xlsent.tables.devices.COLUMNS`).
    P@1 in percent, seeds averaged. The pairs: {lang: n}, the largest count of any run (every
    run retrieves among the same pairs).
    """
    results = load_results(frames)
    tasks = results["task"].unique().to_list()
    if tasks != ["retrieval"]:
        raise ValueError(f"expected retrieval results (task 'retrieval'), got {sorted(tasks)}")
    summary, per_language = tatoeba_tables([results], groups, scarce, RETRIEVAL_DIRECTIONS)
    # The devices come from the files (a data frame records none), after every other column.
    scores = [c for c in summary.columns if c not in ("missing", "scarce", *DEVICE_COLUMNS)]
    per_language = per_language.drop(DEVICE_COLUMNS)
    table = summary.select(scores).join(per_language, on="run", how="left", maintain_order="left")
    table = with_devices(table.hstack(summary.select("missing", "scarce")), results_devices(frames))
    most = dict(results.group_by("lang").agg(pl.col("n").max()).rows())
    return table, {lang: most[lang] for lang in table.columns if lang in most}


def write_retrieval_table(
    table: pl.DataFrame,
    pairs: Mapping[str, int],
    out_csv: Path,
    groups: Mapping[str, Sequence[str]],
    *,
    digits: int = 1,
    scarce: dict[str, str] | None = None,
) -> None:
    """Write the retrieval table (`retrieval_table`) to `out_csv` (every column) and its
    `.md`: the group averages and each language's mean of both directions, marked where a
    language trained on fewer pairs than the minimum, with the pairs per language as a note."""
    used = {lang for text in table["scarce"].drop_nulls() for lang in text.split()}
    scarce = {lang: text for lang, text in (scarce or {}).items() if lang in used}
    names = [*groups, "all"]
    langs = [c for c in table.columns if c in pairs]
    shown = table.select("run", "seeds", *names, "all_xx2en", "all_en2xx", *langs, *DEVICE_COLUMNS)
    covered: dict[str, list[str]] = {name: list(groups[name]) for name in groups}
    covered.update({name: sorted(used) for name in ("all", "all_xx2en", "all_en2xx")})
    covered.update({lang: [lang] for lang in langs})
    notes = [
        f"{BLANK} Run `{run}` has no result for {missing.replace(' ', ', ')}."
        for run, missing in table.select("run", "missing").rows()
        if missing
    ]
    notes.append(
        "Held-out pairs n per language (each sentence a query among the other side's n): "
        + ", ".join(f"{lang} {n}" for lang, n in pairs.items())
        + "."
    )
    write_table(
        table,
        out_csv,
        digits=digits,
        caption="Sentence retrieval among held-out pairs (Bi-Sent2vec §4.3): P@1 (%) of each "
        "sentence's translation among the other side's held-out sentences, the mean of xx→en "
        "and en→xx (the CSV has each direction), seeds averaged. Word-vector runs: the "
        "tf-idf-weighted average of their word vectors; encoder runs: their sentence vectors.",
        notes=notes + scarce_note(scarce) + devices_notes(table),
        shown=shown.rename(marked(shown, covered, scarce)),
    )
