"""Dual-pivot transfer (Tien & Steinert-Threlkeld 2022): the head over a frozen encoder, the
caching of pooled states, unpaired batches, the authors' schedule (epochs, early stopping on
the dev loss, a step cap) and its settings, and a trained head saved and loaded through the
evaluation's encoder interface (its losses by hand:
tests/unit/losses/test_{triplet,critic,cycle}.py)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import torch
from support import ROOT
from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizerFast

from xlsent.config import ConfigError, dualpivot_settings, load, validate
from xlsent.models import dualpivot as dp
from xlsent.models.load import load_encoder
from xlsent.train.dualpivot import (
    DualPivotSettings,
    Features,
    batch_indices,
    dev_batches,
    epoch_ends,
    random_negatives,
    train,
)

SPECIAL = (0, 2, 1)  # cls, sep, pad as XLM-R numbers them
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def tiny_encoder(seed: int = 0) -> XLMRobertaModel:
    torch.manual_seed(seed)
    config = XLMRobertaConfig(
        vocab_size=60,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=40,
        pad_token_id=1,
    )
    return XLMRobertaModel(config, add_pooling_layer=False).eval()


def pairs(n: int, seed: int = 0) -> tuple[list[list[int]], list[list[int]]]:
    """n aligned pairs of subword rows: both sides share content ids (25–59), shuffled, and
    each adds ids of its own language (5–14 foreign, 15–24 English): what the head can learn
    is to weigh the shared content above the language-specific part."""
    rng = np.random.default_rng(seed)
    xx, en = [], []
    for _ in range(n):
        content = rng.integers(25, 60, size=rng.integers(2, 5))
        xx.append([int(t) for t in rng.permutation([*content, *rng.integers(5, 15, size=4)])])
        en.append([int(t) for t in rng.permutation([*content, *rng.integers(15, 25, size=4)])])
    return xx, en


# The head -----------------------------------------------------------------------------------


def test_layer_weights_are_a_softmax():
    head = dp.DualPivotHead(dp.HeadConfig(states=3, hidden=4))
    with torch.no_grad():
        head.layer_logits.copy_(torch.tensor([0.0, math.log(2), math.log(5)]))
    assert head.weights().tolist() == pytest.approx([1 / 8, 2 / 8, 5 / 8])
    single = dp.DualPivotHead(dp.HeadConfig(states=3, hidden=4, layer=1))
    assert single.weights().tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("pooling", ["sum", "mean"])
def test_cached_pooled_states_equal_the_recomputed_token_path(pooling):
    encoder = tiny_encoder()
    xx, _ = pairs(7)
    cfg = dp.HeadConfig(states=3, hidden=16, pooling=pooling, dropout=0.0)
    torch.manual_seed(1)
    head = dp.DualPivotHead(cfg).eval()
    with torch.no_grad():
        head.layer_logits.normal_()
    index = np.array([4, 0, 6])
    cached = Features(encoder, xx, SPECIAL, pooling, cache=True).vectors(head, index)
    recomputed = Features(encoder, xx, SPECIAL, pooling, cache=False).vectors(head, index)
    torch.testing.assert_close(cached, recomputed, atol=1e-5, rtol=1e-5)
    # One sentence alone (no padding) gives the same vector: the mask does its work.
    alone = Features(encoder, [xx[4]], SPECIAL, pooling, cache=False).vectors(head, np.array([0]))
    torch.testing.assert_close(alone[0], cached[0], atol=1e-5, rtol=1e-5)
    assert torch.linalg.norm(cached, dim=-1).tolist() == pytest.approx([1.0] * 3)


def test_mean_ln_pooling_does_not_commute_and_refuses_pooled_input():
    cfg = dp.HeadConfig(states=3, hidden=16, pooling="mean_ln")
    assert not cfg.commutes
    with pytest.raises(ValueError, match="forward_tokens"):
        dp.DualPivotHead(cfg)(torch.zeros(2, 3, 16))


# Batches ------------------------------------------------------------------------------------


def test_unpaired_batches_never_hold_a_sentence_with_its_translation():
    rng = np.random.default_rng(0)
    for _ in range(200):
        source, target = batch_indices(100, 32, unpaired=True, rng=rng)
        assert len(set(source)) == len(set(target)) == 32
        assert not set(source) & set(target)
    source, target = batch_indices(100, 32, unpaired=False, rng=rng)
    assert (source == target).all()


def test_random_negatives_are_distinct_and_never_the_row_itself():
    negatives = random_negatives(6, 4, torch.Generator().manual_seed(0))
    for row, drawn in enumerate(negatives.tolist()):
        assert len(set(drawn)) == 4 and row not in drawn
    with pytest.raises(ValueError, match="batch of more than 6"):
        random_negatives(6, 6, torch.Generator())


# Training -----------------------------------------------------------------------------------


def _settings(method: str, **kw) -> DualPivotSettings:
    base = dict(batch_size=8, steps=60, log_every=30, lr=0.01, dropout=0.0, max_length=40)
    return DualPivotSettings(method=method, seed=0, **{**base, **kw})


@pytest.mark.parametrize(
    "method,extra",
    [
        ("dualpivot-sup", {"negatives": 2, "margin": 0.2}),
        ("dualpivot-unsup", {"negatives": 1, "cycle_weight": 5.0, "critic_steps": 2}),
        ("dualpivot-sup", {"pooling": "mean_ln", "linear_map": False}),
    ],
)
def test_training_moves_the_head_only(method, extra):
    encoder = tiny_encoder()
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    head, record = train(_settings(method, **extra), encoder, SPECIAL, pairs(64), pairs(24, 1))
    after = encoder.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), "the frozen encoder moved"
    assert not any(p.requires_grad for p in encoder.parameters())
    moved = head.layer_logits.detach().abs().sum().item()
    assert moved > 0, "the layer weights never trained"
    assert [h["step"] for h in record["history"]] == [30, 60]
    assert record["cached"] == (extra.get("pooling", "sum") != "mean_ln")
    assert 0 <= record["dev_p1"] <= 100


def test_supervised_head_learns_the_pivot_pairs():
    """On aligned pairs with a learnable mapping the supervised head's dev P@1 rises above
    that of the untrained head (uniform mix, identity-initialised map: the raw encoder)."""
    encoder = tiny_encoder()
    settings = _settings("dualpivot-sup", steps=300, log_every=300, batch_size=16, lr=0.01)
    untrained = _settings("dualpivot-sup", steps=1, log_every=1, lr=1e-9)
    train_pairs, dev_pairs = pairs(400), pairs(100, 1)
    _, before = train(untrained, encoder, SPECIAL, train_pairs, dev_pairs)
    _, after = train(settings, encoder, SPECIAL, train_pairs, dev_pairs)
    assert after["dev_p1"] > before["dev_p1"] + 10, (before["dev_p1"], after["dev_p1"])


def test_single_layer_baseline_picks_the_best_dev_layer():
    encoder = tiny_encoder()
    head, record = train(_settings("dualpivot-layer"), encoder, SPECIAL, pairs(10), pairs(30, 1))
    scores = record["layers"]
    assert set(scores) == {0, 1, 2}
    assert record["layer"] == max(scores, key=lambda k: (scores[k], -k))
    assert head.weights().tolist() == [float(i == record["layer"]) for i in range(3)]
    fixed, record = train(
        _settings("dualpivot-layer", layer=1), encoder, SPECIAL, pairs(10), pairs(30, 1)
    )
    assert record["layer"] == 1
    assert fixed.weights().tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="states 0–2"):
        train(_settings("dualpivot-layer", layer=5), encoder, SPECIAL, pairs(10), pairs(30, 1))


def test_too_few_pivot_pairs_for_a_batch_is_an_error():
    with pytest.raises(ValueError, match="12 de-en training pairs, fewer than the 16"):
        train(_settings("dualpivot-unsup"), tiny_encoder(), SPECIAL, pairs(12), pairs(10, 1))


# The schedule -------------------------------------------------------------------------------


def test_epochs_end_every_steps_per_epoch_and_a_cap_ends_the_last():
    def ends(**kw):
        return epoch_ends(_settings("dualpivot-sup", **{"steps": None, **kw}))

    assert ends(epochs=3, steps_per_epoch=20) == [20, 40, 60]
    assert ends(epochs=3, steps_per_epoch=20, steps=50) == [20, 40, 50]
    assert ends(epochs=3, steps_per_epoch=20, steps=40) == [20, 40]
    assert ends(epochs=3, steps_per_epoch=20, steps=500) == [20, 40, 60]
    # The small configs: a cap below one epoch is a fixed number of steps.
    assert ends(epochs=32, steps_per_epoch=16384, steps=2000) == [2000]


def test_dev_batches_cover_every_dev_pair_in_order():
    batches = dev_batches(50, 8)
    assert len(batches) == 6 and {len(b) for b in batches} <= {8, 9}
    assert np.concatenate(batches).tolist() == list(range(50))
    assert [b.tolist() for b in dev_batches(5, 8)] == [[0, 1, 2, 3, 4]]


def _log(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(("patience", "epochs"), [(1, 2), (2, 3), (None, 4)])
def test_a_dev_loss_that_never_falls_stops_training_after_patience_epochs(
    tmp_path, patience, epochs
):
    """lr 0: the head never moves, so no epoch after the first lowers the dev loss, and
    training stops `patience` epochs after it (never, with None), keeping the first."""
    settings = _settings(
        "dualpivot-sup", lr=0.0, steps=None, epochs=4, steps_per_epoch=5, patience=patience
    )
    _, record = train(settings, tiny_encoder(), SPECIAL, pairs(64), pairs(24, 1), tmp_path / "log")
    lines = _log(tmp_path / "log")
    ends = [line for line in lines if "epoch" in line]
    assert [(e["epoch"], e["step"]) for e in ends] == [(e, 5 * e) for e in range(1, epochs + 1)]
    assert len({e["dev_loss"] for e in ends}) == 1
    stopped = "epochs" if patience is None else "patience"
    assert record["stopped"] == stopped and record["epochs"] == epochs
    assert record["steps"] == 5 * epochs
    assert (record["best_epoch"], record["best_step"]) == (1, 5)
    assert lines[-1] == {"step": 5, **{k: v for k, v in record.items() if k != "history"}}


def test_training_stops_early_and_keeps_the_best_epochs_head(tmp_path):
    """A real unsupervised run whose dev loss turns up (the critic learns too): it stops one
    epoch after its lowest dev loss and returns that epoch's head, not the last one."""
    settings = _settings(
        "dualpivot-unsup", lr=0.05, steps=None, epochs=6, steps_per_epoch=10, patience=1
    )
    head, record = train(
        settings, tiny_encoder(), SPECIAL, pairs(64), pairs(24, 1), tmp_path / "log"
    )
    ends = [line for line in _log(tmp_path / "log") if "epoch" in line]
    losses = [e["dev_loss"] for e in ends]
    best = ends[losses.index(min(losses))]
    assert record["stopped"] == "patience" and record["epochs"] < 6
    assert record["epochs"] == best["epoch"] + 1 == len(ends)
    assert (record["best_epoch"], record["best_step"]) == (best["epoch"], best["step"])
    assert record["dev_loss"] == best["dev_loss"] < ends[-1]["dev_loss"]
    # The returned head is the kept epoch's: its dev P@1 is that epoch's, not the last's.
    assert record["dev_p1"] == best["dev_p1"]
    assert not head.training


