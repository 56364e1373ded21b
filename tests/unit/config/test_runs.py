"""Runs that start from other runs (`init_from`) and dual-pivot runs: what the config alone
decides, checked before any job runs, each mistake named by its key with the fix."""

from __future__ import annotations

import pytest
from support import ROOT

from xlsent.config import (
    ConfigError,
    RunSeed,
    dualpivot_settings,
    init_source,
    max_positions,
    program_settings,
    run_max_length,
    validate,
)

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
TINY = {"init": "scratch", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4}


def _config(**runs) -> dict:
    """Scratch `tiny` with an mlm run (seeds 42 and 0) and the given runs."""
    return {
        "languages": ["de", "kk"],
        "models": {"tiny": TINY},
        "train": {"batch_size": 256},
        "runs": {"mlm": {"method": "mlm", "model": "tiny", "seeds": [42, 0]}, **runs},
    }


def test_init_from_pairs_seeds_or_fixes_one():
    config = validate(
        _config(
            tr={"method": "tr", "model": "tiny", "seeds": [0, 42], "init_from": "mlm"},
            wacse={"method": "wacse", "model": "tiny", "init_from": {"run": "mlm", "seed": 0}},
            scratch={"method": "tr", "model": "tiny"},
        ),
        SCHEMA,
    )
    assert init_source(config, "tr", 0) == RunSeed("mlm", 0)
    assert init_source(config, "tr", 42) == RunSeed("mlm", 42)
    assert init_source(config, "wacse", 42) == RunSeed("mlm", 0)
    assert init_source(config, "scratch", 42) is None
    # A scratch model trained by mlm at train.max_length 32 has 32 positions.
    assert max_positions(config, "tr") == 32
    assert max_positions(config, "scratch") is None


def test_dualpivot_settings_are_the_global_block_and_the_runs_overrides():
    config = validate(
        {
            **_config(
                sup={"method": "dualpivot-sup", "model": "tiny", "init_from": "mlm"},
                unsup={
                    "method": "dualpivot-unsup",
                    "model": "tiny",
                    "init_from": "mlm",
                    "dualpivot": {"negatives": 2, "margin": 0.2, "cycle_weight": 10.0},
                },
            ),
            "dualpivot": {"max_length": 32, "steps": 500},
        },
        SCHEMA,
    )
    settings = dualpivot_settings(config, "unsup", 42)
    assert settings["negatives"] == 2 and settings["cycle_weight"] == 10.0
    assert settings["steps"] == 500 and settings["pivot"] == "de" and settings["lr"] == 0.001
    assert settings["method"] == "dualpivot-unsup" and settings["seed"] == 42
    assert dualpivot_settings(config, "sup", 0)["negatives"] == 1  # the paper's n = 1
    assert "threads" not in program_settings("dualpivot", settings)
    assert run_max_length(config, "sup") == 32
    assert run_max_length(config, "mlm") == 32


