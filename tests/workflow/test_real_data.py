"""The pipeline on the real layouts: OPUS-style Moses files and the LASER Tatoeba test set.

The workflow tests' l10n run (`l10n_run`, tests/workflow/conftest.py): small scratch models
trained with TR and WACSE on `../shared/data/l10n` (software localization strings,
English-centric) for a few languages, kk and te among them, evaluated on the real Tatoeba
files in `../shared/data/tatoeba/v1`.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from support import L10N_LANGS, SHARED, l10n_config

from xlsent.tables.devices import COLUMNS as DEVICES

pytestmark = [
    pytest.mark.workflow,
    pytest.mark.shared,
    pytest.mark.skipif(
        not (SHARED / "l10n").is_dir() or not (SHARED / "tatoeba" / "v1").is_dir(),
        reason=f"needs the real data sets in {SHARED} (l10n and tatoeba/v1) beside the checkout",
    ),
]


def test_l10n_corpus_and_real_tatoeba(l10n_run):
    results = l10n_run / "results"
    for lang in L10N_LANGS:
        stats = json.loads((results / f"corpus/{lang}/clean_stats.json").read_text())
        assert stats["sources"]["l10n"]["origin"].endswith(f".{lang}.gz")
        sample = json.loads((results / f"corpus/{lang}/sample_stats.json").read_text())
        assert sample["train"] == min(
            l10n_config()["corpus"]["max_pairs"], stats["kept"] - sample["dev"]
        )
    # sw has only 36 pairs: reported, trained on, evaluated, marked in the tables.
    sw = json.loads((results / "corpus/sw/sample_stats.json").read_text())
    assert sw["train"] < 36 and sw["below_min"] == {
        "train": [sw["train"], 500],
        "dev": [sw["dev"], 50],
    }

    for run in ("tr", "wacse"):
        evaluation = pl.read_parquet(results / f"eval/tatoeba/{run}/seed42.parquet")
        means = evaluation.filter(pl.col("direction") == "mean")
        # The real test set sizes, read through the explicit 3-letter mapping (sw -> swh).
        assert dict(means.select("lang", "n").iter_rows()) == {
            "de": 1000,
            "kk": 575,
            "te": 234,
            "sw": 390,
        }
    spans = json.loads((results / "wordspans/tiny/eflomal/kk.json").read_text())
    assert (
        spans["pairs"] == json.loads((results / "corpus/kk/sample_stats.json").read_text())["train"]
    )
    assert spans["links"] > spans["pairs"]  # interface strings: several links per pair
    per_language = pl.read_csv(results / "tables/tatoeba_langs.csv")
    assert set(per_language.columns) == {"run", *L10N_LANGS, *DEVICES}
    # low4 needs jv and ka too: left blank, and the markdown says why.
    assert pl.read_csv(results / "tables/tatoeba.csv")["low4"].is_null().all()
    markdown = (results / "tables/tatoeba.md").read_text()
    assert "no Tatoeba result for ka, jv" in markdown
    assert (
        "| all* |" in markdown and "Trained on fewer pairs than the minimum (sw: train" in markdown
    )
    assert "| sw* |" in (results / "tables/tatoeba_langs.md").read_text()