def test_a_step_cap_ends_the_last_epoch_and_below_one_epoch_keeps_the_last_head(tmp_path):
    capped = _settings("dualpivot-sup", steps=25, epochs=5, steps_per_epoch=10, patience=None)
    _, record = train(capped, tiny_encoder(), SPECIAL, pairs(64), pairs(24, 1), tmp_path / "a")
    assert [e["step"] for e in _log(tmp_path / "a") if "epoch" in e] == [10, 20, 25]
    assert (record["stopped"], record["epochs"], record["steps"]) == ("steps", 3, 25)
    # The small configs' fixed budget: one partial epoch, its last step's head.
    fixed = _settings("dualpivot-sup", steps=60, log_every=30)
    _, record = train(fixed, tiny_encoder(), SPECIAL, pairs(64), pairs(24, 1), tmp_path / "b")
    lines = _log(tmp_path / "b")
    assert [line["step"] for line in lines] == [30, 60, 60]
    assert "epoch" not in lines[0] and lines[1]["epoch"] == 1 and "dev_loss" in lines[1]
    assert (record["stopped"], record["epochs"], record["best_step"]) == ("steps", 1, 60)


def test_the_paper_config_trains_by_the_authors_schedule_and_the_small_ones_do_not():
    config = load(ROOT / "config.yaml", SCHEMA)
    for run in ("dualpivot-sup-de", "dualpivot-unsup-ar", "dualpivot-unsup-de-bucc"):
        settings = dualpivot_settings(config, run, 42)
        assert (settings["epochs"], settings["steps_per_epoch"], settings["patience"]) == (
            32,
            16384,
            1,
        )
        assert settings["steps"] is None and settings["max_pairs"] is None
    # Table 2's unsupervised models (n 1, α 0, λ 5, κ 2), de-en and ar-en.
    for run, pivot in (("dualpivot-unsup-de-bucc", "de"), ("dualpivot-unsup-ar-bucc", "ar")):
        settings = dualpivot_settings(config, run, 42)
        assert settings["method"] == "dualpivot-unsup" and settings["pivot"] == pivot
        table2 = ("negatives", "margin", "cycle_weight", "critic_steps")
        assert tuple(settings[k] for k in table2) == (1, 0.0, 5.0, 2)
    # The demo, l10n and pretrained configs keep their fixed budgets: one partial epoch.
    for name, steps in (("demo", 300), ("l10n", 2000), ("pretrained", 2000)):
        small = load(ROOT / "resources" / name / "config.yaml", SCHEMA)
        settings = dualpivot_settings(small, "dualpivot-sup", 42)
        assert settings["steps"] == steps < settings["steps_per_epoch"]


