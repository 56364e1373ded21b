"""`corpus.source: opus`: the Moses zips of the OPUS corpora that the manifest lists.

The reader is `xlsent.corpus.readers.opus`; this module declares a language's zips (those of
`corpus.opus.corpora` that offer it, as the `opus_download` rule writes them), passes them to
the clean job by corpus name, and checks the manifest before any job runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from xlsent.arguments import lang_paths
from xlsent.corpus.sources.base import Shipped, Source
from xlsent.failures.errors import ConfigError, not_found

if TYPE_CHECKING:
    from xlsent.corpus.bitext import Bitext


class Opus(Source):
    name = "opus"

    def inputs(
        self, config: dict, lang: str, *, shipped: Shipped, downloads: str
    ) -> dict[str, str]:
        """The zip of each corpus that offers `lang`, by corpus name: `opus_download`'s output
        `{downloads}/{corpus}/{lang}.zip`, so planning the clean job plans the downloads."""
        from xlsent.corpus.readers import opus

        settings = config["corpus"]["opus"]
        manifest = opus.load_manifest(shipped(settings["manifest"]))
        return {
            archive.corpus: f"{downloads}/{archive.corpus}/{lang}.zip"
            for archive in opus.archives(manifest, lang, _corpora(settings, lang))
        }

    def clean_args(self, config: dict, inputs: Mapping[str, str], *, shipped: Shipped) -> list[str]:
        """The manifest (for each corpus's OPUS code of the language) and the zips."""
        zips = [f"{corpus}={path}" for corpus, path in inputs.items()]
        return ["--manifest", shipped(config["corpus"]["opus"]["manifest"]), "--zip", *zips]

    def add_arguments(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--manifest", help="corpus.opus.manifest")
        group.add_argument(
            "--zip", nargs="*", default=[], help="CORPUS=PATH of each downloaded OPUS zip"
        )

    def bitexts(self, lang: str, args: argparse.Namespace) -> list[Bitext]:
        from xlsent.corpus.readers import opus

        manifest = opus.load_manifest(args.manifest)
        zips = lang_paths(args.zip)  # CORPUS=PATH
        return [
            opus.bitext_from_zip(zips[archive.corpus], archive.corpus, lang, archive.opus_code)
            for archive in opus.archives(manifest, lang, list(zips))
        ]

    def check(self, config: dict, langs: list[str], *, shipped: Shipped) -> None:
        """The OPUS manifest, its corpora and a corpus for every language: what planning the
        downloads reads, one language at a time."""
        from xlsent.corpus.bitext import CorpusError
        from xlsent.corpus.readers import opus

        settings = config["corpus"]["opus"]
        path = Path(shipped(settings["manifest"]))
        if not path.is_file():
            raise ConfigError(
                f"config key `corpus.opus.manifest`: {not_found(path, 'file')}: point it at a "
                "manifest laid out like resources/opus.yaml"
            )
        try:
            manifest = opus.load_manifest(path)
        except CorpusError as err:
            raise ConfigError(f"config key `corpus.opus.manifest`: {err}") from None
        unknown = [name for name in settings["corpora"] if name not in manifest.corpora]
        if unknown:
            raise ConfigError(
                f"config key `corpus.opus.corpora`: {', '.join(unknown)} not in the OPUS "
                f"manifest {path}, which lists {', '.join(manifest.corpora)}: fix the name "
                "(OPUS's spelling, case included) or add the corpus to the manifest"
            )
        skipped = [name for name in settings["skip"] if name not in settings["corpora"]]
        if skipped:
            raise ConfigError(
                f"config key `corpus.opus.skip`: {', '.join(skipped)} not in "
                f"`corpus.opus.corpora` ({', '.join(settings['corpora'])}): fix the name"
            )
        uncovered = [
            lang
            for lang in langs
            if not any(
                lang in manifest.corpora[name].languages for name in _corpora(settings, lang)
            )
        ]
        if uncovered:
            names = ", ".join(uncovered)
            raise ConfigError(
                f"config key `languages`: no corpus of `corpus.opus.corpora` in the OPUS "
                f"manifest {path} offers {names}: add them to a corpus's languages there if "
                f"OPUS has them, use the local source (corpus.local.dir) for them, or remove "
                f"{names} from `languages`"
            )


def _corpora(settings: dict, lang: str) -> list[str]:
    """The corpora of `corpus.opus.corpora` that `lang` is taken from (not skipped for it)."""
    return [name for name in settings["corpora"] if lang not in settings["skip"].get(name, ())]


SOURCE = Opus()
