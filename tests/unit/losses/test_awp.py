"""AWP (WACSE eq. 4–5): what is masked, what is predicted, and the loss by hand."""

import math

import numpy as np
import pytest
import torch

from xlsent.losses.awp import aligned_word_prediction_loss, term_cross_entropy
from xlsent.ragged import Ragged
from xlsent.train.collate import masked_copies

M = 99  # the mask id

# One pair. X (non-English): 4 subwords in 3 words; Y (English): 3 subwords in 2 words.
X = np.array([10, 11, 12, 13])
X_STARTS, X_ENDS = np.array([0, 1, 3]), np.array([1, 3, 4])
Y = np.array([20, 21, 22])
Y_STARTS, Y_ENDS = np.array([0, 2]), np.array([2, 3])


def _copies(links, samples=0, seed=0):
    return masked_copies(
        Ragged.from_rows([X, Y]),
        Ragged.from_rows([X_STARTS, Y_STARTS]),
        Ragged.from_rows([X_ENDS, Y_ENDS]),
        Ragged(np.array(links, dtype=np.int32).reshape(-1, 2), np.array([0, len(links)])),
        M,
        samples,
        np.random.default_rng(seed),
    )


def _rows(copies):
    return [row.tolist() for row in copies.rows.to_list()]


def test_masks_the_aligned_word_and_targets_the_other_side():
    # x word 1 (subwords 11 12) ↔ y word 0 (subwords 20 21): same length, no clipping.
    copies = _copies([(1, 0)])
    assert _rows(copies) == [[10, M, M, 13], [M, M, 22]]
    assert copies.sentence.tolist() == [0, 1]
    assert copies.copy.tolist() == [0, 0, 1, 1]
    assert copies.positions.tolist() == [1, 2, 0, 1]
    assert copies.targets.tolist() == [20, 21, 11, 12]
    # MLM(X, x_j; y_k) is the mean over the word's predictions: each weighs 1/2.
    assert copies.weights.tolist() == [0.5, 0.5, 0.5, 0.5]


def test_the_longer_word_is_clipped_to_the_shorter():
    # x word 1 (2 subwords) ↔ y word 1 (1 subword): both x subwords masked, the first predicts.
    copies = _copies([(1, 1)])
    assert _rows(copies) == [[10, M, M, 13], [20, 21, M]]
    assert copies.positions.tolist() == [1, 2]
    assert copies.targets.tolist() == [22, 11]
    assert copies.copy.tolist() == [0, 1]
    assert copies.weights.tolist() == [1.0, 1.0]


def test_every_aligned_word_gets_its_own_copy_and_a_word_with_two_links_two_terms():
    copies = _copies([(0, 0), (2, 0), (2, 1)], samples=0)
    # X: words 0 and 2 aligned (two copies); Y: words 0 and 1 (two copies).
    assert _rows(copies) == [
        [M, 11, 12, 13],
        [10, 11, 12, M],
        [M, M, 22],
        [20, 21, M],
    ]
    # x word 2 is linked to y words 0 and 1: its copy predicts both (at its one position).
    in_copy_1 = copies.copy == 1
    assert copies.positions[in_copy_1].tolist() == [3, 3]
    assert copies.targets[in_copy_1].tolist() == [20, 22]


def test_drawn_words_are_scaled_to_estimate_the_sum_without_bias():
    links = [(0, 0), (1, 1), (2, 1)]  # three aligned x words; y word 0 has 1 link, y word 1 two
    copies = _copies(links, samples=1, seed=3)
    assert len(copies.rows) == 2  # one copy per sentence
    # A drawn word stands for |A| / 1 words: each of its links weighs |A| in total.
    assert copies.weights[copies.copy == 0].sum() == pytest.approx(3.0)
    y_links = 1 if copies.rows.row(1)[0] == M else 2
    assert copies.weights[copies.copy == 1].sum() == pytest.approx(2.0 * y_links)
    # Every aligned word gets drawn: over many steps the estimate averages to the full sum.
    drawn = {int(np.flatnonzero(_copies(links, 1, seed).rows.row(0) == M)[0]) for seed in range(50)}
    assert drawn == {0, 1, 3}


def test_pairs_without_links_make_no_copies():
    copies = _copies([])
    assert len(copies.rows) == 0 and copies.targets.size == 0