def test_the_loss_comparison_config_differs_in_the_criterion_alone():
    """resources/pretrained/dualpivot-loss.yaml (issue 38): the paper's hinge against the
    authors' criterion, two heads alike but for `hinge`, the first the very run of
    resources/pretrained/config.yaml (same settings: in its directory, reused)."""
    config = load(ROOT / "resources" / "pretrained" / "dualpivot-loss.yaml", SCHEMA)
    paper = dualpivot_settings(config, "dualpivot-sup", 42)
    code = dualpivot_settings(config, "dualpivot-sup-code", 42)
    assert paper["hinge"] is True and code["hinge"] is False
    assert [key for key in paper if paper[key] != code[key]] == ["hinge"]
    assert (paper["steps"], paper["negatives"], paper["margin"]) == (2000, 1, 0.0)
    pretrained = load(ROOT / "resources" / "pretrained" / "config.yaml", SCHEMA)
    assert dualpivot_settings(pretrained, "dualpivot-sup", 42) == paper


@pytest.mark.parametrize(
    ("block", "key"),
    [
        ({"epochs": 0}, "dualpivot.epochs"),
        ({"steps_per_epoch": 0}, "dualpivot.steps_per_epoch"),
        ({"patience": 0}, "dualpivot.patience"),
        ({"steps": 0}, "dualpivot.steps"),
        ({"max_pairs": 0}, "dualpivot.max_pairs"),
        ({"patiense": 1}, "dualpivot.patiense` (did you mean `"),
    ],
)
def test_bad_schedule_settings_name_their_key(block, key):
    with pytest.raises(ConfigError, match=re.escape(f"`{key}")):
        validate({"dualpivot": block}, SCHEMA)
    run = {"method": "dualpivot-sup", "model": "xlmr", "dualpivot": block}
    with pytest.raises(ConfigError, match=re.escape(f"`runs.d.{key}")):
        validate({"runs": {"d": run}}, SCHEMA)


