"""WTR (WACSE eq. 6–8): word vectors, the ranking over the other sentence's words, by hand."""

import math

import numpy as np
import pytest
import torch

from xlsent.losses.wtr import word_translation_ranking_loss
from xlsent.ragged import Ragged
from xlsent.train.collate import word_pooling
from xlsent.train.objectives import word_vectors


def _nll(gold: float, others: list[float], tau: float) -> float:
    return -math.log(math.exp(gold / tau) / sum(math.exp(v / tau) for v in [gold, *others]))


def test_word_vectors_average_each_words_subwords_after_cls():
    # One sentence: CLS, then 4 subwords; words cover [0,1) and [1,4); a third word has none.
    starts, ends = Ragged.from_rows([np.array([0, 1, 2])]), Ragged.from_rows([np.array([1, 4, 2])])
    pool, valid = word_pooling(starts, ends, width=6)
    hidden = torch.arange(6, dtype=torch.float32).reshape(1, 6, 1) * torch.ones(1, 6, 2)
    vectors = word_vectors(hidden, pool)
    assert vectors[0, 0].tolist() == [1.0, 1.0]  # token position 1
    assert vectors[0, 1].tolist() == [3.0, 3.0]  # mean of positions 2, 3, 4
    assert valid.tolist() == [[True, True, False]]


# One pair. X words: x0 = (1, 0), x1 = (0, 1). Y words: y0 = (1, 0), y1 = (1, 1), y2 invalid.
XX = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]])
EN = torch.tensor([[[1.0, 0.0], [1.0, 1.0], [5.0, 5.0]]])
XX_VALID = torch.tensor([[True, True, False]])
EN_VALID = torch.tensor([[True, True, False]])
R = 1 / math.sqrt(2)


def test_one_link_against_hand_computation_with_plain_tensors():
    tau = 0.5
    links = torch.tensor([[0, 1, 1]])  # x1 ↔ y1
    # x1 = (0, 1) ranks y0 (cos 0) and y1 (cos 1/√2); y2 is not a word with subwords.
    forward = _nll(R, [0.0], tau)
    # y1 = (1, 1) ranks x0 (cos 1/√2) and x1 (cos 1/√2).
    backward = _nll(R, [R], tau)
    expected = (forward + backward) / (2 * 1)
    xx = XX.clone().requires_grad_(True)
    loss = word_translation_ranking_loss(xx, XX_VALID, EN, EN_VALID, links, tau)
    assert loss.ndim == 0
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    loss.backward()  # differentiable in the word vectors, which is all it reads from a model
    assert xx.grad[0, 1].abs().sum() > 0


def test_links_of_a_sentence_sum_and_the_batch_averages_over_2n():
    tau = 0.5
    links = torch.tensor([[0, 0, 0], [0, 1, 1]])
    per_link = [
        _nll(1.0, [R], tau) + _nll(1.0, [0.0], tau),  # x0 ↔ y0, both directions
        _nll(R, [0.0], tau) + _nll(R, [R], tau),  # x1 ↔ y1
    ]
    loss = word_translation_ranking_loss(XX, XX_VALID, EN, EN_VALID, links, tau)
    assert loss.item() == pytest.approx(sum(per_link) / 2, rel=1e-6)


def test_candidates_are_the_other_sentences_words_only():
    """A second pair in the batch changes the normaliser 2N, never the candidates."""
    tau = 0.5
    links = torch.tensor([[0, 1, 1]])
    alone = word_translation_ranking_loss(XX, XX_VALID, EN, EN_VALID, links, tau)
    other = torch.tensor([[[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]])  # would out-rank y1 for x1
    two = word_translation_ranking_loss(
        torch.cat([XX, other]),
        torch.cat([XX_VALID, XX_VALID]),
        torch.cat([EN, other]),
        torch.cat([EN_VALID, EN_VALID]),
        links,
        tau,
    )
    assert two.item() == pytest.approx(alone.item() / 2, rel=1e-6)
