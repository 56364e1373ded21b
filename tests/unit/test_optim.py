"""The optimiser (xlsent.train.optim): the heads' own learning rate (`head_lr`) beside the
encoder's, on one schedule, and no change where it is unset."""

import pytest
import torch
from support import scratch_objectives, tiny_shape

from xlsent.train import optim
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
