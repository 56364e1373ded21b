"""A local directory of Moses files named as OPUS names them: `{corpus}.{a}-{b}.{lang}[.gz]`.

`{a}-{b}` is the language pair in alphabetical order (`Europarl.de-en.de`, `Tanzil.en-kk.kk`).
This is the source for air-gapped clusters: unzip OPUS downloads (or anything laid out the
same way) into one directory and point `corpus.local.dir` at it.
"""

from __future__ import annotations

from pathlib import Path

from xlsent.corpus.bitext import Bitext, CorpusError, moses_files
from xlsent.io import file_error


def pair_name(lang: str) -> str:
    """The OPUS name of the English pair of `lang`: codes in alphabetical order."""
    return "-".join(sorted(("en", lang)))


def _side(directory: Path, corpus: str, pair: str, lang: str) -> Path | None:
    for name in (f"{corpus}.{pair}.{lang}", f"{corpus}.{pair}.{lang}.gz"):
        if (directory / name).is_file():
            return directory / name
    return None


def discover(directory: str | Path, lang: str, corpora: list[str] | None = None) -> list[Bitext]:
    """All bitexts for `lang` in `directory`, by corpus name; or `corpora`, in that order.

    The order matters: ids follow it, and of duplicates across corpora the first is kept.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise CorpusError(
            f"corpus.local.dir {str(directory)!r} is not a directory: point it at the folder "
            "that holds the Moses files"
        )
    pair = pair_name(lang)
    try:
        paths = list(directory.iterdir())
    except OSError as err:
        error = file_error(err, directory, "list corpus.local.dir", CorpusError)
        if error is None:
            raise
        raise error from err
    found = set()
    for path in paths:
        name = path.name.removesuffix(".gz")
        corpus, sep, rest = name.partition(f".{pair}.")
        if sep and rest in ("en", lang):
            found.add(corpus)
    names = sorted(found) if corpora is None else list(dict.fromkeys(corpora))
    bitexts = []
    for corpus in names:
        en, xx = _side(directory, corpus, pair, "en"), _side(directory, corpus, pair, lang)
        if en is None or xx is None:
            missing = f"{corpus}.{pair}.{'en' if en is None else lang}[.gz]"
            raise CorpusError(
                f"{directory}: {missing} is missing; each corpus needs both sides "
                f"({corpus}.{pair}.en and {corpus}.{pair}.{lang}, plain or .gz)"
            )
        bitexts.append(moses_files(corpus, en, xx))
    if not bitexts:
        raise CorpusError(
            f"{directory} has no corpus for {lang}: expected files named "
            f"{{corpus}}.{pair}.en and {{corpus}}.{pair}.{lang} (plain or .gz), e.g. "
            f"Tanzil.{pair}.{lang}; or remove {lang!r} from `languages`"
        )
    return bitexts
