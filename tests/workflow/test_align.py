"""The align stage in the workflow: shards fan out per language, a manifest joins them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
import torch
from support import copy_tree, demo_config, planned_jobs, snakemake, tiny_qa_model, write_config
from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaForQuestionAnswering

from xlsent.align.shards import iter_shards

pytestmark = pytest.mark.workflow

LANGS = ["de", "kk", "jv"]


def _manifests(aligner: str, langs: list[str]) -> list[str]:
    return [f"results/align/{aligner}/{lang}/_SUCCESS" for lang in langs]


def _check_language(workdir, aligner: str, lang: str, shard_size: int) -> dict:
    """Shards cover the language's training pairs exactly once, with in-range links."""
    results = workdir / "results"
    train = pl.read_parquet(results / f"corpus/{lang}/train.parquet")
    manifest = json.loads((results / f"align/{aligner}/{lang}/_SUCCESS").read_text())
    assert len(manifest["shards"]) == math.ceil(train.height / shard_size)
    assert manifest["totals"]["pairs"] == train.height
    ids, links = [], 0
    for shard in iter_shards(results / f"align/{aligner}/{lang}/_SUCCESS"):
        ids += shard["id"].to_pylist()
        for row in shard.to_pylist():
            for link in row["links"]:
                assert 0 <= link["en"] < len(row["en_words"])
                assert 0 <= link["xx"] < len(row["xx_words"])
                links += 1
    assert ids == train["id"].to_list()
    assert links == manifest["totals"]["links"] > 0
    return manifest


def test_eflomal_shards_of_the_demo(demo_run, tmp_path):
    workdir = copy_tree(demo_run, tmp_path / "run", link_weights=True)
    configfile = workdir / "config.yaml"
    targets = _manifests("eflomal", LANGS)
    for lang in LANGS:
        manifest = _check_language(workdir, "eflomal", lang, 500)
        # The demo's shards are small: each borrows its language's other pairs to estimate on,
        # and none beyond the cap (every clean pair is train or dev: no cap is in effect).
        assert all(s["estimation_pairs"] > 0 for s in manifest["shards"])
        assert all(s["estimation_pairs_beyond_cap"] == 0 for s in manifest["shards"])
    # Words spelled the same on both sides (names, loanwords: "Euro", "Internet") are
    # translations of each other; German has about 200 such words in the demo, of which
    # eflomal links over 90% (a wrong alignment model would link few).
    same, linked = 0, 0
    for shard in iter_shards(workdir / "results/align/eflomal/de/_SUCCESS"):
        for row in shard.to_pylist():
            links = {(link["en"], link["xx"]) for link in row["links"]}
            for word in set(row["en_words"]):
                if (
                    word.isalpha()
                    and row["en_words"].count(word) == row["xx_words"].count(word) == 1
                ):
                    same += 1
                    linked += (row["en_words"].index(word), row["xx_words"].index(word)) in links
    assert same > 100 and linked >= 0.8 * same

    # A finished shard is never recomputed; a shard whose job died (no shard, no manifest
    # yet) is redone alone.
    assert planned_jobs(workdir, configfile, *targets) == {}
    for name in ("shard-0001.arrow", "shard-0001.json", "_SUCCESS"):
        (workdir / "results/align/eflomal/kk" / name).unlink()
    assert planned_jobs(workdir, configfile, *targets) == {"align_shard": 1, "align_manifest": 1}
    # Redone, it holds the same links byte for byte (eflomal is seeded: align.eflomal.seed),
    # though its job now has two threads where the demo gave it one.
    snakemake(workdir, *targets, "--cores", "2", "--configfile", str(configfile))
    shard = "results/align/eflomal/kk/shard-0001.arrow"
    assert (workdir / shard).read_bytes() == (demo_run / shard).read_bytes()
    # Another seed is another alignment: every shard is redone.
    config = demo_config()
    config["align"]["eflomal"] = {"seed": 1}
    reseeded = write_config(workdir / "reseeded.yaml", config)
    shards = sum(len(json.loads((workdir / path).read_text())["shards"]) for path in targets)
    assert planned_jobs(workdir, reseeded, *targets) == {
        "align_shard": shards,
        "align_manifest": len(LANGS),
    }

    # The Pharaoh export: one line per training pair.
    snakemake(
        workdir,
        "results/align/eflomal/jv/links.pharaoh",
        "--cores",
        "1",
        "--configfile",
        str(configfile),
    )
    lines = (workdir / "results/align/eflomal/jv/links.pharaoh").read_text().splitlines()
    assert len(lines) == pl.read_parquet(workdir / "results/corpus/jv/train.parquet").height


def test_wspalign_with_a_local_checkpoint(demo_run, tmp_path):
    """The WSPAlign path end to end offline: a tiny QA model saved to a local directory."""
    tokenizer = AutoTokenizer.from_pretrained(demo_run / "results/tokenizers/tiny")
    model = tiny_qa_model(tokenizer, max_positions=300)
    checkpoint = tmp_path / "qa"

    model.save_pretrained(checkpoint)
    tokenizer.model_max_length = 298
    tokenizer.save_pretrained(checkpoint)

    workdir = copy_tree(demo_run, tmp_path / "run", link_weights=True)
    config = demo_config()
    config["align"] = {
        "method": "wspalign",
        "shard_size": 1000,
        # A random model's span scores are small: keep every link it proposes.
        "wspalign": {"model": str(checkpoint), "threshold": 0.0, "combine": "union"},
    }
    configfile = write_config(workdir / "wsp.yaml", config)
    snakemake(
        workdir, *_manifests("wspalign", ["kk"]), "--cores", "2", "--configfile", str(configfile)
    )
    assert (workdir / "results/aligners/wspalign/config.json").exists()
    manifest = _check_language(workdir, "wspalign", "kk", 1000)
    assert manifest["settings"]["combine"] == "union"


