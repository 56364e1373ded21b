"""The pipeline on the real layouts: OPUS-style Moses files and the LASER Tatoeba test set.

Trains a small scratch model on `../shared/data/l10n` (software localization strings,
English-centric) for a few languages, kk and te among them, and evaluates it on the real
Tatoeba files in `../shared/data/tatoeba/v1`.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from support import SHARED, demo_config, snakemake, write_config

pytestmark = [
    pytest.mark.workflow,
    pytest.mark.shared,
    pytest.mark.skipif(
        not (SHARED / "l10n").is_dir() or not (SHARED / "tatoeba" / "v1").is_dir(),
        reason=f"needs the real data sets in {SHARED} (l10n and tatoeba/v1) beside the checkout",
    ),
]

LANGS = ["de", "kk", "te", "sw"]


def test_l10n_corpus_and_real_tatoeba(tmp_path):
    config = demo_config()
    config["languages"] = LANGS
    config["corpus"] = {
        "source": "local",
        "local": {"dir": str(SHARED / "l10n")},
        # Interface strings are short (4-8 words); DAP's ≤3-token filter would drop most.
        "clean": {"min_tokens": 2},
        "max_pairs": 3000,
        "dev_pairs": 200,
        # sw has 36 pairs: below the minimum, kept (and marked) instead of stopping the run.
        "min_pairs_action": "warn",
    }
    # TR and WACSE: the word-level objectives on eflomal links of the real corpus.
    # From scratch: the demo's mlm run, which they start from, is left out.
    config["runs"] = {run: {**config["runs"][run], "init_from": None} for run in ("tr", "wacse")}
    config["train"].update(max_steps=150, eval_every=50, checkpoint_every=50)
    config["evaluate"] = {"tatoeba": {"dir": str(SHARED / "tatoeba" / "v1")}}
    config["tables"] = {"groups": ["low4"]}
    configfile = write_config(tmp_path / "config.yaml", config)
    snakemake(
        tmp_path,
        "results/tables/tatoeba.csv",
        "--cores",
        "2",
        "--max-threads",
        "1",
        "--configfile",
        str(configfile),
    )

    results = tmp_path / "results"
    for lang in LANGS:
        stats = json.loads((results / f"corpus/{lang}/clean_stats.json").read_text())
        assert stats["sources"]["l10n"]["origin"].endswith(f".{lang}.gz")
        sample = json.loads((results / f"corpus/{lang}/sample_stats.json").read_text())
        assert sample["train"] == min(3000, stats["kept"] - sample["dev"])
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
    assert set(per_language.columns) == {"run", *LANGS}
    # low4 needs jv and ka too: left blank, and the markdown says why.
    assert pl.read_csv(results / "tables/tatoeba.csv")["low4"].is_null().all()
    markdown = (results / "tables/tatoeba.md").read_text()
    assert "no Tatoeba result for ka, jv" in markdown
    assert (
        "| all* |" in markdown and "Trained on fewer pairs than the minimum (sw: train" in markdown
    )
    assert "| sw* |" in (results / "tables/tatoeba_langs.md").read_text()
