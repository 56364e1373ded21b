"""AWP (WACSE eq. 4–5): what is masked, what is predicted, and the loss by hand."""

import math

import numpy as np
import pytest
import torch

from xlsent.losses.awp import aligned_word_prediction_loss
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