def _tiny_checkpoint(directory: Path, head: bool = False) -> Path:
    """A seeded tiny XLM-R saved with a word-level fast tokenizer that frames a sentence as
    <s> A </s> and a pair as <s> A </s></s> B </s>, as XLM-R's does; with `head`, a
    question-answering model (WSPAlign's kind). Random weights: links arbitrary but real."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, XLMRobertaModel

    special = {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>", "mask": "<mask>"}
    words = [*special.values(), "the", "file", "die", "Datei", "."]
    tokenizer = Tokenizer(models.WordLevel({word: i for i, word in enumerate(words)}, "<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    roles = {**special, "cls": "<s>", "sep": "</s>"}
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        model_max_length=298,
        **{f"{role}_token": token for role, token in roles.items()},
    ).save_pretrained(directory)
    torch.manual_seed(0)
    config = XLMRobertaConfig(
        vocab_size=len(words),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=300,
        pad_token_id=1,
    )
    model_class = XLMRobertaForQuestionAnswering if head else XLMRobertaModel
    model_class(config).save_pretrained(directory)
    return directory


def test_simalign_shards_and_gpus_that_realign_nothing(tmp_path):
    """SimAlign end to end (its model fetched, read by the shard job), beside WSPAlign. The
    aligners' GPUs are the jobs' resource, not a setting: after a finished run, changed
    `gpus` plan nothing (the whole block was a param: every shard reran, and every WACSE run
    after it), a changed setting realigns. The smallest DAG: one language of 150 pairs
    (clean, sample, words), each aligner's model fetched, one shard and a manifest each
    (under a minute on 2 cores)."""
    config = {
        "languages": ["de"],
        "corpus": {
            "source": "demo",
            "clean": {"min_tokens": 1},
            "max_pairs": 150,
            "dev_pairs": 20,
            "min_train_pairs": 100,
            "min_dev_pairs": 10,
        },
        "models": {"enc": {"init": "pretrained", "path": str(_tiny_checkpoint(tmp_path / "enc"))}},
        "align": {
            "method": "simalign",
            "simalign": {"model": "enc", "layer": 1, "device": "cpu"},
            "wspalign": {
                "model": str(_tiny_checkpoint(tmp_path / "qa", head=True)),
                "threshold": 0.0,
                "combine": "union",
                "device": "cpu",
            },
        },
        "runs": {"b2v": {"method": "bisent2vec", "seeds": [0]}},
    }
    workdir = tmp_path / "work"
    configfile = write_config(tmp_path / "config.yaml", config)
    targets = _manifests("simalign", ["de"]) + _manifests("wspalign", ["de"])
    snakemake(workdir, *targets, "--cores", "2", "--configfile", str(configfile))
    assert (workdir / "results/pretrained/enc/config.json").exists()
    manifest = _check_language(workdir, "simalign", "de", 100_000)
    assert manifest["settings"] == {
        "model": "enc",
        "layer": 1,
        "method": "argmax",
        "batch_size": 64,
        "max_subwords": 256,
        "device": "cpu",
    }
    _check_language(workdir, "wspalign", "de", 100_000)
    assert planned_jobs(workdir, configfile, *targets) == {}

    config["align"]["simalign"]["gpus"] = 2
    config["align"]["wspalign"]["gpus"] = 4
    assert planned_jobs(workdir, write_config(tmp_path / "gpus.yaml", config), *targets) == {}
    config["align"]["simalign"]["layer"] = 2
    changed = write_config(tmp_path / "changed.yaml", config)
    assert planned_jobs(workdir, changed, *targets) == {"align_shard": 1, "align_manifest": 1}


def test_eflomal_reads_the_pairs_beyond_the_cap_only_where_there_are(tmp_path):
    """A language capped below its clean pairs (corpus.max_pairs 300 of the demo's 1,502 de)
    has its eflomal shard read its clean pairs and other splits, to estimate on the pairs
    the sample left out (xlsent.align.estimation); at the demo's settings every clean pair
    is train or dev, and the shard's inputs and command are those from before such pairs
    were read, so that a finished demo realigns nothing. The corpus stage of one language,
    then dry runs."""
    config = demo_config()
    uncapped = write_config(tmp_path / "demo.yaml", config)
    config["corpus"] |= {"max_pairs": 300, "min_train_pairs": 100}
    capped = write_config(tmp_path / "capped.yaml", config)
    workdir = tmp_path / "work"
    flags = (
        "--lang de --clean results/corpus/de/clean.parquet --dev results/corpus/de/dev.parquet"
        " --mining results/corpus/de/mining.parquet"
    )
    for configfile, reads_beyond in ((uncapped, False), (capped, True)):
        args = ("--cores", "1", "--configfile", str(configfile))
        snakemake(workdir, "results/corpus/de/sample_stats.json", *args)
        out = snakemake(
            workdir, *_manifests("eflomal", ["de"]), "-n", "-p", "--configfile", str(configfile)
        )
        commands = [
            line for line in (out.stdout + out.stderr).splitlines() if "xlsent align-shard" in line
        ]
        stats = json.loads((workdir / "results/corpus/de/sample_stats.json").read_text())
        assert len(commands) == math.ceil(stats["train"] / 500)  # the demo's shard_size
        assert all((flags in command) == reads_beyond for command in commands), commands
