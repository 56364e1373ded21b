"""`corpus.source: local`: a directory of Moses files named as OPUS names them.

The reader is `xlsent.corpus.readers.local`; this module declares the files it reads for a language
(both sides of each corpus found, or of `corpus.local.corpora`) and checks the directory
before any job runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from xlsent.corpus.sources.base import Shipped, Source
from xlsent.errors import ConfigError, not_found

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
        """Every language's Moses files in `corpus.local.dir`, all languages named at once.

        The workflow itself finds them only when it plans a language's `clean` job: the first
        language it reaches stops it (with a traceback), and a target that needs only other
        languages (`results/align/eflomal/de/_SUCCESS`) plans and runs without ever looking.
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
        without, broken = [], []
        for lang in langs:
            try:
                local.discover(path, lang, corpora)
            except CorpusError as err:
                if _has_files(path, lang, corpora):
                    broken.append(err)
                else:
                    without.append(lang)
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
