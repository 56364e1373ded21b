"""Training that gives the same bytes whatever the machine's load and thread count, on a CPU.

PyTorch's CPU kernels reduce in a fixed order, but for a few: the backward of advanced
indexing (`words[pair]`, `index_put_(..., accumulate=True)`), which WTR's gathers of word
vectors use, adds a row's contributions on several threads in whatever order they come
(measured: 92 different gradients in 100 repetitions of one backward on 2 threads, 1 on one
thread). So WACSE's weights differed between two runs of one command on two threads, and
further on a busy machine. PyTorch's deterministic algorithms add them in a fixed order; on a
CPU they cost nothing measurable here (the demo's WACSE step: 0.27-0.31 CPU-s either way).

Not filled: the uninitialised memory of `torch.empty` (the mode's check for reads of it,
which costs a pass over every new tensor and guards against a bug, not a race).

On a GPU the deterministic kernels are slower and some operations have none (they raise), and
cuBLAS needs `CUBLAS_WORKSPACE_CONFIG` set before CUDA starts: the mode is left off there, and
a GPU run is reproducible to rounding, not to the byte (docs/methods.md, "Train").
"""

from __future__ import annotations

import torch


def fixed_reduction_order(device: torch.device) -> None:
    """Make this process's training bit-reproducible on `device` where that is free (a CPU)."""
    if device.type == "cpu":
        torch.use_deterministic_algorithms(True)
        torch.utils.deterministic.fill_uninitialized_memory = False
