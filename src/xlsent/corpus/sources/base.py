"""The contract of a corpus source: what the workflow, the CLI and the config checks ask it.

A source is where a language's raw parallel text comes from (OPUS zips, a directory of Moses
files, the embedded demo data). The `clean` rule and `xlsent clean` are the same for every
source; what differs is declared by the source, in one class:

- `inputs`: the raw files `clean` reads for a language, named. They are the rule's inputs, so
  a changed file reruns its language's cleaning (and only that).
- `clean_args` and `add_arguments`: the flags the rule passes to `xlsent clean` and the
  parser's side of the same flags; `bitexts` turns the parsed flags into the `Bitext`s the job
  cleans. The flags carry what the job needs to find and read its data; they are not compared
  for staleness (the rule's `args` param reads `input`, which makes Snakemake skip it).
- `identity`: what besides the input files decides the raw pairs (settings, package
  versions). The rule's `identity` param: when it changes, the cleaned output is stale.
- `check`: the config-time checks of the files the source's settings name, run before any job
  (`xlsent.config.check_paths`), so a missing file is one message naming its key.
- `stats`: what `clean_stats.json` records of the data's origin beyond the counts.

The readers themselves live beside this package (`xlsent.corpus.readers.opus`, `.local`, `.demo`);
a source adapts one of them. Its methods import their reader when called: every `xlsent`
command builds the `clean` parser, and the readers pull in pyarrow and requests.

Where the workflow keeps files is not configuration and not the source's to decide: the
workflow passes it in (`shipped` finds a file the workflow may ship, such as the OPUS
manifest; `downloads` is the directory its download rule writes this source's files to).
"""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from xlsent.corpus.bitext import Bitext

# A config path of a file the workflow may ship, as the workflow finds it: as given if it
# exists there or is absolute, else under the workflow's directory (common.smk's `shipped()`).
Shipped = Callable[[str], str]


class Source(ABC):
    """One corpus source. Its settings are the config block `corpus.<name>`, and `name` is
    a value of the schema's `corpus.source` enum (a test keeps the two equal)."""

    name: ClassVar[str]

    @abstractmethod
    def inputs(
        self, config: dict, lang: str, *, shipped: Shipped, downloads: str
    ) -> dict[str, str]:
        """The raw files `clean` reads for `lang`, by a name unique to the language; `{}`
        for data that no file of the workflow holds (the embedded demo)."""

    @abstractmethod
    def clean_args(self, config: dict, inputs: Mapping[str, str], *, shipped: Shipped) -> list[str]:
        """The arguments of `xlsent clean` that select and locate the data, given the job's
        `inputs` (as `inputs` declared them); the rule passes `--lang` and `--source`."""

    @abstractmethod
    def add_arguments(self, group: argparse._ArgumentGroup) -> None:
        """Add the flags `clean_args` gives to the clean parser's group for this source.

        All sources' flags share the parser: a flag that carries a setting has no default
        (the schema holds it) and is not required (other sources do not pass it); `bitexts`
        checks what it needs (`xlsent.arguments.require`).
        """

    @abstractmethod
    def bitexts(self, lang: str, args: argparse.Namespace) -> list[Bitext]:
        """The bitexts of `lang` that the clean job reads, from the parsed flags."""

    def identity(self, config: dict) -> dict[str, Any]:
        """What besides the input files decides the raw pairs: by default the source's config
        block. Snakemake compares its repr with the last run's, so keep it stable: a change
        of form reruns every language's cleaning once."""
        return {self.name: config["corpus"][self.name]}

    def check(self, config: dict, langs: list[str], *, shipped: Shipped) -> None:  # noqa: B027
        """Raise `xlsent.config.ConfigError` naming the key when a file or directory the
        settings name is missing or lacks a language of `langs`; nothing to check by
        default."""

    def stats(self) -> dict[str, Any]:
        """Entries `clean_stats.json` adds to the cleaning counts; none by default."""
        return {}
