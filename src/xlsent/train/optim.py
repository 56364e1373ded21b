"""The optimiser: AdamW with the usual BERT recipe (no weight decay on biases and LayerNorm
weights) and its learning rate, a linear warm-up then a linear decay to zero at
`max_steps`. The heads a method trains beside the encoder (AWP's and MLM's MLM head, DAP's
RTL head, the `mlp` pooler) may take a learning rate of their own (`head_lr`), on the same
schedule: a head that starts fresh on a pretrained encoder (multilingual-e5-small has no MLM
head) barely moves at the small rate that fine-tunes the encoder.

On a GPU the update is PyTorch's fused kernel (`fused`): the whole AdamW update in one
kernel per chunk of tensors, where the default (`foreach`) launches one per arithmetic step
of it; the same AdamW to rounding. On a CPU it stays PyTorch's default, so that a CPU run
keeps its bytes (the fused CPU kernel agrees with it to rounding:
tests/unit/train/test_optim.py)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch
from torch import nn

from xlsent.train.settings import TrainSettings


def adamw(
    objective: nn.Module, settings: TrainSettings
) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """The optimizer of `objective`'s trained parameters and its learning rate schedule."""
    groups = parameter_groups(objective, settings.weight_decay, settings.head_lr)
    optimizer = torch.optim.AdamW(
        groups,
        lr=settings.lr,
        betas=(0.9, 0.999),
        eps=1e-8,
        fused=fused([p for group in groups for p in group["params"]]),
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, functools.partial(lr_factor, settings))
    return optimizer, schedule


def fused(params: Sequence[torch.Tensor]) -> bool | None:
    """AdamW's `fused` for `params`: True when they are all on CUDA, else None (PyTorch's
    default: a loop over the tensors on a CPU). A checkpoint keeps the choice it was trained
    with: `load_state_dict` restores its groups' flags, so a run resumed from a checkpoint of
    an earlier version steps as that version did."""
    on_cuda = bool(params) and all(p.device.type == "cuda" for p in params)
    return True if on_cuda else None


def parameter_groups(
    objective: nn.Module, weight_decay: float, head_lr: float | None = None
) -> list[dict]:
    """The trained parameters, with `weight_decay` but for biases and LayerNorm weights; with
    `head_lr`, the parameters outside `objective.encoder` (the heads) in groups of their own at
    that learning rate. A head's output layer tied to the word embeddings is the encoder's
    (`named_parameters` names a shared tensor once, by its first owner, the encoder)."""
    decay, no_decay, head_decay, head_no_decay = [], [], [], []
    for name, param in objective.named_parameters():
        if not param.requires_grad:
            continue
        norm = "layernorm" in name.lower() or "layer_norm" in name
        head = head_lr is not None and not name.startswith("encoder.")
        groups = (head_no_decay, head_decay) if head else (no_decay, decay)
        groups[0 if param.ndim < 2 or norm else 1].append(param)
    encoder = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    if head_lr is None:
        return encoder
    return [
        *encoder,
        {"params": head_decay, "weight_decay": weight_decay, "lr": head_lr},
        {"params": head_no_decay, "weight_decay": 0.0, "lr": head_lr},
    ]


def lr_factor(settings: TrainSettings, step: int) -> float:
    """Linear warm-up, then linear decay to zero at `max_steps`."""
    warmup, total = settings.warmup_steps, settings.max_steps
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))
