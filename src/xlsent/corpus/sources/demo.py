"""`corpus.source: demo`: real human translations read offline from installed packages.

The reader is `xlsent.corpus.readers.demo`. No file of the workflow holds the data, so there are no
inputs: the installed packages' versions (`demo.provenance()`) and the held-out fraction are
its identity, and a `pip install` of another Babel or Django reruns the cleaning.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from xlsent.arguments import require
from xlsent.corpus.sources.base import Shipped, Source

if TYPE_CHECKING:
    from xlsent.corpus.bitext import Bitext


class Demo(Source):
    name = "demo"

    def inputs(
        self, config: dict, lang: str, *, shipped: Shipped, downloads: str
    ) -> dict[str, str]:
        return {}

    def clean_args(self, config: dict, inputs: Mapping[str, str], *, shipped: Shipped) -> list[str]:
        """The held-out fraction: the job trains on the rest."""
        return ["--heldout-fraction", str(config["corpus"]["demo"]["heldout_fraction"])]

    def add_arguments(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--heldout-fraction", type=float, help="corpus.demo.heldout_fraction")

    def bitexts(self, lang: str, args: argparse.Namespace) -> list[Bitext]:
        from xlsent.corpus.readers import demo

        require(args, "with --source demo", "heldout_fraction")
        return demo.bitexts(lang, args.heldout_fraction)

    def identity(self, config: dict) -> dict[str, Any]:
        """The held-out fraction (not `heldout_max_pairs`, which only the test set takes) and
        the installed packages' versions, the data's identity."""
        from xlsent.corpus.readers import demo

        return {
            "demo": config["corpus"]["demo"]["heldout_fraction"],
            "provenance": demo.provenance(),
        }

    def stats(self) -> dict[str, Any]:
        """The packages' versions, so a cleaned corpus says which data it was made from."""
        from xlsent.corpus.readers import demo

        return {"provenance": demo.provenance()}


SOURCE = Demo()
