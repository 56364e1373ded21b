from pathlib import Path

import pytest
import yaml

from xlsent import languages
from xlsent.config import (
    BliDictionary,
    ConfigError,
    bisent2vec_settings,
    bli_dictionaries,
    load,
    run_seeds,
    train_settings,
    trainer_settings,
    validate,
)

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
        ({"runs": {"tr": {"method": "tr"}}}, "'model' is a required property"),
        ({"runs": {"b": {"method": "bisent2vec", "model": "xlmr"}}}, "take no `model`"),
        (
            {"runs": {"tr": {"method": "tr", "model": "xlmr", "bisent2vec": {"dim": 3}}}},
            "applies to bisent2vec and fasttext-cbow runs only",
        ),
        (
            {"runs": {"b": {"method": "bisent2vec", "train": {"lr": 0.1}}}},
            "`runs.b.train` applies to encoder runs",
        ),
        (
            {"runs": {"b": {"method": "bisent2vec", "bisent2vec": {"ngrams": 2}}}},
            "`runs.b.bisent2vec.ngrams` (did you mean `word_ngrams`?)",
        ),
        (
            {"runs": {"b": {"method": "fasttext-cbow", "bisent2vec": {"dim": 0}}}},
            "`runs.b.bisent2vec.dim`",
        ),
        ({"bisent2vec": {"epoch": 0}}, "`bisent2vec.epoch`"),
        ({"bisent2vec": {"seed": 1}}, "`bisent2vec.seed` is not known"),
        (
            {"languages": ["kk"], "evaluate": {"bli": {"dictionaries": {"de": "x.txt"}}}},
            "`evaluate.bli.dictionaries.de`: 'de' is not one of `languages`",
        ),
        (
            {"evaluate": {"bli": {"dictionaries": {"de": {"en2de": "x.txt"}}}}},
            "or a mapping with the keys en2xx and/or xx2en",
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


def test_word_vector_runs_take_global_settings_overrides_and_their_seed():
    config = validate(
        yaml.safe_load(
            """
            bisent2vec: {dim: 300, epoch: 7, threads: 4, tfidf: true}
            runs:
              tr: {method: tr, model: xlmr}
              uni: {method: bisent2vec, seeds: [42]}
              bi: {method: bisent2vec, seeds: [42, 0], bisent2vec: {word_ngrams: 2, epoch: 3}}
              cbow: {method: fasttext-cbow}
            """
        ),
        SCHEMA,
    )
    assert config["runs"]["uni"]["bisent2vec"] == {}  # filled for word-vector runs only
    assert "bisent2vec" not in config["runs"]["tr"]
    assert bisent2vec_settings(config, "bi")["threads"] == 4
    trainer = trainer_settings(config, "bi", 0)
    assert (trainer["dim"], trainer["word_ngrams"], trainer["epoch"], trainer["seed"]) == (
        300, 2, 3, 0
    )  # fmt: skip
    assert "threads" not in trainer and "tfidf" not in trainer  # the workflow's keys
    assert trainer_settings(config, "uni", 42)["lr"] == 0.05  # the reference default
    with pytest.raises(ValueError, match="not a Bi-Sent2vec or fastText run"):
        bisent2vec_settings(config, "tr")


def test_paper_config_has_the_bisent2vec_runs():
    config = load(ROOT / "config.yaml", SCHEMA)
    for run in ("bisent2vec-uni", "bisent2vec-bi", "fasttext-cbow"):
        assert trainer_settings(config, run, 42)["dim"] == 300
    assert trainer_settings(config, "bisent2vec-uni", 42)["word_ngrams"] == 1
    assert trainer_settings(config, "bisent2vec-bi", 42)["word_ngrams"] == 2
    assert config["runs"]["fasttext-cbow"]["method"] == "fasttext-cbow"
    assert bli_dictionaries(config) == []  # no dictionaries by default


def test_bli_dictionaries_by_source_kind_and_direction():
    config = validate(
        {
            "languages": ["de", "fr", "kk"],
            "evaluate": {
                "bli": {
                    "dictionaries": {
                        "de": "freedict:/usr/share/dictd/freedict-eng-deu.dict.dz",
                        "fr": {"en2xx": "https://example.org/en-fr.txt", "xx2en": "fr-en.txt"},
                        "kk": {"xx2en": "kk-en.txt"},
                    }
                }
            },
        },
        SCHEMA,
    )
    freedict = "/usr/share/dictd/freedict-eng-deu.dict.dz"
    assert bli_dictionaries(config) == [
        BliDictionary("de", "en2xx", "freedict", freedict, reverse=False),
        BliDictionary("de", "xx2en", "freedict", freedict, reverse=True),
        BliDictionary("fr", "en2xx", "url", "https://example.org/en-fr.txt", reverse=False),
        BliDictionary("fr", "xx2en", "muse", "fr-en.txt", reverse=False),
        BliDictionary("kk", "xx2en", "muse", "kk-en.txt", reverse=False),
    ]
