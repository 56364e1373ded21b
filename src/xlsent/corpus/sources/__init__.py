"""The corpus sources by name: what `corpus.source` and `xlsent clean --source` take.

Each source is one module of this package, a `Source` (the contract: `base.py`) adapting a
reader of `xlsent.corpus`. The workflow (corpus_inputs.smk), the clean command and the config checks
ask the registry, never a source by name. Adding a source takes its module, its entry here, its
name in the schema's `corpus.source` enum and its settings block `corpus.<name>` there (a test
keeps the enum and the registry equal).
"""

from __future__ import annotations

from xlsent.corpus.sources import demo, local, opus
from xlsent.corpus.sources.base import Shipped, Source

# In the schema's order: `xlsent clean --help` lists the sources' flags in this order.
SOURCES: dict[str, Source] = {
    source.name: source for source in (opus.SOURCE, local.SOURCE, demo.SOURCE)
}

__all__ = ["SOURCES", "Shipped", "Source"]