def test_no_cap_no_patience_and_all_pairs_are_valid_settings():
    config = validate(
        {"dualpivot": {"steps": None, "patience": None, "max_pairs": None, "epochs": 2}}, SCHEMA
    )
    block = config["dualpivot"]
    assert (block["steps"], block["patience"], block["max_pairs"]) == (None, None, None)


# Saving and loading -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    """A real SentencePiece tokenizer trained here on a few sentences (XLM-R's id layout)."""
    from tokenizers import SentencePieceUnigramTokenizer

    corpus = ["the cat sat on the mat", "die katze sass auf der matte", "a dog", "ein hund"] * 20
    spm = SentencePieceUnigramTokenizer()
    spm.train_from_iterator(
        corpus, vocab_size=60, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        unk_token="<unk>", show_progress=False,
    )  # fmt: skip
    tok = XLMRobertaTokenizerFast(tokenizer_object=spm._tokenizer)
    out = tmp_path_factory.mktemp("tokenizer")
    tok.save_pretrained(out)
    return out


def test_a_saved_model_loads_through_the_evaluation_interface(tmp_path, tokenizer_dir):
    encoder = tiny_encoder()
    encoder_dir = tmp_path / "frozen"
    encoder.save_pretrained(encoder_dir)
    head, _ = train(_settings("dualpivot-sup", steps=20), encoder, SPECIAL, pairs(64), pairs(16))
    dp.save(head, encoder_dir, tokenizer_dir, tmp_path / "model")
    assert dp.is_dualpivot(tmp_path / "model")
    loaded = load_encoder(tmp_path / "model", max_length=40, batch_size=2)
    assert isinstance(loaded, dp.DualPivotEncoder)
    texts = ["the cat sat", "der hund", "a mat"]
    vectors = loaded(texts, "de")
    # The same vectors as the trained head on the original encoder, token by token.
    tok = XLMRobertaTokenizerFast.from_pretrained(tokenizer_dir)
    batch = tok(texts, padding=True, return_tensors="pt")
    states = dp.hidden_states(encoder, batch["input_ids"], batch["attention_mask"])
    expected = head.eval().forward_tokens(states.float(), batch["attention_mask"])
    np.testing.assert_allclose(vectors, expected.detach().numpy(), atol=1e-5)
    assert vectors.shape == (3, 16)