def test_loss_is_a_pure_function_of_tensors_checked_by_hand():
    # Two predictions over a vocabulary of 3, weights 0.5 and 2, a batch of N = 2 pairs.
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 3.0]])
    targets = torch.tensor([0, 1])
    weights = torch.tensor([0.5, 2.0])
    ce0 = -math.log(math.exp(2) / (math.exp(2) + 2))
    ce1 = -math.log(math.exp(1) / (1 + math.exp(1) + math.exp(3)))
    expected = (0.5 * ce0 + 2.0 * ce1) / (2 * 2)
    logits.requires_grad_(True)
    loss = aligned_word_prediction_loss(logits, targets, weights, n_pairs=2)
    assert loss.ndim == 0
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    loss.backward()  # differentiable in the logits, which is all it reads from a model
    assert logits.grad.shape == logits.shape


# Two pairs for the diagnostics. Pair 0: X and Y above, x word 1 (2 subwords) ↔ y word 0
# (2 subwords) and x word 2 (1) ↔ y word 1 (1). Pair 1: x = 30 (one word), y = 40 41 (one word
# of 2 subwords), x word 0 ↔ y word 0, clipped to 1 subword. Sentences: X, X1, Y, Y1.
X1, Y1 = np.array([30]), np.array([40, 41])


def _two_pairs(samples=0, seed=0):
    return masked_copies(
        Ragged.from_rows([X, X1, Y, Y1]),
        Ragged.from_rows([X_STARTS, np.array([0]), Y_STARTS, np.array([0])]),
        Ragged.from_rows([X_ENDS, np.array([1]), Y_ENDS, np.array([2])]),
        Ragged(np.array([[1, 0], [2, 1], [0, 0]], dtype=np.int32), np.array([0, 2, 3])),
        M,
        samples,
        np.random.default_rng(seed),
    )


def test_terms_and_links_per_sentence_counted_by_hand():
    copies = _two_pairs()
    # 3 links, each seen from both sides, over 2N = 4 sentences.
    assert copies.links_per_sentence == 1.5
    # Each link side is one term: the 2-subword word's two predictions share it, 1/2 each;
    # X's links first (pair 0's two, then pair 1's), then the Y sides in the same order.
    assert copies.targets.tolist() == [20, 21, 22, 40, 11, 12, 13, 30]
    assert copies.terms.tolist() == [0.5, 0.5, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0]
    assert copies.terms.sum() == 6  # the terms: 2 × 3 links
    assert copies.weights.tolist() == copies.terms.tolist()  # eq. 4 exactly: no draw


def test_terms_leave_out_the_draws_scale_and_links_count_every_link():
    # One drawn word a sentence: X and Y have two aligned words each, so their drawn term
    # weighs 2 in eq. 5's estimate, and still 1 as a term.
    copies = _two_pairs(samples=1, seed=0)
    assert copies.links_per_sentence == 1.5  # the batch's links, drawn or not
    scale = np.array([2.0, 1.0, 2.0, 1.0])[copies.sentence[copies.copy]]
    assert np.allclose(copies.weights, copies.terms * scale)
    assert copies.terms.sum() == 4  # one term a sentence
    assert copies.terms.dtype == np.float32


def test_no_link_no_term():
    copies = _copies([])
    assert copies.terms.size == 0 and copies.links_per_sentence == 0.0


def test_term_cross_entropy_by_hand():
    # Three predictions over 3 pieces: a word of 2 subwords (half a term each), one of 1.
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 3.0]])
    targets, terms = torch.tensor([0, 2, 1]), torch.tensor([0.5, 0.5, 1.0])
    ce = [math.log(math.exp(2) + 2) - 2, math.log(3), math.log(1 + math.e + math.exp(3)) - 1]
    logits.requires_grad_(True)
    sums = term_cross_entropy(logits, targets, terms)
    assert not sums.requires_grad  # a diagnostic: no gradient reaches the model through it
    assert sums[1].item() == 2.0  # two terms
    expected = (0.5 * ce[0] + 0.5 * ce[1] + ce[2]) / 2
    assert (sums[0] / sums[1]).item() == pytest.approx(expected, rel=1e-6)


def test_term_cross_entropy_of_uniform_logits_is_ln_v():
    logits = torch.zeros(5, 250_002)
    targets = torch.tensor([0, 7, 250_001, 3, 3])
    terms = torch.tensor([0.5, 0.5, 1.0, 1 / 3, 1 / 3])
    total, count = term_cross_entropy(logits, targets, terms).tolist()
    assert total / count == pytest.approx(math.log(250_002), rel=1e-6)