@pytest.mark.parametrize(
    ("runs", "extra", "message"),
    [
        (
            {"tr": {"method": "tr", "model": "tiny", "init_from": "mlmm"}},
            {},
            "config key `runs.tr.init_from`: 'mlmm' is not one of `runs` (mlm, tr)",
        ),
        (
            {
                "tr": {"method": "tr", "model": "tiny", "seeds": [7], "init_from": "mlm"},
            },
            {},
            "config key `runs.tr.init_from`: run 'mlm' trains seeds [42, 0], not [7] (each seed "
            "starts from the same seed of it): add the seeds to runs.mlm.seeds, or name one of "
            "its seeds: init_from: {run: mlm, seed: 42}",
        ),
        (
            {"tr": {"method": "tr", "model": "tiny", "init_from": {"run": "mlm", "seed": 1}}},
            {},
            "run 'mlm' trains seeds [42, 0], not [1] (it names that seed)",
        ),
        (
            {
                "a": {"method": "tr", "model": "tiny", "init_from": "b", "seeds": [42]},
                "b": {"method": "tr", "model": "tiny", "init_from": "a", "seeds": [42]},
            },
            {},
            "config key `runs.a.init_from`: runs start from each other in a circle "
            "(a → b → a); one of them must start from its model",
        ),
        (
            {"tr": {"method": "tr", "model": "other", "init_from": "mlm"}},
            {"models": {"tiny": TINY, "other": TINY}},
            "config key `runs.tr.init_from`: run 'mlm' trains model 'tiny', but 'tr' reads the "
            "subwords of 'other': give both the same `model` (the same tokenizer)",
        ),
        (
            {"b": {"method": "bisent2vec", "init_from": "mlm"}},
            {},
            "config key `runs.b.init_from`: a bisent2vec run trains word vectors from scratch",
        ),
        (
            {
                "sup": {"method": "dualpivot-sup", "model": "tiny", "init_from": "mlm"},
                "tr": {"method": "tr", "model": "tiny", "init_from": "sup"},
            },
            {"dualpivot": {"max_length": 32}},
            "config key `runs.tr.init_from`: run 'sup' (dualpivot-sup) trains no encoder to "
            "start from",
        ),
        (
            {
                "tr": {
                    "method": "tr",
                    "model": "tiny",
                    "init_from": "mlm",
                    "train": {"max_length": 64},
                }
            },
            {},
            "config key `runs.tr.train.max_length` (64) exceeds the 32 tokens of the model run "
            "'tr' starts from",
        ),
        (
            {"sup": {"method": "dualpivot-sup", "model": "tiny"}},
            {},
            "config key `runs.sup.init_from`: model 'tiny' is a scratch model, and a dual-pivot "
            "run freezes its encoder: name the run that trained it",
        ),
        (
            {"sup": {"method": "dualpivot-sup", "model": "tiny", "init_from": "mlm"}},
            {"dualpivot": {"pivot": "fr", "max_length": 32}},
            "config key `dualpivot.pivot`: 'fr' is not one of `languages` (de, kk)",
        ),
        (
            {"sup": {"method": "dualpivot-sup", "model": "tiny", "init_from": "mlm"}},
            {},
            "config key `dualpivot.max_length` (128) exceeds the 32 tokens the frozen encoder "
            "of run 'sup' has position embeddings for",
        ),
        (
            {
                "sup": {
                    "method": "dualpivot-sup",
                    "model": "tiny",
                    "init_from": "mlm",
                    "dualpivot": {"layer_weights": False, "linear_map": False, "max_length": 32},
                }
            },
            {},
            "config keys `runs.sup.dualpivot.layer_weights` and "
            "`runs.sup.dualpivot.linear_map` are both false, so run 'sup' has nothing to train",
        ),
        (
            {
                "un": {
                    "method": "dualpivot-unsup",
                    "model": "tiny",
                    "init_from": "mlm",
                    "dualpivot": {"negatives": 40, "max_length": 32},
                }
            },
            {},
            "config key `runs.un.dualpivot.negatives` (40): the hardest and 39 random negatives "
            "need a batch of more than 39 pairs, but `dualpivot.batch_size` is 32",
        ),
        (
            {
                "un": {
                    "method": "dualpivot-unsup",
                    "model": "tiny",
                    "init_from": "mlm",
                    "dualpivot": {"critic_step": 2},
                }
            },
            {},
            "config key `runs.un.dualpivot.critic_step` (did you mean `critic_steps`?) is not a "
            "dualpivot setting",
        ),
        (
            {
                "sup": {
                    "method": "dualpivot-sup",
                    "model": "tiny",
                    "init_from": "mlm",
                    "train": {"lr": 1},
                }
            },
            {},
            "dual-pivot runs train a head over a frozen encoder: their settings go under "
            "`dualpivot`, not `train`",
        ),
        (
            {"tr": {"method": "tr", "model": "tiny", "dualpivot": {"steps": 3}}},
            {},
            "the `dualpivot` block applies to dual-pivot runs only",
        ),
    ],
)
def test_run_chain_mistakes_name_the_key_and_the_fix(runs, extra, message):
    with pytest.raises(ConfigError) as info:
        validate({**_config(**runs), **extra}, SCHEMA)
    assert message in str(info.value)
