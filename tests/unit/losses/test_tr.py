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


def test_additive_margin_lowers_each_gold_cosine_in_both_directions():
    """LaBSE's additive margin by hand: the gold cosine less m before the softmax, in each
    direction (eq. 9 with φ(x_i, y_i) − m in the numerator and its denominator)."""
    tau, m = 0.05, 0.3
    forward = (_nll(1.0 - m, [R], tau) + _nll(R - m, [0.0], tau)) / 2
    backward = (_nll(1.0 - m, [0.0], tau) + _nll(R - m, [R], tau)) / 2
    loss = translation_ranking_loss(XX, EN, tau, margin=m)
    assert loss.item() == pytest.approx(forward, rel=1e-5)
    both = translation_ranking_loss(XX, EN, tau, direction="both", margin=m)
    assert both.item() == pytest.approx((forward + backward) / 2, rel=1e-5)
    # A margin makes a ranking already won cost more: the translation must win by m.
    assert loss > translation_ranking_loss(XX, EN, tau)


def test_hard_negatives_join_their_own_querys_candidates_only():
    """xx0 = (1, 0) has hard negatives (1, 1) (cosine 1/√2) and an empty slot; xx1 = (0, 1)
    has (0, -3) (cosine -1) and (1, 1) (1/√2). English queries (both) rank as without."""
    tau = 0.05
    hard = torch.tensor([[[1.0, 1.0], [5.0, 5.0]], [[0.0, -3.0], [1.0, 1.0]]], requires_grad=True)
    mask = torch.tensor([[True, False], [True, True]])
    forward = (_nll(1.0, [R, R], tau) + _nll(R, [0.0, -1.0, R], tau)) / 2
    loss = translation_ranking_loss(XX, EN, tau, negatives=hard, negatives_mask=mask)
    assert loss.item() == pytest.approx(forward, rel=1e-5)
    loss.backward()
    assert hard.grad[0, 1].abs().sum() == 0  # the empty slot's vector is not a candidate
    assert hard.grad[0, 0].abs().sum() > 0 and hard.grad[1].abs().sum() > 0
    backward = (_nll(1.0, [0.0], tau) + _nll(R, [R], tau)) / 2
    both = translation_ranking_loss(
        XX, EN, tau, direction="both", negatives=hard.detach(), negatives_mask=mask
    )
    assert both.item() == pytest.approx((forward + backward) / 2, rel=1e-5)


def test_hard_negatives_with_a_margin_and_gathered_candidates():
    """As the second of two processes (the other's English first, ours at offset 2), with a
    margin: a query's own hard negative joins the gathered candidates."""
    other = torch.tensor([[0.0, 1.0]])

    def gather(keys: torch.Tensor) -> tuple[torch.Tensor, int]:
        return torch.cat([other, keys]), len(other)

    tau, m = 0.05, 0.2
    hard = torch.tensor([[[1.0, 1.0]], [[1.0, 0.0]]])
    # xx0 = (1, 0): other 0, en0 1 − m, en1 1/√2, hard 1/√2; xx1 = (0, 1): other 1, en0 0,
    # en1 1/√2 − m, hard 0.
    expected = (_nll(1.0 - m, [0.0, R, R], tau) + _nll(R - m, [1.0, 0.0, 0.0], tau)) / 2
    loss = translation_ranking_loss(XX, EN, tau, gather=gather, margin=m, negatives=hard)
    assert loss.item() == pytest.approx(expected, rel=1e-5)
