"""One optimizer step's gradients, accumulated over its micro-batches.

A step of `batch_size` pairs is trained in micro-batches (per process). With `negatives:
batch` TR ranks every query among the whole step's sentences by gradient caching
(`xlsent.train.cached_tr`): the micro-batches are first encoded without a graph, the batch's
TR gradient is taken with respect to their vectors, and each is then encoded again from the
same random state and trained on that gradient plus its own word-level losses. With
`micro_batch` TR ranks within each (global) micro-batch. Used by the trainer and by the
training benchmark alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager

import torch
from torch import nn

from xlsent.train import cached_tr
from xlsent.train.collate import Batch
from xlsent.train.flops import StepFlops
from xlsent.train.objectives import Objectives
from xlsent.train.settings import TrainSettings


def micro_batches(settings: TrainSettings, world_size: int) -> int:
    """Micro-batches per optimizer step in each of `world_size` processes. The config check
    (`xlsent.config.checks`) knows the multiple of micro_batch_size, not the GPUs."""
    per_step = settings.micro_batch_size * world_size
    if settings.batch_size % per_step:
        raise ValueError(
            f"train.batch_size ({settings.batch_size}) must be a multiple of "
            f"train.micro_batch_size × GPUs ({settings.micro_batch_size} × {world_size})"
        )
    return settings.batch_size // per_step


def accumulate(
    objective: Objectives,
    batches: Iterable[Batch],
    n_micro: int,
    *,
    forward: nn.Module | None = None,
    no_sync: Callable[[], AbstractContextManager] | None = None,
    device: torch.device | None = None,
    autocast: bool = False,
    world_size: int = 1,
) -> dict:
    """Backpropagate one step over its `n_micro` micro-batches `batches` (this process's);
    return the step's loss, its parts, its real tokens and this process's model FLOPs by
    part (`xlsent.train.flops`, counted on the batches as they arrive, before they are
    copied to the device).

    `forward` is what computes a micro-batch's loss (the DDP wrapper of `objective` under
    several processes; default `objective`), `no_sync` its context that defers DDP's gradient
    averaging to the last micro-batch; `device` where the model is (default the CPU).
    """
    s = objective.settings
    forward = forward or objective
    device = device or torch.device("cpu")
    steps_per_batch = n_micro * world_size
    cached = "tr" in objective.weights and s.negatives == "batch" and steps_per_batch > 1
    parts_total: dict[str, float] = {}
    tr_grads: list[torch.Tensor | None] = [None] * n_micro
    states: list[cached_tr.RandomState] = []
    flops = StepFlops(objective, cached, world_size)
    batches = map(flops.count, batches)
    if cached:
        built, vectors = [], []
        with torch.no_grad():
            for batch in batches:
                built.append(batch.to(device))
                states.append(cached_tr.RandomState.capture(device))
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
                    vectors.append(objective.embed(built[-1]))
        batches = built
        grads, parts_total["tr"] = cached_tr.batch_gradients(
            vectors, objective.weights["tr"], s.temperature, s.direction, world_size
        )
        # Each micro-batch's loss is divided by their number before backward, and DDP averages
        # the processes' gradients: the cached gradient is scaled up by both.
        tr_grads = [g * steps_per_batch for g in grads]
    tokens = 0
    for micro, batch in enumerate(batches):
        if states:
            states[micro].restore(device)  # the dropout masks of the pass without a graph
        alone = micro == n_micro - 1 or no_sync is None
        with contextlib.nullcontext() if alone else no_sync():
            batch = batch.to(device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
                loss, parts = forward(batch, tr_grads[micro])
            (loss / n_micro).backward()
        for name, value in parts.items():
            parts_total[name] = parts_total.get(name, 0.0) + value.item() / n_micro
        tokens += batch.tokens
    return {
        "loss": sum(objective.weights[name] * value for name, value in parts_total.items()),
        "parts": parts_total,
        "tokens": tokens,
        "flops": flops.total(),
    }
