"""The optimiser (xlsent.train.optim): the heads' own learning rate (`head_lr`) beside the
encoder's, on one schedule, and no change where it is unset; the fused AdamW kernel on CUDA,
the same AdamW to rounding, and PyTorch's default on a CPU."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from support import scratch_objectives, tiny_shape

from xlsent.train import optim
from xlsent.train.data import load_pairs
from xlsent.train.objectives import Objectives


def _wacse(small_tokenizer, **settings) -> Objectives:
    """WACSE over a scratch encoder: its MLM head (AWP's) is the only head."""
    return scratch_objectives(small_tokenizer, tiny_shape(), method="wacse", **settings)


def _ids(params) -> set[int]:
    return {id(p) for p in params}


def test_without_head_lr_every_parameter_is_in_the_two_groups_of_the_encoder_rate(
    small_tokenizer,
):
    objective = _wacse(small_tokenizer)
    groups = optim.parameter_groups(objective, 0.01)
    assert [g["weight_decay"] for g in groups] == [0.01, 0.0]
    assert all("lr" not in g for g in groups)  # AdamW's own lr: settings.lr
    trained = [p for p in objective.parameters() if p.requires_grad]
    assert _ids(groups[0]["params"]) | _ids(groups[1]["params"]) == _ids(trained)


def test_the_heads_take_their_own_rate_and_the_tied_embeddings_stay_the_encoders(
    small_tokenizer,
):
    objective = _wacse(small_tokenizer, head_lr=1e-2)
    groups = optim.parameter_groups(objective, 0.01, head_lr=1e-2)
    encoder_ids = _ids(p for p in objective.encoder.parameters() if p.requires_grad)
    head_ids = _ids(objective.mlm.parameters()) - encoder_ids
    assert _ids(groups[0]["params"]) | _ids(groups[1]["params"]) == encoder_ids
    assert _ids(groups[2]["params"]) | _ids(groups[3]["params"]) == head_ids
    assert head_ids  # dense, LayerNorm, the output bias
    word_embeddings = objective.encoder.get_input_embeddings().weight
    assert id(word_embeddings) in encoder_ids  # the head's decoder is tied to it
    assert [(g.get("lr"), g["weight_decay"]) for g in groups] == [
        (None, 0.01),
        (None, 0.0),
        (1e-2, 0.01),
        (1e-2, 0.0),
    ]


def test_one_step_moves_the_encoder_by_lr_and_the_heads_by_head_lr(small_tokenizer):
    """Adam's first step moves each parameter by its learning rate times the schedule's
    factor, against its gradient's sign (|m̂| / √v̂ = 1, eps aside): warm-up over 2 steps
    gives the first step half of each rate."""
    settings = {"lr": 1e-4, "head_lr": 1e-2, "weight_decay": 0.0, "warmup_steps": 2}
    objective = _wacse(small_tokenizer, **settings)
    optimizer, schedule = optim.adamw(objective, objective.settings)
    assert schedule.get_last_lr() == pytest.approx([5e-5, 5e-5, 5e-3, 5e-3])
    params = [p for p in objective.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in params]
    loss = sum((p * torch.linspace(-1, 1, p.numel()).view_as(p)).sum() for p in params)
    loss.backward()
    optimizer.step()
    moved = {
        id(p): (p.detach() - b).abs().max().item() for p, b in zip(params, before, strict=True)
    }
    head_ids = _ids(objective.mlm.parameters()) - _ids(objective.encoder.parameters())
    for p in params:
        expected = 5e-3 if id(p) in head_ids else 5e-5
        assert moved[id(p)] == pytest.approx(expected, rel=1e-3)


def _tr_gradients(objective: Objectives, pairs) -> None:
    """A TR loss's gradients on a real micro-batch of 16 pairs (eval mode: no dropout)."""
    objective.eval()
    objective.zero_grad(set_to_none=True)
    objective(objective.collator(pairs, np.arange(16)))[0].backward()


def test_fused_adamw_steps_as_the_default_to_rounding(small_tokenizer, small_subwords):
    """The fused kernel (the choice on CUDA) against PyTorch's default (a CPU's): three steps
    on the same gradients leave the same weights to fp32 rounding. On a CPU, where both run."""
    pairs = load_pairs({lang: p["train"] for lang, p in small_subwords.items()}, 16)
    settings = {"lr": 1e-3, "weight_decay": 0.01}
    default = scratch_objectives(small_tokenizer, tiny_shape(), method="tr", **settings)
    fused = scratch_objectives(small_tokenizer, tiny_shape(), method="tr", **settings)
    start = {name: p.detach().clone() for name, p in default.named_parameters()}
    plain_optimizer, _ = optim.adamw(default, default.settings)
    groups = optim.parameter_groups(fused, 0.01)
    fused_optimizer = torch.optim.AdamW(groups, lr=1e-3, eps=1e-8, fused=True)
    for _ in range(3):
        _tr_gradients(default, pairs)
        for theirs, ours in zip(default.parameters(), fused.parameters(), strict=True):
            ours.grad = None if theirs.grad is None else theirs.grad.clone()
        plain_optimizer.step()
        fused_optimizer.step()
    moved = 0
    for (name, theirs), ours in zip(default.named_parameters(), fused.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-7, msg=name)
        moved += not torch.equal(theirs, start[name])
    assert moved > 10  # the steps moved the weights that the comparison covers


def test_adamw_is_fused_on_cuda_and_pytorchs_default_elsewhere(small_tokenizer):
    """`fused` for parameters all on CUDA; PyTorch's default (None) on a CPU, or for a mix,
    so that a CPU run steps as before. A checkpoint's optimizer state brings its own choice
    back (`load_state_dict` restores each group's flags): a run resumed from a checkpoint of
    the version before steps as that version did."""
    cuda, cpu = SimpleNamespace(device=torch.device("cuda")), torch.zeros(1)
    assert optim.fused([cuda, cuda]) is True
    assert optim.fused([cuda, cpu]) is None
    assert optim.fused([cpu]) is None
    objective = scratch_objectives(small_tokenizer, tiny_shape(), method="tr")
    optimizer, _ = optim.adamw(objective, objective.settings)
    assert {group["fused"] for group in optimizer.param_groups} == {None}
    assert {group["foreach"] for group in optimizer.param_groups} == {None}
    fused = torch.optim.AdamW(optim.parameter_groups(objective, 0.01), fused=True)
    optimizer.load_state_dict(fused.state_dict())
    assert {group["fused"] for group in optimizer.param_groups} == {True}
