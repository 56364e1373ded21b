"""The masked language model's loss (`xlsent.losses.mlm`) by hand."""

from __future__ import annotations

import math

import pytest
import torch

from xlsent.losses.mlm import masked_lm_loss


def test_masked_lm_loss_by_hand():
    # Two chosen positions over a vocabulary of 3: logits (0, 0, ln 2) → p = (1/4, 1/4, 1/2)
    # and target 2: −ln(1/2); logits (0, 0, 0) and target 0: −ln(1/3). Mean of the two.
    logits = torch.tensor([[0.0, 0.0, math.log(2)], [0.0, 0.0, 0.0]])
    loss = masked_lm_loss(logits, torch.tensor([2, 0]))
    assert loss.item() == pytest.approx((math.log(2) + math.log(3)) / 2)
    empty = masked_lm_loss(torch.zeros(0, 3, requires_grad=True), torch.zeros(0, dtype=torch.long))
    assert empty.item() == 0.0 and empty.requires_grad
