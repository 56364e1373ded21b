"""The hard-negative stage in the DAG (a dry run of the demo's config with hard-negative runs):
one mining job per language for each model the runs start from and each training pool they
draw from, shared by the runs that have both in common; none for the runs without."""

from __future__ import annotations

import pytest
from support import demo_config, planned_jobs, write_config

from xlsent import languages

pytestmark = pytest.mark.workflow


def test_each_start_and_pool_is_mined_once_for_the_runs_that_read_it(tmp_path):
    config = demo_config()
    mlm = config["runs"]["mlm"]
    config["runs"] = {
        "mlm": mlm,
        "tr": {"method": "tr", "model": "tiny", "seeds": [42], "init_from": "mlm"},
        # The same start and pool, so one stage: mlm's model, every pair.
        "tr-hard": {**config["runs"]["tr"], "train": {"hard_negatives": 2}},
        "tr-hard-margin": {
            **config["runs"]["tr"],
            "train": {"hard_negatives": 1, "tr_margin": 0.3, "direction": "both"},
        },
        # Another pool of the same start: 300 pairs a language.
        "tr-hard-300": {**config["runs"]["tr"], "train": {"hard_negatives": 2, "max_pairs": 300}},
    }
    config["tables"].update(ablation={"runs": []}, compare={"pairs": []})
    targets = [f"results/models/{run}/seed42" for run in config["runs"]]
    planned = planned_jobs(tmp_path, write_config(tmp_path / "config.yaml", config), *targets)
    langs = len(languages.resolve(config["languages"]))
    # The encoding jobs follow the sample checkpoint (their shards); the mining jobs are known.
    assert planned["hard_negatives"] == 2 * langs
    assert planned["train"] == 5
    without = {
        **config,
        "runs": {run: config["runs"][run] for run in ("mlm", "tr")},
    }
    planned = planned_jobs(tmp_path, write_config(tmp_path / "plain.yaml", without), *targets[:2])
    assert "hard_negatives" not in planned
