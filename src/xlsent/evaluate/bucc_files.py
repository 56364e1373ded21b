"""Where the files of a split in BUCC's layout are (`xlsent.evaluate.bucc` reads them).

Per language xx and split, `{xx}-en.{split}.{xx}`, `{xx}-en.{split}.en` and
`{xx}-en.{split}.gold`, directly in a directory or in its `{xx}-en/` folder, as BUCC's
tarballs unpack. Names only, no data: the rule files (workflow/rules/evaluate_inputs.smk)
spell their inputs and outputs with them in the Snakemake process, which need not import
the mining (faiss) that reading and scoring a split take.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def file_name(lang: str, split: str, side: str) -> str:
    """`{lang}-en.{split}.{side}`, side one of `lang`, `en`, `gold`."""
    return f"{lang}-en.{split}.{side}"


def files_directory(files: Sequence[str | Path]) -> str:
    """The directory that holds BUCC-layout `files` (a rule's inputs or outputs): their own
    directory, or the one above their `{lang}-en/` folders, as the tarballs unpack."""
    first = Path(files[0])
    nested = first.parent.name == first.name.split(".")[0]
    return str(first.parent.parent if nested else first.parent)


def bucc_path(directory: str | Path, lang: str, split: str, side: str) -> Path:
    """Where a BUCC file of `directory` is: directly in it, or in its `{lang}-en/` folder (as
    the tarballs unpack); the first when neither exists."""
    name = file_name(lang, split, side)
    flat, nested = Path(directory) / name, Path(directory) / f"{lang}-en" / name
    return nested if not flat.exists() and nested.exists() else flat


def split_files(directory: str | Path, lang: str, split: str) -> list[Path]:
    """The three files of a split: foreign sentences, English sentences, gold pairs."""
    return [bucc_path(directory, lang, split, side) for side in (lang, "en", "gold")]
