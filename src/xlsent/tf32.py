"""TF32: fp32 matrix products on a GPU's tensor cores, for the stages that compute in fp32.

TF32 keeps fp32's range and storage, rounds the inputs of each product to a 10-bit mantissa
(about 3 significant digits; fp32 keeps 23 bits, bf16 7) and accumulates in fp32. On an
A100, H100 or H200 the tensor cores run it at half their bf16 rate, several times the plain
fp32 peak. It changes numbers, so it is a setting that says so, `precision: tf32`
(`train.precision`, `align.wspalign.precision`), and never a default. The switches are
CUDA's (cuBLAS's matmuls, cuDNN's convolutions): on a CPU an fp32 product stays fp32
whatever they say.

The legacy switches (`torch.backends.cuda.matmul.allow_tf32`), not PyTorch 2.9's
`fp32_precision`: they exist in every PyTorch a GPU machine may have, and a process that sets
both kinds stops with an error when it next reads one (PyTorch 2.13), so one kind is used
throughout (`benchmarks/align.py` reads them through this module too).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def tf32_matmuls(enabled: bool) -> Iterator[None]:
    """fp32 matmuls and convolutions on TF32 tensor cores while `enabled` (the switches as
    they were otherwise), and the switches as they were afterwards: what runs outside (dev
    P@1, the evaluations) computes in fp32."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    if enabled:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
