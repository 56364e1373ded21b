"""Micro-batches of similar length (`train.length_window`, xlsent.train.data.EpochSampler):
an epoch draws the pairs it draws without, in an order that is a function of the seed and
the epoch (a resumed run continues it exactly), in micro-batches with less padding on the
real lengths of the test corpus; refused for mlm, which draws sentences. And pretraining's
data: XLM-R's language sampling, and monolingual batches that never hold a sentence with its
translation."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch
from support import ROOT, ragged, scratch_trainer, train_settings

from xlsent.config import ConfigError, validate
from xlsent.train.checkpoints import fingerprints
from xlsent.train.data import (
    EpochSampler,
    LanguageSampler,
    Pairs,
    language_probabilities,
    load_pairs,
    monolingual,
    pair_lengths,
)
from xlsent.train.loop import Trainer
from xlsent.train.settings import identity
from xlsent.train.speed import FIELDS

MICRO = 16
WINDOW = 8


@pytest.fixture(scope="module")
def lengths(small_subwords) -> np.ndarray:
    """Each training pair's longer side at max_length 16, as the trainer reads them."""
    return pair_lengths(load_pairs({lang: p["train"] for lang, p in small_subwords.items()}, 16))


def _epoch(sampler: EpochSampler) -> list[np.ndarray]:
    """The micro-batches `sampler` draws until its epoch ends."""
    epoch, out = sampler.epoch, []
    while True:
        batch = sampler.take(MICRO)
        if sampler.epoch != epoch:
            return out
        out.append(batch)


def _padding_share(batches: list[np.ndarray], lengths: np.ndarray) -> float:
    """The share of a collated micro-batch's positions that are padding (each pair's two
    sentences as long as its longer side: the least padding any batching leaves), <s> and
    </s> counted as tokens."""
    real = sum(int((lengths[b] + 2).sum()) for b in batches)
    slots = sum(len(b) * (int(lengths[b].max()) + 2) for b in batches)
    return 1 - real / slots


def test_an_epoch_draws_its_pairs_in_micro_batches_of_similar_length(lengths):
    """The same pairs as an epoch without windows (its tail as short), each window of 8
    micro-batches sorted and its micro-batches in a seeded order; less padding."""
    plain = _epoch(EpochSampler(len(lengths), 5))
    windowed = _epoch(EpochSampler(len(lengths), 5, lengths=lengths, batch=MICRO, window=WINDOW))
    again = _epoch(EpochSampler(len(lengths), 5, lengths=lengths, batch=MICRO, window=WINDOW))
    assert len(windowed) == len(plain) == len(lengths) // MICRO
    assert np.array_equal(np.sort(np.concatenate(windowed)), np.sort(np.concatenate(plain)))
    assert all(np.array_equal(a, b) for a, b in zip(windowed, again, strict=True))
    for start in range(0, len(windowed), WINDOW):
        window = windowed[start : start + WINDOW]
        # Sorted within the window: each micro-batch's lengths are a range no other overlaps.
        spans = sorted((lengths[b].min(), lengths[b].max()) for b in window)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
        same = np.sort(np.concatenate(plain[start : start + WINDOW]))
        assert np.array_equal(np.sort(np.concatenate(window)), same)
    # Taken in a seeded order, not from the shortest up.
    firsts = [lengths[b].min() for b in windowed[:WINDOW]]
    assert firsts != sorted(firsts)
    ours, theirs = _padding_share(windowed, lengths), _padding_share(plain, lengths)
    print(f"padding share: {theirs:.3f} drawn at random, {ours:.3f} by length")
    assert ours < theirs / 2


def test_a_sampler_rebuilt_from_its_state_draws_on_as_the_first(lengths):
    """The two integers of a checkpoint (`state`), mid-epoch and across the epoch's end."""
    settings = {"lengths": lengths, "batch": MICRO, "window": WINDOW}
    first = EpochSampler(len(lengths), 5, **settings)
    for _ in range(100):
        first.take(MICRO)
    rebuilt = EpochSampler(len(lengths), 5, **first.state(), **settings)
    for _ in range(len(lengths) // MICRO):  # past the end of epoch 0
        assert np.array_equal(first.take(MICRO), rebuilt.take(MICRO))
    assert first.epoch == 1
    with pytest.raises(ValueError, match="micro-batches have 16 rows, not 8"):
        first.take(8)


SETTINGS = train_settings(
    batch_size=4 * MICRO,
    micro_batch_size=MICRO,
    max_steps=60,  # 2,880 pairs: epoch 0 ends at step 45
    eval_every=60,
    checkpoint_every=8,
    log_every=8,
    dev_max_pairs=50,
    length_window=WINDOW,
)


def _trainer(small_subwords, small_tokenizer, checkpoints: Path, **overrides) -> Trainer:
    return scratch_trainer(small_subwords, small_tokenizer, checkpoints, {**SETTINGS, **overrides})


class Killed(Exception):
    pass


def _without_speed(history: list[dict]) -> list[dict]:
    """A run's log lines without what the machine decides (`xlsent.train.speed.FIELDS`)."""
    return [{k: v for k, v in entry.items() if k not in FIELDS} for entry in history]


def test_a_killed_run_resumes_to_the_weights_of_an_uninterrupted_one(
    small_subwords, small_tokenizer, tmp_path
):
    """Killed as it starts step 42 (the checkpoint of step 40 in epoch 0), resumed, it trains
    through the epoch's end to step 60 and ends with an uninterrupted run's weights and log.
    Its checkpoint is not one of the run without length windows, nor theirs its."""
    torch.set_num_threads(1)
    straight = _trainer(small_subwords, small_tokenizer, tmp_path / "straight")
    straight.run()
    assert straight.sampler.epoch == 1

    killed = _trainer(small_subwords, small_tokenizer, tmp_path / "killed")
    train_step = killed.train_step

    def dying() -> dict:
        if killed.step == 41:
            raise Killed
        return train_step()

    killed.train_step = dying
    with pytest.raises(Killed):
        killed.run()
    resumed = _trainer(small_subwords, small_tokenizer, tmp_path / "killed")
    assert resumed.resume() and resumed.step == 40 and resumed.sampler.epoch == 0
    resumed.run()
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    assert _without_speed(resumed.history) == _without_speed(straight.history)
    plain = _trainer(small_subwords, small_tokenizer, tmp_path / "killed", length_window=0)
    assert not plain.resume()
    assert identity(plain.settings) != identity(straight.settings)
    # Nor does a run with windows resume a checkpoint written before identities (a digest of
    # every field then known), which trained without them.
    spec = straight.model_spec
    earlier = [fingerprints(t.settings, spec, [], 1)[1] for t in (straight, plain)]
    assert earlier[0] != earlier[1]


def test_mlm_refuses_length_windows(small_subwords, small_tokenizer, tmp_path):
    """MLM draws sentences language by language: the trainer and the config check refuse."""
    with pytest.raises(ValueError, match="mlm draws sentences language by language"):
        _trainer(small_subwords, small_tokenizer, tmp_path, method="mlm", batch_size=2 * MICRO)
    config = {"runs": {"m": {"method": "mlm", "model": "xlmr", "train": {"length_window": 8}}}}
    with pytest.raises(ConfigError, match=r"`runs.m.train.length_window` sorts the pairs"):
        validate(config, ROOT / "workflow" / "schemas" / "config.schema.yaml")


# -- pretraining's language sampling and monolingual batches -------------------------------


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
