import math

import pytest
import torch

from xlsent.losses.tr import translation_ranking_loss

# Two pairs in 2-D. Cosines: xx0·en0 = 1, xx0·en1 = 1/√2, xx1·en0 = 0, xx1·en1 = 1/√2.
XX = torch.tensor([[1.0, 0.0], [0.0, 2.0]])  # lengths differ: only directions count
EN = torch.tensor([[3.0, 0.0], [1.0, 1.0]])
R = 1 / math.sqrt(2)


def _nll(gold: float, others: list[float], tau: float) -> float:
    """-log softmax of the gold logit, written out."""
    return -math.log(math.exp(gold / tau) / sum(math.exp(v / tau) for v in [gold, *others]))


def test_forward_direction_against_hand_computation_with_plain_tensors():
    for tau in (1.0, 0.05):
        expected = (_nll(1.0, [R], tau) + _nll(R, [0.0], tau)) / 2
        xx = XX.clone().requires_grad_(True)
        loss = translation_ranking_loss(xx, EN, tau)
        assert loss.ndim == 0
        assert loss.item() == pytest.approx(expected, rel=1e-5)
        loss.backward()  # differentiable in the sentence vectors, all it reads from a model
        assert xx.grad.abs().sum() > 0


def test_gathered_candidates_are_extra_negatives_and_the_gold_row_moves():
    """As the second of two processes: the other's English vectors come first, ours at
    offset 2; our queries rank all four."""
    other = torch.tensor([[0.0, 1.0], [-1.0, 0.0]])

    def gather(keys: torch.Tensor) -> tuple[torch.Tensor, int]:
        return torch.cat([other, keys]), len(other)

    tau = 0.05
    # xx0 = (1, 0): en0 1, en1 1/√2, other 0 and -1. xx1 = (0, 1): en1 1/√2, en0 0, other 1, 0.
    expected = (_nll(1.0, [R, 0.0, -1.0], tau) + _nll(R, [0.0, 1.0, 0.0], tau)) / 2
    loss = translation_ranking_loss(XX, EN, tau, gather=gather)
    assert loss.ndim == 0
    assert loss.item() == pytest.approx(expected, rel=1e-5)


def test_both_directions_average_the_transposed_ranking():
    tau = 0.05
    forward = (_nll(1.0, [R], tau) + _nll(R, [0.0], tau)) / 2
    # English queries: en0 ranks (xx0: 1, xx1: 0); en1 ranks (xx0: 1/√2, xx1: 1/√2), a tie.
    backward = (_nll(1.0, [0.0], tau) + _nll(R, [R], tau)) / 2
    assert backward == pytest.approx((1e-9 + math.log(2)) / 2, abs=1e-6)
    loss = translation_ranking_loss(XX, EN, tau, direction="both")
    assert loss.item() == pytest.approx((forward + backward) / 2, rel=1e-5)


def test_perfect_alignment_has_lower_loss_than_shuffled():
    torch.manual_seed(0)
    en = torch.randn(16, 8)
    assert translation_ranking_loss(en, en) < translation_ranking_loss(en[torch.randperm(16)], en)


def test_unknown_direction_is_refused():
    with pytest.raises(ValueError, match="fwd"):
        translation_ranking_loss(XX, EN, direction="backward")
