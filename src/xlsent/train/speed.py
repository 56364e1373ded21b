"""What a training reports of its speed: pairs and real tokens per second, and model FLOPs
utilisation (MFU).

MFU (Chowdhery et al. 2022, "PaLM", arXiv:2204.02311, App. B) is the model FLOPs a device
computes per second (`xlsent.train.flops`: the method's passes over the real tokens, nothing
recomputed or padded) over the device's peak:

    MFU = model FLOPs of the steps / their seconds / peak FLOP/s

The peak is `train.peak_tflops` where set, else that of a known GPU (`PEAKS`) at the
training's precision: the dense (no structured sparsity) tensor-core peak for bf16, the
plain FP32 peak for fp32 (torch computes fp32 matmuls without TF32 unless told to), the TF32
tensor-core peak for tf32. Unknown on a CPU or another GPU: MFU is then null, and the
achieved TFLOP/s are still logged.
"""

from __future__ import annotations

import logging
import re
from typing import NamedTuple

import torch

log = logging.getLogger(__name__)


class GPU(NamedTuple):
    name: str
    bf16: float | None  # dense tensor-core peak, TFLOP/s (None: no bf16 tensor cores)
    fp32: float

    @property
    def tf32(self) -> float | None:
        """The dense TF32 tensor-core peak (`precision: tf32`): half the bf16 one on every
        GPU of `PEAKS` that has bf16 tensor cores (Ampere, Ada, Hopper: their datasheets'
        TF32 figures are that, within 2 %: the L40S's 183 against 181)."""
        return None if self.bf16 is None else self.bf16 / 2


# Known GPUs, matched on `torch.cuda.get_device_name()` in this order (the first pattern that
# matches wins, so a variant comes before its family), with their peak TFLOP/s: dense bf16
# (the datasheets give bf16 "with sparsity", twice the dense figure; halved here) and FP32.
# Vendor figures: NVIDIA's H100 Tensor Core GPU datasheet (SXM5, PCIe, NVL), H200 and GH200
# datasheets, A100 datasheet (SXM4 and PCIe alike), L40S, L40, L4 and A10 datasheets, V100
# datasheet, and the Ada (RTX 4090) and Ampere GA102 (RTX 3090) architecture whitepapers
# (bf16 with FP32 accumulate).
PEAKS: tuple[tuple[str, GPU], ...] = (
    (r"GH200", GPU("GH200", 989.4, 67.0)),
    (r"H200 NVL", GPU("H200 NVL", 835.5, 60.0)),
    (r"H200", GPU("H200 SXM", 989.4, 67.0)),
    (r"H100 NVL", GPU("H100 NVL", 835.5, 60.0)),
    (r"H100 PCIe", GPU("H100 PCIe", 756.5, 51.0)),
    (r"H100", GPU("H100 SXM", 989.4, 67.0)),  # "NVIDIA H100 80GB HBM3": the SXM5 board
    (r"A100", GPU("A100", 312.0, 19.5)),
    (r"L40S", GPU("L40S", 362.05, 91.6)),
    (r"\bL40\b", GPU("L40", 181.05, 90.5)),
    (r"\bL4\b", GPU("L4", 121.0, 30.3)),
    (r"\bA10\b", GPU("A10", 125.0, 31.2)),  # not the A10G, whose clocks are AWS's own
    (r"V100-SXM", GPU("V100 SXM2", None, 15.7)),
    (r"V100-PCIE", GPU("V100 PCIe", None, 14.0)),
    (r"RTX 4090", GPU("RTX 4090", 165.2, 82.6)),
    (r"RTX 3090", GPU("RTX 3090", 71.0, 35.6)),
)


def known_gpu(device_name: str) -> GPU | None:
    """The entry of `PEAKS` for the GPU CUDA names `device_name`; None for another."""
    for pattern, gpu in PEAKS:
        if re.search(pattern, device_name):
            return gpu
    return None


def peak_tflops(device: torch.device, precision: str, configured: float | None) -> float | None:
    """The peak that MFU divides by: `configured` (`train.peak_tflops`) where set, else that
    of the known GPU `device` at the precision it computes in (`precision` bf16 autocasts on
    CUDA only); None on a CPU or an unknown GPU."""
    if configured is not None:
        log.info("MFU against train.peak_tflops: %g TFLOP/s", configured)
        return configured
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    gpu = known_gpu(name)
    peak = None if gpu is None else getattr(gpu, precision)
    if peak is None:
        log.info("no known %s peak for %s: MFU is null (set train.peak_tflops)", precision, name)
    else:
        log.info("MFU against the %s's %s peak: %g TFLOP/s", gpu.name, precision, peak)
    return peak


def mfu(flops: float, seconds: float, peak: float | None) -> float | None:
    """Model FLOPs utilisation: `flops` done in `seconds` over a `peak` in TFLOP/s (None:
    unknown)."""
    if peak is None or seconds <= 0:
        return None
    return flops / seconds / (peak * 1e12)


# The speed fields of a log line (`Throughput.fields`): what the machine and its load decide,
# not what was trained (a resumed run's log equals an uninterrupted one's without them).
FIELDS = ("pairs_per_s", "tokens_per_s", "model_tflops", "mfu")


class Throughput:
    """The training steps since the last log line: their pairs, real tokens, model FLOPs and
    seconds (the steps' own: dev evaluations and checkpoints between them are not training)."""

    def __init__(self, peak: float | None):
        self.peak = peak
        self.reset()

    def reset(self) -> None:
        self.pairs, self.tokens, self.flops, self.seconds = 0, 0, 0.0, 0.0

    def add(self, pairs: int, tokens: int, flops: float, seconds: float) -> None:
        """One step: its `pairs` and `tokens` (every process's), the `flops` of this process
        (`xlsent.train.flops`) and its `seconds`."""
        self.pairs += pairs
        self.tokens += tokens
        self.flops += flops
        self.seconds += seconds

    def fields(self) -> dict[str, float | None]:
        """The log line's speed fields, then a fresh count: pairs and real tokens per second
        (all processes), model TFLOP/s of one device and its MFU (null where the peak is
        unknown)."""
        seconds = self.seconds
        utilisation = mfu(self.flops, seconds, self.peak)
        fields = {
            "pairs_per_s": round(self.pairs / seconds, 1),
            "tokens_per_s": round(self.tokens / seconds, 1),
            "model_tflops": float(f"{self.flops / seconds / 1e12:.4g}"),
            "mfu": None if utilisation is None else round(utilisation, 4),
        }
        self.reset()
        return fields
