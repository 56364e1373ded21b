"""`corpus.source: local`: a directory of Moses files named as OPUS names them.

The reader is `xlsent.corpus.readers.local`; this module declares the files it reads for a language
(both sides of each corpus found, or of `corpus.local.corpora`) and checks the directory
before any job runs.
"""

from __future__ import annotations

import argparse
import gzip
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from xlsent.corpus.sources.base import Shipped, Source
from xlsent.failures.errors import ConfigError, not_found

if TYPE_CHECKING:
    from xlsent.corpus.bitext import Bitext


class Local(Source):
    name = "local"

    def inputs(
        self, config: dict, lang: str, *, shipped: Shipped, downloads: str
    ) -> dict[str, str]:
        """Both sides of each corpus, as `{corpus}.en` and `{corpus}.{lang}`."""
        from xlsent.corpus.readers import local

        settings = config["corpus"]["local"]
        return {
            f"{b.corpus}.{side}": path
            for b in local.discover(settings["dir"], lang, settings["corpora"])
            for side, path in (("en", b.en_origin), (lang, b.xx_origin))
        }

    def clean_args(self, config: dict, inputs: Mapping[str, str], *, shipped: Shipped) -> list[str]:
        """The directory and the corpora: the job finds the same files again by name."""
        settings = config["corpus"]["local"]
        corpora = settings["corpora"]
        return ["--local-dir", settings["dir"], *(["--corpora", *corpora] if corpora else [])]

    def add_arguments(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--local-dir", help="corpus.local.dir")
        group.add_argument("--corpora", nargs="*", help="corpus.local.corpora (default: all)")

    def bitexts(self, lang: str, args: argparse.Namespace) -> list[Bitext]:
        from xlsent.corpus.readers import local

        return local.discover(args.local_dir, lang, args.corpora)

    def check(self, config: dict, langs: list[str], *, shipped: Shipped) -> None:
        """Every language's Moses files in `corpus.local.dir`, none of them empty, all
        languages named at once.

        The workflow itself finds them only when it plans a language's `clean` job: the first
        language it reaches stops it (with a traceback), and a target that needs only other
        languages (`results/align/eflomal/de/_SUCCESS`) plans and runs without ever looking.
        An empty file stopped its language only after the jobs before its `sample`, with
        advice about the cleaning filters.
        """
        from xlsent.corpus.bitext import CorpusError
        from xlsent.corpus.readers import local

        directory, corpora = config["corpus"]["local"]["dir"], config["corpus"]["local"]["corpora"]
        path = Path(directory)
        if not path.is_dir():
            raise ConfigError(
                f"config key `corpus.local.dir`: {not_found(directory, 'directory')}: point it "
                "at the directory that holds the Moses files ({corpus}.{a}-{b}.{lang}[.gz])"
            )
        without, broken, empty = [], [], {}
        for lang in langs:
            try:
                bitexts = local.discover(path, lang, corpora)
            except CorpusError as err:
                if _has_files(path, lang, corpora):
                    broken.append(err)
                else:
                    without.append(lang)
                continue
            sides = [side for b in bitexts for side in (b.en_origin, b.xx_origin)]
            if names := [Path(side).name for side in sides if _empty(side)]:
                empty[lang] = names
        if without:
            names = ", ".join(without)
            corpus, which = "{corpus}", " ({corpus} any corpus name, e.g. Tanzil)"
            if corpora and len(corpora) == 1:
                corpus, which = corpora[0], ""
            elif corpora:
                which = f" ({{corpus}} each of `corpus.local.corpora`: {', '.join(corpora)})"
            expected = ", ".join(
                f"{corpus}.{local.pair_name(lang)}.en and .{lang}" for lang in without
            )
            raise ConfigError(
                f"config key `corpus.local.dir`: {directory} has no corpus files for {names}: "
                f"expected {expected}{which}, plain or .gz, the pair's codes in alphabetical "
                f"order; put them there or remove {names} from `languages`"
            )
        if broken:
            raise ConfigError(f"config key `corpus.local.dir`: {broken[0]}")
        if empty:
            listed = "; ".join(f"{lang}: {', '.join(names)}" for lang, names in empty.items())
            raise ConfigError(
                f"config key `corpus.local.dir`: {directory} holds empty corpus files, without "
                f"a line to clean ({listed}): copy their text there again, or remove them (and "
                "a language left without a corpus from `languages`)"
            )


def _empty(path: str) -> bool:
    """Whether the Moses file `path` holds no text (a .gz one once decompressed). A file that
    does not read is its clean job's to name, with the fix (a truncated gzip, a permission)."""
    try:
        if path.endswith(".gz"):
            with gzip.open(path) as f:
                return f.read(1) == b""
        return os.path.getsize(path) == 0
    except (OSError, EOFError):
        return False


def _has_files(directory: Path, lang: str, corpora: list[str] | None) -> bool:
    """Whether `directory` holds either side of `lang`'s pair (of `corpora`, if given): a
    language with none is to be added or removed, one with a side missing is `discover`'s
    own message."""
    from xlsent.corpus.readers import local

    pair = local.pair_name(lang)
    sides = [f"{pair}.{side}{gz}" for side in ("en", lang) for gz in ("", ".gz")]
    if corpora is None:
        return any(next(directory.glob(f"*.{side}"), None) for side in sides)
    return any((directory / f"{corpus}.{side}").exists() for corpus in corpora for side in sides)


SOURCE = Local()
