"""RTL's loss (DAP eq. 6, `xlsent.losses.rtl`) by hand (its head:
tests/unit/models/test_rtl_head.py)."""

import math

import pytest
import torch

from xlsent.losses.rtl import representation_translation_loss


def test_loss_is_the_mean_over_the_batchs_english_tokens():
    """DAP's code takes Hugging Face's masked-LM loss: every target token of the batch counts
    once, whichever sentence it is in."""
    # Plain tensors: logits of three English tokens over a vocabulary of 2 (two of them from
    # one sentence, one from another: the sentences do not matter).
    logits = torch.tensor([[3.0, 0.0], [0.0, 0.0], [1.0, 2.0]], requires_grad=True)
    targets = torch.tensor([0, 1, 1])
    ce = [
        -math.log(math.exp(3) / (math.exp(3) + 1)),
        math.log(2),
        -math.log(math.exp(2) / (math.exp(1) + math.exp(2))),
    ]
    loss = representation_translation_loss(logits, targets)
    assert loss.ndim == 0
    assert loss.item() == pytest.approx(sum(ce) / 3, rel=1e-6)
    loss.backward()  # differentiable in the logits, which is all it reads from a model
    assert logits.grad.shape == logits.shape
