"""Data parallelism inside one job: several processes (one per GPU, started by
`xlsent.train.launch`), one model replica each, gradients averaged by DDP.

Every process draws the same global micro-batch from the shared sampler and trains on its
own slice; TR's candidates are gathered from all processes so that the negatives are those
of the global micro-batch. On CPU the same code runs over gloo, which the tests use.

On GPUs each process binds its GPU (the local rank's) before anything touches CUDA: NCCL's
communicators, pinned host buffers and the object collectives all go to the current device,
which is GPU 0 in every process that did not choose one, where NCCL refuses two ranks or
hangs. Python objects (the input fingerprint, each process's random state) travel over a gloo
group on the CPU, so that no collective of the training's own waits on a pickled tensor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from xlsent.failures.errors import XlsentError


class DeviceError(XlsentError):
    """The processes of a node and its GPUs do not match; the message says how."""


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    # The CPU (gloo) group of the object collectives and barriers; None: the default group.
    objects: dist.ProcessGroup | None = None

    @property
    def main(self) -> bool:
        return self.rank == 0


def _environment() -> tuple[int, int, int]:
    """(rank, world size, local rank) as the launcher describes them (one process if not)."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return 0, 1, 0
    return int(os.environ["RANK"]), size, int(os.environ.get("LOCAL_RANK", "0"))


def init(device: torch.device) -> World:
    """Join the process group the launcher described in the environment, on `device` (this
    process's own GPU, already chosen, or the CPU); a single process if there is none."""
    rank, size, local_rank = _environment()
    if size == 1:
        return World()
    objects = None
    if not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
            dist.init_process_group("nccl", device_id=device)
        else:
            dist.init_process_group("gloo")
    if device.type == "cuda":
        objects = dist.new_group(backend="gloo")
    return World(rank, size, local_rank, objects)


def world_and_device(name: str) -> tuple[World, torch.device]:
    """The processes (the launcher's, or this one alone) and this one's device: `name`, `auto`
    a GPU if there is one; under several processes on GPUs, the local rank's GPU."""
    requested = torch.device(
        ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name
    )
    _, size, local_rank = _environment()
    device = requested
    if requested.type == "cuda" and size > 1:
        if requested.index is not None:
            raise DeviceError(
                f"train.device {name!r} names one GPU, but each of the {size} processes takes "
                "its own (the local rank's): set device to cuda or auto"
            )
        visible = torch.cuda.device_count()
        if local_rank >= visible:
            raise DeviceError(
                f"process {local_rank} of this node has no GPU of its own: the node shows "
                f"{visible} (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}), "
                f"fewer than its {os.environ.get('LOCAL_WORLD_SIZE', '?')} processes; ask for "
                "as many GPUs as train.gpus, or lower train.gpus"
            )
        device = torch.device("cuda", local_rank)
    return init(device), device


def bind_thread(device: torch.device) -> None:
    """Make `device` current in the calling thread (a batch builder's): CUDA's current device
    is per thread, and a pinned buffer made in a thread without one opens a context on GPU 0."""
    if device.type == "cuda":
        torch.cuda.set_device(device)


def gather(tensor: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Every process's `tensor` concatenated (gradients flow back to each owner) and the
    offset of this process's rows."""
    from torch.distributed.nn.functional import all_gather

    parts = all_gather(tensor)
    return torch.cat(parts), dist.get_rank() * len(tensor)


def any_flag(flag: bool, world: World, device: torch.device) -> bool:
    """True on every process if `flag` is true on any (e.g. one of them got SIGTERM)."""
    if world.size == 1:
        return flag
    value = torch.tensor([int(flag)], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


def gather_objects(obj: object, world: World) -> list:
    """`obj` of every process, in rank order (e.g. each one's random state)."""
    if world.size == 1:
        return [obj]
    out: list = [None] * world.size
    dist.all_gather_object(out, obj, group=world.objects)
    return out


def barrier(world: World) -> None:
    if world.size > 1:
        dist.barrier(group=world.objects)


def shutdown(world: World) -> None:
    if world.size > 1 and dist.is_initialized():
        dist.destroy_process_group()
