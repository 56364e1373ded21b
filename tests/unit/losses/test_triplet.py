"""Dual-pivot's triplet ranking loss (`xlsent.losses.triplet`) by hand."""

from __future__ import annotations

import pytest
import torch

from xlsent.losses.triplet import triplet_ranking_loss


def test_triplet_with_the_hardest_negative_by_hand():
    # s(a_i, b_j): positives 0.9, 0.5, 0.8 on the diagonal.
    sim = torch.tensor([[0.9, 0.2, 0.7], [0.1, 0.5, 0.6], [0.3, 0.4, 0.8]])
    no_random = torch.zeros(3, 0, dtype=torch.long)
    # Hardest b for a_i (row max off the diagonal): 0.7, 0.6, 0.4; hardest a for b_j
    # (column max): 0.3, 0.4, 0.7. With α = 0.2, each pair's two hinges:
    # pair 0: max(0, .2-.9+.7)=0, max(0, .2-.9+.3)=0; pair 1: .2-.5+.6=.3, .2-.5+.4=.1;
    # pair 2: .2-.8+.4=0 (−0.2), .2-.8+.7=.1.  Mean over pairs: (0 + .4 + .1) / 3.
    loss = triplet_ranking_loss(sim, no_random, margin=0.2)
    assert loss.item() == pytest.approx(0.5 / 3)


def test_triplet_random_negatives_by_hand():
    sim = torch.tensor([[0.9, 0.2, 0.7], [0.1, 0.5, 0.6], [0.3, 0.4, 0.8]])
    # One random negative per pair: pair 0 → index 1, pair 1 → 0, pair 2 → 0.
    rand = torch.tensor([[1], [0], [0]])
    # Extra hinges with α = 0: s(a_i, b_r) − s_ii and s(a_r, b_i) − s_ii, clamped at 0:
    # pair 0: .2-.9, .1-.9 → 0; pair 1: .1-.5, .2-.5 → 0; pair 2: .3-.8, .7-.8 → 0.
    # Hardest at α = 0: pair 1: .6-.5=.1 (b), .4-.5<0; pair 2: .4-.8<0, .7-.8<0.
    assert triplet_ranking_loss(sim, rand, margin=0.0).item() == pytest.approx(0.1 / 3)
    # The authors' variant: the hardest always, random ones only inside the margin (none
    # here at α = 0), averaged: hardest differences (−.2, −.6, .1, −.1, −.4, −.1) → mean.
    code = triplet_ranking_loss(sim, rand, margin=0.0, hinge=False)
    assert code.item() == pytest.approx((-0.2 - 0.6 + 0.1 - 0.1 - 0.4 - 0.1) / 6)
