"""The tables' files: each table as a CSV (full precision) and a Markdown table beside it,
with its caption and its notes: blanks, and the marks of languages that trained on fewer
pairs than the minimum."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Sequence
from pathlib import Path

import polars as pl

from xlsent.io import atomic_path
from xlsent.tables.devices import COLUMNS as DEVICE_COLUMNS

# What the Markdown tables print for a value that is missing (a group with a language not run).
BLANK = "–"


def _cell(value: object, digits: int) -> str:
    if value is None:
        return BLANK
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value).replace("|", r"\|")


def markdown(
    df: pl.DataFrame, *, digits: int = 1, caption: str | None = None, notes: Sequence[str] = ()
) -> str:
    """A Markdown table of `df` (floats with `digits` decimals, nulls as "–"), then `notes`."""
    numeric = [dtype.is_numeric() for dtype in df.dtypes]
    lines = [f"{caption}\n"] if caption else []
    lines.append("| " + " | ".join(df.columns) + " |")
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    lines += ["| " + " | ".join(_cell(v, digits) for v in row) + " |" for row in df.rows()]
    for note in notes:
        lines += ["", note]  # a blank line apart, or Markdown runs the notes together
    return "\n".join(lines) + "\n"


def write_table(
    df: pl.DataFrame,
    out_csv: Path,
    *,
    digits: int = 1,
    caption: str | None = None,
    notes: Sequence[str] = (),
    shown: pl.DataFrame | None = None,
) -> None:
    """Write `df` to `out_csv` (full precision) and beside it a `.md` table, both atomically.

    `shown` is what the Markdown shows (default `df`): fewer columns, marked headers. The
    devices' columns (`xlsent.tables.devices.COLUMNS`) stay in the CSV always, and leave the
    Markdown where no row records them (results from before the records: four blank columns
    would say nothing a reader can use).
    """
    out_csv = Path(out_csv)
    with atomic_path(out_csv) as tmp:
        df.write_csv(tmp, check_extension=False)
    shown = df if shown is None else shown
    blank = [
        c for c in DEVICE_COLUMNS if c in shown.columns and shown[c].null_count() == len(shown)
    ]
    if len(blank) == len(DEVICE_COLUMNS):
        shown = shown.drop(blank)
    with atomic_path(out_csv.with_suffix(".md")) as tmp:
        tmp.write_text(markdown(shown, digits=digits, caption=caption, notes=notes))


# Marks a language (and every average over it) that trained on fewer pairs than the minimum.
SCARCE = "*"


def scarce_languages(stats: Sequence[str | os.PathLike[str]]) -> dict[str, str]:
    """The languages that trained on fewer pairs than the minimum (the sample stage let them
    through with `corpus.min_pairs_action: warn`), from their sample statistics, as
    {lang: "train 32 < 500, dev 4 < 50"}."""
    scarce = {}
    for path in stats:
        record = json.loads(Path(path).read_text())
        if record.get("below_min"):
            scarce[record["lang"]] = ", ".join(
                f"{split} {n} < {minimum}" for split, (n, minimum) in record["below_min"].items()
            )
    return scarce


def scarce_note(scarce: dict[str, str]) -> list[str]:
    """The footnote of the languages `scarce_languages` found, if any."""
    if not scarce:
        return []
    detail = "; ".join(f"{lang}: {text}" for lang, text in scarce.items())
    return [
        f"{SCARCE} Trained on fewer pairs than the minimum ({detail}; corpus.min_train_pairs, "
        "corpus.min_dev_pairs): kept because corpus.min_pairs_action is warn. Their numbers "
        "and the averages over them say little."
    ]


def marked(
    df: pl.DataFrame, columns: dict[str, list[str]], scarce: Collection[str], mark: str = SCARCE
) -> dict:
    """Markdown headers: a column over a scarce language (a language, or a group holding one)
    gets the mark. `columns` maps each column to the languages it covers."""
    return {
        name: f"{name}{mark}" if any(lang in scarce for lang in langs) else name
        for name, langs in columns.items()
        if name in df.columns
    }
