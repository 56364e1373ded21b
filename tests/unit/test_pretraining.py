"""Pretraining: MLM and TLM batches and loss by hand, XLM-R's language sampling, monolingual
batches that never hold a sentence with its translation, and an `mlm` run whose exported
encoder and MLM head are what a run starting from it (`init_from`) gets."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from support import tiny_shape

from xlsent.losses.mlm import masked_lm_loss
from xlsent.models.mlm_head import HEAD_FILE, mlm_head
from xlsent.ragged import Ragged
from xlsent.train.collate import Collator, Tokens, collate, mask_tokens
from xlsent.train.data import (
    LanguageSampler,
    Pairs,
    language_probabilities,
    load_pairs,
    monolingual,
)
from xlsent.train.loop import Trainer
from xlsent.train.settings import ModelSpec, TrainSettings

TOKENS = Tokens(cls=0, sep=2, pad=1, mask=3)


def ragged(rows: list[list[int]]) -> Ragged:
    return Ragged.from_rows([np.array(r, dtype=np.int32) for r in rows])


# The loss -----------------------------------------------------------------------------------


def test_masked_lm_loss_by_hand():
    # Two chosen positions over a vocabulary of 3: logits (0, 0, ln 2) → p = (1/4, 1/4, 1/2)
    # and target 2: −ln(1/2); logits (0, 0, 0) and target 0: −ln(1/3). Mean of the two.
    logits = torch.tensor([[0.0, 0.0, math.log(2)], [0.0, 0.0, 0.0]])
    loss = masked_lm_loss(logits, torch.tensor([2, 0]))
    assert loss.item() == pytest.approx((math.log(2) + math.log(3)) / 2)
    empty = masked_lm_loss(torch.zeros(0, 3, requires_grad=True), torch.zeros(0, dtype=torch.long))
    assert empty.item() == 0.0 and empty.requires_grad


# Corruption ---------------------------------------------------------------------------------


def test_mask_tokens_chooses_and_corrupts_as_bert_does():
    rng = np.random.default_rng(0)
    rows = ragged([list(range(10, 10 + n)) for n in rng.integers(1, 30, size=4000)])
    replacements = np.arange(4, 200, dtype=np.int32)
    out = mask_tokens(rows, 0.15, TOKENS.mask, replacements, np.random.default_rng(1))
    n = len(rows.values)
    # Every chosen subword's target is the original at its row and position.
    flat = rows.offsets[out.row] + out.position
    np.testing.assert_array_equal(rows.values[flat], out.targets)
    assert abs(len(out.targets) / n - 0.15) < 0.01  # ~60K subwords: 0.15 ± 0.0015 (1 s.d.)
    corrupted = out.rows.values[flat]
    masked = corrupted == TOKENS.mask
    kept = corrupted == out.targets
    assert abs(masked.mean() - 0.8) < 0.02
    assert abs(kept.mean() - 0.1) < 0.02  # kept, or replaced by chance with itself
    changed = ~masked & ~kept
    assert abs(changed.mean() - 0.1) < 0.02
    assert np.isin(corrupted[changed], replacements).all()
    # What was not chosen is untouched.
    untouched = np.ones(n, dtype=bool)
    untouched[flat] = False
    np.testing.assert_array_equal(out.rows.values[untouched], rows.values[untouched])


def _uncorrupted(pairs: Pairs, index: np.ndarray):
    """The TLM batch of the pairs with nothing chosen, for comparing layouts."""
    plain = Collator(TOKENS, ranking=False, lm="tlm", mlm_probability=1e-12, vocab_size=50)
    return plain(pairs, index, rng=np.random.default_rng(0))


def test_tlm_concatenates_each_pair_and_restarts_positions():
    pairs = Pairs(
        xx=ragged([[5, 6], [7]]),
        en=ragged([[8], [9, 10, 11]]),
        lang=np.zeros(2, dtype=np.int16),
        langs=("de",),
    )
    collator = Collator(TOKENS, ranking=False, lm="tlm", mlm_probability=1.0, vocab_size=50)
    plain = _uncorrupted(pairs, np.array([0, 1]))
    assert plain.ids is None  # no pair batch: TLM alone
    # <s> x </s> </s> y </s>, padded with 1.
    assert plain.lm.ids.tolist() == [[0, 5, 6, 2, 2, 8, 2, 1], [0, 7, 2, 2, 9, 10, 11, 2]]
    assert plain.lm.mask.tolist() == [[1] * 7 + [0], [1] * 8]
    # Positions restart at y's first </s> (column len(x) + 2); padding 0.
    assert plain.lm.positions.tolist() == [[0, 1, 2, 3, 0, 1, 2, 0], [0, 1, 2, 0, 1, 2, 3, 4]]
    assert len(plain.lm.targets) == 0
    # Everything chosen: every subword of both sides predicts itself, at its column.
    batch = collator(pairs, np.array([0, 1]), rng=np.random.default_rng(3))
    rows, cols = batch.lm.predict[:, 0], batch.lm.predict[:, 1]
    assert sorted(zip(rows.tolist(), cols.tolist(), strict=True)) == [
        (0, 1), (0, 2), (0, 5), (1, 1), (1, 4), (1, 5), (1, 6)
    ]  # fmt: skip
    assert plain.lm.ids[rows, cols].tolist() == batch.lm.targets.tolist()


def test_tlm_language_ids_follow_each_side():
    pairs = Pairs(ragged([[5, 6]]), ragged([[8]]), np.zeros(1, dtype=np.int16), ("kk",))
    collator = Collator(
        TOKENS, {"en": 0, "kk": 1}, ranking=False, lm="tlm", mlm_probability=1e-12, vocab_size=50
    )
    batch = collator(pairs, np.array([0]), rng=np.random.default_rng(0))
    assert batch.lm.types.tolist() == [[1, 1, 1, 1, 0, 0, 0]]


# Language sampling --------------------------------------------------------------------------


def test_language_probabilities_by_hand():
    # de 100, kk 400 sentences, English 1000 capped at the largest other (400):
    # p = (100, 400, 400) / 900, α = 0.5: q ∝ (1, 2, 2) → (0.2, 0.4, 0.4).
    q = language_probabilities(np.array([100, 400, 1000]), 0.5, english=2)
    np.testing.assert_allclose(q, [0.2, 0.4, 0.4])
    np.testing.assert_allclose(language_probabilities(np.array([1, 3]), 1.0, None), [0.25, 0.75])
    np.testing.assert_allclose(language_probabilities(np.array([1, 3, 0]), 0.0, 1), [0.5, 0.5, 0])


def _pairs() -> Pairs:
    """de: 3 pairs, kk: 2; the English "hello" (ids 20 21) translates a de and a kk sentence."""
    return Pairs(
        xx=ragged([[5], [6], [7], [8], [9]]),
        en=ragged([[20, 21], [22], [23], [20, 21], [24]]),
        lang=np.array([0, 0, 0, 1, 1], dtype=np.int16),
        langs=("de", "kk"),
    )


def test_monolingual_keeps_each_side_and_english_once():
    pool = monolingual(_pairs())
    assert pool.langs == ("de", "kk", "en")
    assert pool.counts().tolist() == [3, 2, 4]  # four distinct English sentences
    english = [pool.sentences.row(i).tolist() for i in np.flatnonzero(pool.lang == 2)]
    assert sorted(english) == [[20, 21], [22], [23], [24]]
    # de 0 and kk 3 share the meaning of "hello": the same id as the English sentence.
    hello = next(i for i in np.flatnonzero(pool.lang == 2) if pool.sentences.row(i)[0] == 20)
    assert pool.meaning[0] == pool.meaning[3] == pool.meaning[hello]
    assert len(set(pool.meaning.tolist())) == 4


def test_monolingual_batches_never_hold_a_sentence_with_its_translation():
    pool = monolingual(_pairs())
    sampler = LanguageSampler(pool, np.array([0.4, 0.2, 0.4]), seed=5)
    for _ in range(300):
        index = sampler.take(4)
        assert len(set(pool.meaning[index].tolist())) == len(index)
    assert sampler.dropped > 0  # collisions happen in so small a pool, and were dropped


def test_language_sampler_follows_the_probabilities_and_resumes_exactly():
    rng = np.random.default_rng(0)
    sizes = {"de": 500, "kk": 50}
    xx = ragged([[int(t)] for t in rng.integers(5, 1000, size=550)])
    en = ragged([[1000 + i] for i in range(550)])  # every English sentence distinct
    lang = np.repeat([0, 1], list(sizes.values())).astype(np.int16)
    pool = monolingual(Pairs(xx, en, lang, tuple(sizes)))
    q = language_probabilities(pool.counts(), 0.3, english=2)
    sampler = LanguageSampler(pool, q, seed=1)
    drawn = np.concatenate([sampler.take(64) for _ in range(200)])
    shares = np.bincount(pool.lang[drawn], minlength=3) / len(drawn)
    np.testing.assert_allclose(shares, q, atol=0.02)
    # Resumed from its state, a sampler continues with the same draws.
    state = sampler.state()
    upcoming = [sampler.take(64) for _ in range(5)]
    resumed = LanguageSampler(pool, q, seed=1, **state)
    for expected in upcoming:
        np.testing.assert_array_equal(resumed.take(64), expected)


# Training and what a run starting from it gets ----------------------------------------------

SHAPE = tiny_shape()
SETTINGS = dict(
    seed=3,
    max_length=16,
    lr=2e-3,
    batch_size=16,
    micro_batch_size=16,
    max_steps=12,
    eval_every=6,
    checkpoint_every=6,
    log_every=6,
    dev_max_pairs=50,
    device="cpu",
)


def _trainer(subwords, tokenizer, checkpoints, spec: ModelSpec, **overrides) -> Trainer:
    return Trainer(
        TrainSettings(**{**SETTINGS, **overrides}),
        spec,
        {lang: p["train"] for lang, p in subwords.items()},
        {lang: p["dev"] for lang, p in subwords.items()},
        checkpoints,
    )


@pytest.mark.parametrize("method", ["mlm", "tlm", "tr-tlm"])
def test_language_modelling_lowers_its_loss(small_subwords, small_tokenizer, tmp_path, method):
    torch.manual_seed(0)
    scratch = ModelSpec("scratch", small_tokenizer, shape=SHAPE)
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path, scratch, method=method)
    trainer.objective.eval()
    batch = trainer.batch(trainer.sampler.take(32))
    assert batch.lm is not None and len(batch.lm.targets) > 0
    assert (batch.ids is not None) == (method == "tr-tlm")
    name = "mlm" if method == "mlm" else "tlm"
    _, parts = trainer.objective(batch)
    assert set(parts) == ({"tr", "tlm"} if method == "tr-tlm" else {name})
    for _ in range(5):
        trainer.optimizer.zero_grad()
        trainer.objective(batch)[0].backward()
        trainer.optimizer.step()
    with torch.no_grad():
        _, parts_after = trainer.objective(batch)
    assert parts_after[name] < parts[name]


def test_mlm_draws_sentences_and_keeps_the_pivot_in_check(
    small_subwords, small_tokenizer, tmp_path
):
    scratch = ModelSpec("scratch", small_tokenizer, shape=SHAPE)
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path, scratch, method="mlm")
    pool = trainer.train_data
    assert pool.langs[-1] == "en"
    train = load_pairs({lang: p["train"] for lang, p in small_subwords.items()}, 16)
    assert pool.counts()[:-1].tolist() == np.bincount(train.lang).tolist()
    # A micro-batch draws 2 × micro_batch_size sentences (as many as a pair batch encodes).
    trainer.train_step()
    assert trainer.sampler.draws == 1
    assert sum(trainer.sampler.positions) == 32


def test_an_mlm_run_exports_the_head_that_a_run_starting_from_it_predicts_with(
    small_subwords, small_tokenizer, tmp_path
):
    torch.set_num_threads(1)
    scratch = ModelSpec("scratch", small_tokenizer, shape=SHAPE)
    pretraining = _trainer(small_subwords, small_tokenizer, tmp_path / "mlm", scratch, method="mlm")
    best = pretraining.run()
    # A pretraining run keeps its last step, whatever its dev P@1 did.
    assert best["step"] == SETTINGS["max_steps"]
    out = tmp_path / "model"
    pretraining.export(out, {"settings": {}})
    assert (out / HEAD_FILE).is_file()

    # A run starting from it (a tr-tlm run here; wacse's AWP and DAP's RTL build their head
    # the same way): the encoder's weights and the MLM head are the pretrained ones, the
    # head's decoder tied to the new encoder's embeddings.
    spec = ModelSpec("pretrained", small_tokenizer, pretrained_dir=out)
    tuned = _trainer(small_subwords, small_tokenizer, tmp_path / "tr", spec, method="tr-tlm")
    for name, value in pretraining.model.state_dict().items():
        torch.testing.assert_close(tuned.model.state_dict()[name], value.cpu())
    for name, value in pretraining.objective.mlm.state_dict().items():
        torch.testing.assert_close(tuned.objective.mlm.state_dict()[name], value)
    embeddings = tuned.model.get_input_embeddings().weight
    assert tuned.objective.mlm.decoder.weight is embeddings

    # A head file that does not fit is an error naming it, not a silently fresh head.
    torch.save({"dense.weight": torch.zeros(2, 2)}, out / HEAD_FILE)
    with pytest.raises(ValueError, match=HEAD_FILE):
        mlm_head(tuned.model.config, tuned.model.get_input_embeddings(), out)


def test_a_frozen_encoder_leaves_the_heads_alone_to_train(
    small_subwords, small_tokenizer, tmp_path
):
    """`freeze_encoder`: an mlm run's steps move its MLM head (dense, LayerNorm, output bias)
    and nothing of the encoder, the head's decoder (the word embeddings) included; a method
    without a head is refused before it trains."""
    scratch = ModelSpec("scratch", small_tokenizer, shape=SHAPE)
    frozen = {"method": "mlm", "freeze_encoder": True, "head_lr": 1e-2}
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path / "mlm", scratch, **frozen)
    encoder = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    head = {n: p.detach().clone() for n, p in trainer.objective.mlm.named_parameters()}
    optimised = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert not optimised & {id(p) for p in trainer.model.parameters()}
    trainer.run(tmp_path / "train_log.jsonl")
    # The log gives the heads' rate beside the encoder's, on the same schedule.
    logged = [json.loads(line) for line in (tmp_path / "train_log.jsonl").read_text().splitlines()]
    rates = [(r["lr"], r["head_lr"]) for r in logged if "loss" in r]
    assert len(rates) == 2 and all(head_lr == pytest.approx(5 * lr) for lr, head_lr in rates)
    for name, value in trainer.model.named_parameters():
        assert torch.equal(value, encoder[name]), name
    moved = {n for n, p in trainer.objective.mlm.named_parameters() if not torch.equal(p, head[n])}
    assert moved == set(head) - {"decoder.weight"}
    assert "dense.weight" in moved

    with pytest.raises(ValueError, match=r"train\.freeze_encoder: method 'tr' trains no head"):
        _trainer(small_subwords, small_tokenizer, tmp_path / "tr", scratch, freeze_encoder=True)


def test_collate_of_the_pair_batch_is_unchanged_by_language_modelling():
    """tr-tlm's pair batch is TR's: the TLM sequences come beside it."""
    pairs = Pairs(ragged([[5, 6], [7]]), ragged([[8], [9, 10]]), np.zeros(2, np.int16), ("de",))
    tr = Collator(TOKENS)(pairs, np.array([1, 0]))
    both = Collator(TOKENS, lm="tlm", vocab_size=50)(
        pairs, np.array([1, 0]), rng=np.random.default_rng(0)
    )
    expected, _ = collate(ragged([[7], [5, 6], [9, 10], [8]]), 0, 2, 1)
    assert torch.equal(tr.ids, expected) and torch.equal(both.ids, expected)
    assert both.lm is not None and tr.lm is None
