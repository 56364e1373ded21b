"""The optimiser: AdamW with the usual BERT recipe (no weight decay on biases and LayerNorm
weights) and its learning rate, a linear warm-up then a linear decay to zero at
`max_steps`."""

from __future__ import annotations

import functools

import torch
from torch import nn

from xlsent.train.settings import TrainSettings


def adamw(
    objective: nn.Module, settings: TrainSettings
) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """The optimizer of `objective`'s trained parameters and its learning rate schedule."""
    optimizer = torch.optim.AdamW(
        parameter_groups(objective, settings.weight_decay),
        lr=settings.lr,
        betas=(0.9, 0.999),
        eps=1e-8,
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, functools.partial(lr_factor, settings))
    return optimizer, schedule


def parameter_groups(objective: nn.Module, weight_decay: float) -> list[dict]:
    """The trained parameters, with `weight_decay` but for biases and LayerNorm weights."""
    decay, no_decay = [], []
    for name, param in objective.named_parameters():
        if not param.requires_grad:
            continue
        norm = "layernorm" in name.lower() or "layer_norm" in name
        (no_decay if param.ndim < 2 or norm else decay).append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def lr_factor(settings: TrainSettings, step: int) -> float:
    """Linear warm-up, then linear decay to zero at `max_steps`."""
    warmup, total = settings.warmup_steps, settings.max_steps
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))
