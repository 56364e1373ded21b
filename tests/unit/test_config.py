from pathlib import Path

import pytest
import yaml

from xlsent import languages
from xlsent.config import ConfigError, load, run_seeds, train_settings, validate

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def test_paper_config_is_the_paper_setup():
    config = load(ROOT / "config.yaml", SCHEMA)
    assert languages.resolve(config["languages"]) == list(languages.GROUPS["xtreme36"])
    assert config["corpus"]["max_pairs"] == 1_000_000
    assert config["corpus"]["dev_pairs"] == 10_000
    assert config["models"]["xlmr"] == {"init": "pretrained", "path": "xlm-roberta-base"}
    settings = train_settings(config, "tr", 42)
    assert settings["max_length"] == 32
    assert settings["lr"] == 5e-5
    assert settings["batch_size"] == 1024
    assert settings["eval_every"] == 2000
    assert settings["temperature"] == 0.05
    pairs = [(rs.run, rs.seed) for rs in run_seeds(config)]
    assert pairs[:6] == [(run, seed) for run in ("tr", "wacse", "dap") for seed in (42, 0)]
    assert train_settings(config, "wacse", 0)["wacse_weights"] == [0.8, 0.1, 0.1]
    assert train_settings(config, "dap", 0)["rtl_weight"] == 0.1
    # WACSE §6: the ablations are single-seed 10K-step runs.
    ablations = config["tables"]["ablation"]["runs"]
    assert ablations == ["tr-10k", "tr-awp", "tr-wtr", "wacse-10k", "wacse-langemb"]
    for run in ablations:
        assert config["runs"][run]["seeds"] == [42]
        assert train_settings(config, run, 42)["max_steps"] == 10_000
    assert train_settings(config, "wacse-10k", 42)["wacse_weights"] == [0.8, 0.02, 0.18]
    assert train_settings(config, "wacse-langemb", 42)["language_embeddings"] is True


def test_ablation_runs_must_be_runs():
    config = load(ROOT / "config.yaml", SCHEMA)
    config["tables"]["ablation"]["runs"] = ["tr", "tr-awpp"]
    with pytest.raises(ConfigError, match="tr-awpp"):
        validate(config, SCHEMA)


def test_demo_config_validates_with_defaults_filled():
    config = load(ROOT / "resources" / "demo" / "config.yaml", SCHEMA)
    assert config["corpus"]["source"] == "demo"
    assert config["corpus"]["clean"]["max_length_ratio"] == 3.0  # a default
    assert config["models"]["tiny"]["tokenizer_sentences"] == 2_000_000  # a nested default
    assert config["runs"]["tr"]["train"] == {}


def test_empty_config_takes_every_default():
    config = validate({}, SCHEMA)
    assert config["languages"] == "xtreme36"
    assert config["runs"]["tr"]["seeds"] == [42, 0]
    assert config["evaluate"]["tatoeba"]["dir"] is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"corpus": {"max_pair": 10}}, "`corpus.max_pair` (did you mean `corpus.max_pairs`?)"),
        ({"trian": {}}, "`trian` (did you mean `train`?)"),
        ({"corpus": {"max_pairs": 0}}, "`corpus.max_pairs`"),
        ({"corpus": {"source": "ftp"}}, "`corpus.source`"),
        ({"languages": ["kk", "xx"]}, "unknown language code 'xx'"),
        ({"languages": ["en"]}, "pivot"),
        ({"corpus": {"source": "local"}}, "`corpus.local.dir` must be set"),
        ({"runs": {"tr": {"method": "tr", "model": "nope"}}}, "`runs.tr.model`"),
        (
            {"runs": {"tr": {"method": "tr", "model": "xlmr", "train": {"lrr": 1}}}},
            "`runs.tr.train.lrr`",
        ),
        (
            {
                "models": {"m": {"init": "pretrained"}},
                "runs": {"r": {"method": "tr", "model": "m"}},
            },
            "`models.m.path`",
        ),
        ({"tables": {"groups": ["low9"]}}, "unknown group 'low9'"),
        (
            {"models": {"xlmr": {"init": "pretrained", "path": "x", "hidden_size": 8}}},
            "apply to scratch models only",
        ),
    ],
)
def test_bad_config_names_the_key(config, message):
    with pytest.raises(ConfigError) as info:
        validate(config, SCHEMA)
    assert message in str(info.value)


def test_run_overrides_global_training_settings():
    config = validate(
        yaml.safe_load(
            """
            train: {lr: 1.0e-4, max_steps: 50}
            runs:
              short: {method: tr, model: xlmr, seeds: [1], train: {max_steps: 10}}
            """
        ),
        SCHEMA,
    )
    settings = train_settings(config, "short", 1)
    assert (settings["lr"], settings["max_steps"], settings["seed"]) == (1e-4, 10, 1)