def test_a_saved_model_reads_each_sentence_after_the_models_prefix(tmp_path, tokenizer_dir):
    """The head keeps the paper's pooling; the text carries the run's prefix, recorded with
    the head since the frozen encoder's own config need not have it."""
    encoder = tiny_encoder()
    encoder.save_pretrained(tmp_path / "frozen")
    head = dp.DualPivotHead(dp.HeadConfig(3, 16, "mean")).eval()
    prefix = {"en": "a ", "xx": "ein "}
    dp.save(head, tmp_path / "frozen", tokenizer_dir, tmp_path / "model", prefix)
    loaded = load_encoder(tmp_path / "model", max_length=40, batch_size=2)
    tok = XLMRobertaTokenizerFast.from_pretrained(tokenizer_dir)
    texts = ["the cat sat", "der hund"]
    for lang, before in (("de", "ein "), ("en", "a ")):
        batch = tok([before + text for text in texts], padding=True, return_tensors="pt")
        states = dp.hidden_states(encoder, batch["input_ids"], batch["attention_mask"])
        expected = head.forward_tokens(states.float(), batch["attention_mask"])
        np.testing.assert_allclose(loaded(texts, lang), expected.detach().numpy(), atol=1e-5)
    assert not np.allclose(loaded(texts, "de"), loaded(texts, "en"))
