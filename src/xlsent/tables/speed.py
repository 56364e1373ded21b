"""A training's speed as its log records it (`train_log.jsonl`), for the dev and cost tables.

Each log line of a training holds the speed of the steps since the line before
(`xlsent.train.speed`): real tokens per second (every process's) and model FLOPs utilisation
(null where the device's peak is unknown: a CPU, an unknown GPU without
`train.peak_tflops`). A training's speed here is the median over its lines, which leaves
out the first steps' warm-up and a line slowed by a neighbour's job; a log written before
MFU was logged has none.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path

COLUMNS = ("tokens_per_s", "mfu_pct")


def training_speed(records: Iterable[dict]) -> dict[str, float | None]:
    """`tokens_per_s` and `mfu_pct` (MFU in %) of a training's log `records`: the medians
    over its speed lines (None without any)."""
    lines = [record for record in records if "tokens_per_s" in record]
    tokens = [line["tokens_per_s"] for line in lines]
    mfu = [line["mfu"] for line in lines if line.get("mfu") is not None]
    return {
        "tokens_per_s": float(statistics.median(tokens)) if tokens else None,
        "mfu_pct": 100 * float(statistics.median(mfu)) if mfu else None,
    }


def log_speed(log: Path) -> dict[str, float | None]:
    """`training_speed` of the live log `log` of a training, which a killed job may have left
    with a torn last line (skipped: its speed is in the lines before)."""
    records = []
    for line in log.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return training_speed(records)
