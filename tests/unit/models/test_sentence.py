"""A model's pooling and prefix (`xlsent.models.sentence`): the pooled vector by hand, the
prefix of each language, and the same vectors from training's TR, the evaluations'
TextEncoder and the export's sentence-transformers modules."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from sentence_transformers import SentenceTransformer
from support import tiny_shape, train_settings
from transformers import AutoTokenizer

from xlsent.models import encoder
from xlsent.models.sentence import SentenceSettings, pool, prefix_of
from xlsent.tokenize import subwords
from xlsent.train.collate import Tokens
from xlsent.train.data import load_pairs
from xlsent.train.loop import Trainer
from xlsent.train.objectives import Objectives
from xlsent.train.settings import ModelSpec, TrainSettings

SHAPE = tiny_shape()
SENTENCES = ["Germany", "Enter a valid email address.", "Deutschland", "Central Time", "a"]
SPLIT = {"en": "query: ", "xx": "passage: "}


def test_pooling_by_hand():
    # Two sentences of 3 and 2 tokens (the second padded), 2-wide states.
    hidden = torch.tensor(
        [[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]], [[2.0, 0.0], [4.0, 2.0], [100.0, 100.0]]]
    )
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    # mean: (1+3+5)/3, (2+4+9)/3; (2+4)/2, (0+2)/2 — the padded token is not counted.
    assert pool(hidden, mask, "mean").tolist() == [[3.0, 5.0], [3.0, 1.0]]
    assert pool(hidden, mask, "cls").tolist() == [[1.0, 2.0], [2.0, 0.0]]
    with pytest.raises(ValueError, match="pooling is one of cls, mean, not 'max'"):
        pool(hidden, mask, "max")


def test_the_prefix_of_a_language():
    assert prefix_of("query: ", "kk") == prefix_of("query: ", "en") == "query: "
    assert [prefix_of(SPLIT, lang) for lang in ("en", "kk", "de", "xx")] == [
        "query: ",
        "passage: ",
        "passage: ",
        "passage: ",
    ]
    assert prefix_of(SPLIT, None) == "query: "  # no language given: read as English
    with pytest.raises(ValueError, match="a prefix is a text or"):
        SentenceSettings("mean", {"en": "query: "})


def test_a_model_records_its_settings_and_one_without_them_pools_cls(small_tokenizer, tmp_path):
    model = encoder.build("scratch", small_tokenizer, max_length=16, shape=SHAPE)
    assert SentenceSettings.read(model.config) == SentenceSettings("cls", "")
    SentenceSettings("mean", SPLIT).record(model.config)
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert (config["xlsent_pooling"], config["xlsent_prefix"]) == ("mean", SPLIT)


def _saved(small_tokenizer, out, settings: SentenceSettings) -> None:
    torch.manual_seed(0)
    model = encoder.build("scratch", small_tokenizer, max_length=32, shape=SHAPE)
    settings.record(model.config)
    encoder.save(model, small_tokenizer, out, max_length=32)


@pytest.mark.parametrize("prefix", ["query: ", SPLIT], ids=["shared", "per-side"])
def test_sentence_transformers_encodes_a_mean_pooled_prefixed_export_as_xlsent(
    small_tokenizer, tmp_path, prefix
):
    _saved(small_tokenizer, tmp_path, SentenceSettings("mean", prefix))
    pooling = json.loads((tmp_path / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode"] == "mean"
    ours = encoder.TextEncoder.load(tmp_path, max_length=32, batch_size=2)
    st = SentenceTransformer(str(tmp_path), device="cpu")
    en, kk = ours(SENTENCES, "en"), ours(SENTENCES, "kk")
    assert np.allclose(st.encode(SENTENCES, prompt_name="en"), en, atol=1e-5)
    assert np.allclose(st.encode(SENTENCES, prompt_name="xx"), kk, atol=1e-5)
    if isinstance(prefix, str):  # one prefix for both sides: the default prompt
        assert np.allclose(st.encode(SENTENCES), en, atol=1e-5)
    else:  # English and the other language read different texts
        assert not np.allclose(en, kk)

    # What TextEncoder computes: the mean of the last states over "<s> query: ... </s>".
    tok = AutoTokenizer.from_pretrained(tmp_path)
    batch = tok(["query: " + SENTENCES[1]], return_tensors="pt")
    with torch.no_grad():
        hidden = ours.model(**batch).last_hidden_state
    by_hand = hidden[0].sum(0) / batch["attention_mask"].sum()
    assert np.allclose(en[1], by_hand.numpy(), atol=1e-5)


def test_a_cls_export_without_a_prefix_has_no_prompts(small_tokenizer, tmp_path):
    _saved(small_tokenizer, tmp_path, SentenceSettings())
    st = SentenceTransformer(str(tmp_path), device="cpu")
    assert st.default_prompt_name is None and not any(st.prompts.values())
    assert json.loads((tmp_path / "1_Pooling" / "config.json").read_text())["pooling_mode"] == "cls"
    ours = encoder.TextEncoder.load(tmp_path, max_length=32)(SENTENCES, "kk")
    assert np.allclose(st.encode(SENTENCES), ours, atol=1e-5)


@pytest.mark.parametrize("pooler", ["cls", "mlp"])
def test_tr_vectors_are_the_models_pooling_and_the_mlp_reads_the_pooled_vector(
    small_tokenizer, pooler
):
    torch.manual_seed(0)
    model = encoder.build("scratch", small_tokenizer, max_length=16, shape=SHAPE)
    SentenceSettings("mean").record(model.config)
    objective = Objectives(
        model, TrainSettings(seed=0, pooler=pooler), Tokens.read(small_tokenizer)
    )
    hidden = torch.randn(2, 4, 32)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    mean = torch.stack([hidden[0, :3].mean(0), hidden[1, :2].mean(0)])
    if pooler == "mlp":
        mean = torch.tanh(objective.mlp.dense(mean))
    assert torch.allclose(objective.sentence_vectors(hidden, mask), mean, atol=1e-6)


def test_a_run_trains_and_selects_on_the_vectors_its_export_gives(
    small_corpus, small_tokenizer, tmp_path
):
    """The tokenize stage's prefixed subwords, TR's and dev P@1's pooling, and the exported
    model encoding raw sentences: one sentence vector throughout."""
    sentence = SentenceSettings("mean", SPLIT)
    paths: dict[str, dict] = {"train": {}, "dev": {}}
    for lang, splits in small_corpus.items():
        for split, path in splits.items():
            paths[split][lang] = tmp_path / f"{lang}.{split}.parquet"
            subwords(path, small_tokenizer, paths[split][lang], sentence.prefix)
    settings = TrainSettings(
        **train_settings(
            seed=1,
            lr=5e-5,  # TrainSettings' default
            batch_size=16,
            max_steps=2,
            eval_every=2,
            checkpoint_every=2,
            log_every=2,
            dev_max_pairs=None,  # TrainSettings' default: every dev pair
        )
    )

    spec = ModelSpec("scratch", small_tokenizer, shape=SHAPE, sentence=sentence)
    trainer = Trainer(settings, spec, paths["train"], paths["dev"], tmp_path / "ckpt")
    trainer.run()
    trainer.export(tmp_path / "model", {})
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert (config["xlsent_pooling"], config["xlsent_prefix"]) == ("mean", SPLIT)

    dev = pq.read_table(small_corpus["kk"]["dev"])
    rows = load_pairs({"kk": paths["dev"]["kk"]}, max_length=16)
    loaded = encoder.TextEncoder.load(tmp_path / "model", max_length=16, batch_size=8)
    for side, lang in (("xx", "kk"), ("en", "en")):
        with torch.inference_mode():  # as `Trainer.evaluate` encodes
            trained = trainer._encode(getattr(rows, side), lang)
        evaluated = loaded(dev.column(side).to_pylist(), lang)
        assert np.allclose(trained, evaluated, atol=1e-5), side
