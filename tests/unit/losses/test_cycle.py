"""Dual-pivot's cycle loss (`xlsent.losses.cycle`): two triplet losses, by hand."""

from __future__ import annotations

import math

import pytest
import torch

from xlsent.losses.cycle import cycle_loss


def test_cycle_loss_is_two_triplet_losses_by_hand():
    identity = torch.eye(2)
    cos, sin = math.cos(0.3), math.sin(0.3)
    # G(F(y_s)) rotates the two source vectors by 0.3 rad; F(G(y_t)) = y_t exactly.
    rotated = torch.tensor([[cos, -sin], [sin, cos]])
    none = torch.zeros(2, 0, dtype=torch.long)
    loss = cycle_loss(identity, rotated, identity, identity, none, none, margin=1.0)
    # Source: S = y_s · cycled^T = [[cos, sin], [−sin, cos]]. Pair 0: its hardest cycled
    # negative scores sin (hinge 1 − cos + sin), its hardest source negative −sin (hinge
    # 1 − cos − sin < 0 → 0); pair 1 the mirror image. Target: S = I, hinges 1 − 1 + 0 = 0.
    assert loss.item() == pytest.approx(1 - cos + sin)
    # The authors' criterion (`dualpivot.hinge: false` switches L_cycle as it does L_sup): the
    # mean of s(neg) − s(pos) over the hardest negatives. Source: pair 0's sin − cos and
    # −sin − cos, pair 1's the mirror image, mean −cos; target: 0 − 1 four times, mean −1.
    code = cycle_loss(identity, rotated, identity, identity, none, none, margin=1.0, hinge=False)
    assert code.item() == pytest.approx(-cos - 1)
