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

from xlsent.tf32 import tf32_matmuls
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
    world_size: int = 1,
) -> dict:
    """Backpropagate one step over its `n_micro` micro-batches `batches` (this process's);
    return the step's loss, its parts, its real tokens and this process's model FLOPs by
    part (`xlsent.train.flops`; the tokens and FLOPs counted on the batches as they arrive,
    before they are copied to the device), and where the objective leaves any
    (`Objectives.diagnostics`: AWP's), its `diagnostics`: each the sum of its numerators over
    the micro-batches divided by the sum of its denominators (None where that is 0), so that
    AWP's mean term cross-entropy weighs each micro-batch by its terms.

    `forward` is what computes a micro-batch's loss (the DDP wrapper of `objective` under
    several processes; default `objective`), `no_sync` its context that defers DDP's gradient
    averaging to the last micro-batch; `device` where the model is (default the CPU). The
    passes compute as `train.precision` says (`computing`).

    The losses are read from the device once, at the end of the step: reading each part of
    each micro-batch (`.item()`) would make the host wait for the device's queue to empty
    that many times a step, and the next micro-batch's kernels could not be queued meanwhile.
    The diagnostics computed on the device come in the same read.
    """
    s = objective.settings
    forward = forward or objective
    device = device or torch.device("cpu")
    steps_per_batch = n_micro * world_size
    cached = "tr" in objective.weights and s.negatives == "batch" and steps_per_batch > 1
    tr_grads: list[torch.Tensor | None] = [None] * n_micro
    states: list[cached_tr.RandomState] = []
    flops = StepFlops(objective, cached, world_size)
    tokens = 0

    def arrived(batch: Batch) -> Batch:
        nonlocal tokens
        tokens += batch.tokens  # on the CPU, as built
        return flops.count(batch)

    batches = map(arrived, batches)
    # The unweighted losses on the device, read at the end: (names, values, what each value
    # is divided by in the step's mean).
    losses: list[tuple[list[str], torch.Tensor, int]] = []
    # The diagnostics' (numerator, denominator): the device's 2-vectors, read with the losses,
    # and the sums of the host's.
    on_device: list[tuple[str, torch.Tensor]] = []
    on_host: dict[str, list[float]] = {}
    with tf32_matmuls(s.precision == "tf32"):
        if cached:
            built, vectors = [], []
            with torch.no_grad():
                for batch in batches:
                    built.append(batch.to(device))
                    states.append(cached_tr.RandomState.capture(device))
                    with computing(device, s.precision):
                        vectors.append(objective.embed(built[-1]))
            batches = built
            hard = [batch.hard.index for batch in built] if s.hard_negatives else None
            grads, tr_loss = cached_tr.batch_gradients(
                vectors,
                objective.weights["tr"],
                s.temperature,
                s.direction,
                world_size,
                margin=s.tr_margin,
                hard_index=hard,
            )
            losses.append((["tr"], tr_loss[None], 1))  # the whole batch's already
            # Each micro-batch's loss is divided by their number before backward, and DDP
            # averages the processes' gradients: the cached gradient is scaled up by both.
            tr_grads = [g * steps_per_batch for g in grads]
        for micro, batch in enumerate(batches):
            if states:
                states[micro].restore(device)  # the dropout masks of the pass without a graph
            alone = micro == n_micro - 1 or no_sync is None
            with contextlib.nullcontext() if alone else no_sync():
                batch = batch.to(device)
                with computing(device, s.precision):
                    loss, parts = forward(batch, tr_grads[micro])
                (loss / n_micro).backward()
            if parts:
                values = torch.stack([value.detach().float() for value in parts.values()])
                losses.append((list(parts), values, n_micro))
            for name, value in objective.diagnostics.items():
                totals = on_host.setdefault(name, [0.0, 0.0])  # in the objective's order
                if isinstance(value, torch.Tensor):
                    on_device.append((name, value.detach().float()))
                else:
                    totals[0] += value[0]
                    totals[1] += value[1]
    parts_total, read = _parts(losses, [value for _, value in on_device])
    for (name, _), (numerator, denominator) in zip(on_device, read, strict=True):
        on_host[name][0] += numerator
        on_host[name][1] += denominator
    record = {
        "loss": sum(objective.weights[name] * value for name, value in parts_total.items()),
        "parts": parts_total,
        "tokens": tokens,
        "flops": flops.total(),
    }
    if on_host:  # a method without diagnostics keeps the record it had
        record["diagnostics"] = {
            name: numerator / denominator if denominator else None
            for name, (numerator, denominator) in on_host.items()
        }
    return record


def computing(device: torch.device, precision: str) -> AbstractContextManager:
    """What a pass computes in under `train.precision`: bf16 autocast on CUDA (`bf16`; fp32
    on a CPU), or fp32 (`fp32`, and `tf32`, whose matmuls `accumulate` puts on TF32 tensor
    cores for the forward and backward passes alike: `xlsent.tf32`)."""
    bf16 = device.type == "cuda" and precision == "bf16"
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)


def _parts(
    losses: list[tuple[list[str], torch.Tensor, int]], pairs: list[torch.Tensor]
) -> tuple[dict[str, float], list[tuple[float, float]]]:
    """The step's loss parts, each the sum of its `losses` entries' values over their
    divisors, and the values of `pairs` (2-vectors on the device: the diagnostics'): read
    from the device in one transfer, then the parts added up in the order and the
    arithmetic of a sum of `.item()`s (the same floats to the bit)."""
    tensors = [values for _, values, _ in losses] + pairs
    if not tensors:
        return {}, []
    read = iter(torch.cat(tensors).tolist())
    total: dict[str, float] = {}
    for names, _, divisor in losses:
        for name in names:
            total[name] = total.get(name, 0.0) + next(read) / divisor
    rest = list(read)
    return total, list(zip(rest[::2], rest[1::2], strict=True))
