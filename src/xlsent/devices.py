"""What a training or an encoding actually ran on: the device type, the GPU's name, and the
precision it computed in, as the records of its outputs keep them.

A score moves with the device and precision alone: the same weights of me5 score a tenth or
two apart on Tatoeba on a GPU in bf16 and on a CPU in fp32 (docs/results.md), the size of the
differences the tables compare. So the records say where each number came from, and the
tables carry it on every row (`xlsent.tables.devices`):

- a training: each job's record (`xlsent.train.checkpoints.Attempts`), and the exported
  model's `run.json` under `trained_on` (the distinct records of every job that trained it:
  a run resumed on other hardware names both);
- an encoding: the vector file's metadata, `encoded_on`, beside the model's `trained_on`;
- an evaluation: its results file's metadata (`xlsent.evaluate.results.write_results`),
  passed on from the vectors it scored.

A record is `{"device": "cuda", "device_name": "NVIDIA H200", "precision": "bf16"}` (no
`device_name` on a CPU): the device the job resolved (`auto` is not a device), and the
precision it computed in, not the one asked for where the device ignores it (training's
bf16 and tf32 are fp32 on a CPU).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# Word-vector runs (Bi-Sent2vec, fastText, mapped): trained and evaluated in the CPU's fp32 by
# construction (C++ and numpy; no device to choose).
CPU_FP32: dict[str, str] = {"device": "cpu", "precision": "fp32"}

# The keys of a record; a training's job adds its own (`dev_precision`, `processes`).
KEYS = ("device", "device_name", "precision")


def device_record(device: str | torch.device, precision: str) -> dict[str, str]:
    """The record of `device` (resolved: cpu, cuda, cuda:N) computing in `precision`."""
    import torch

    device = torch.device(device)
    record = {"device": device.type}
    if device.type == "cuda":
        # The GPU's model decides its kernels and so its rounding: H100 and A100 rows differ.
        record["device_name"] = torch.cuda.get_device_name(device)
    record["precision"] = precision
    return record


def device_label(record: Mapping[str, object]) -> str:
    """How a table names the device of `record`: `cpu`, `cuda (NVIDIA H200)`."""
    name = record.get("device_name")
    return f"{record['device']} ({name})" if name else str(record["device"])


def distinct(records: Iterable[Mapping[str, object]]) -> list[dict]:
    """`records` without repeats, in order of first appearance."""
    seen: list[dict] = []
    for record in records:
        if dict(record) not in seen:
            seen.append(dict(record))
    return seen


def model_trained_on(model_dir: str | os.PathLike[str]) -> list[dict] | None:
    """The `trained_on` records of a model directory's `run.json`; None for a model that no
    training of the workflow exported (a pretrained one), or one exported before the records."""
    path = Path(model_dir) / "run.json"
    if not path.exists():
        return None
    return json.loads(path.read_text()).get("trained_on")
