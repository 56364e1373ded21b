"""Data parallelism inside one job: several processes (one per GPU, launched by torchrun),
one model replica each, gradients averaged by DDP.

Every process draws the same global micro-batch from the shared sampler and trains on its
own slice; TR's candidates are gathered from all processes so that the negatives are those
of the global micro-batch. On CPU the same code runs over gloo, which the tests use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


def init(device_type: str) -> World:
    """The process group torchrun described in the environment (a single process if none)."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return World()
    world = World(int(os.environ["RANK"]), size, int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device_type == "cuda" else "gloo")
    return world


def world_and_device(name: str) -> tuple[World, torch.device]:
    """The processes (torchrun's, or this one alone) and this one's device: `name`, `auto`
    a GPU if there is one; under several processes on GPUs, the local rank's."""
    requested = torch.device(
        ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name
    )
    world = init(requested.type)
    if requested.type == "cuda" and world.size > 1:
        return world, torch.device("cuda", world.local_rank)
    return world, requested


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
    dist.all_gather_object(out, obj)
    return out


def barrier(world: World) -> None:
    if world.size > 1:
        dist.barrier()


def shutdown(world: World) -> None:
    if world.size > 1 and dist.is_initialized():
        dist.destroy_process_group()
