"""Dual-pivot's critic loss (`xlsent.losses.critic`) by hand."""

from __future__ import annotations

import pytest
import torch

from xlsent.losses.critic import critic_loss


def test_critic_loss_by_hand():
    source, target = torch.tensor([1.0, 3.0]), torch.tensor([0.5, -0.5, 1.5])
    assert critic_loss(source, target).item() == pytest.approx(2.0 - 0.5)
