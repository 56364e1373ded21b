"""What a training benchmark measures of its steps, and the summary row of each run."""

from __future__ import annotations

import statistics
import time

from training.flops import model_flops, rtl_rows
from xlsent.train.collate import Batch
from xlsent.train.objectives import Objectives

# DAP (Li et al. 2023): training time per sample of TR and DAP.
PAPER_MS_PER_SAMPLE = {"tr": 0.51, "dap": 0.88}


class Recorder:
    """Wraps `objectives.collator`: the time each batch took to build and its model FLOPs."""

    def __init__(self, objectives: Objectives):
        self.objectives = objectives
        self.build = objectives.collator
        self.build_s: list[float] = []
        self.flops: list[dict[str, float]] = []
        self.slots: list[int] = []  # token positions of the padded 2N sentences
        self.tokens: list[int] = []  # their real tokens (not TLM's, not AWP's copies)

    def __call__(self, *args, **kwargs) -> Batch:
        start = time.perf_counter()
        batch = self.build(*args, **kwargs)
        self.build_s.append(time.perf_counter() - start)
        self.flops.append(model_flops(self.objectives, batch))
        self.slots.append(batch.ids.numel())
        self.tokens.append(int(batch.mask.sum()))
        return batch

    def reset(self) -> None:
        """Forget the warm-up steps' batches."""
        self.build_s.clear()
        self.flops.clear()
        self.slots.clear()
        self.tokens.clear()


def summary(
    run: str,
    step_s: list[float],
    tokens: int,
    pairs_per_step: int,
    recorder: Recorder,
    peak_tflops: float | None,
    cpu_s: list[float] | None = None,
) -> dict:
    """A run's row: its time per step and per pair, its throughputs, its model FLOPs and MFU
    (with `peak_tflops`); `cpu_s`: each step's CPU time of the whole process (every thread),
    where measured."""
    seconds = sum(step_s)
    steps = len(step_s)
    parts: dict[str, float] = {}
    for flops in recorder.flops:
        for name, value in flops.items():
            parts[name] = parts.get(name, 0.0) + value
    tflops = sum(parts.values()) / seconds / 1e12
    return {
        "run": run,
        "rtl_rows": rtl_rows(recorder.objectives),
        "steps": steps,
        "ms_per_step": 1000 * seconds / steps,
        "ms_per_step_median": 1000 * statistics.median(step_s),
        "ms_per_step_fastest": 1000 * min(step_s),
        "cpu_ms_per_step": 1000 * statistics.mean(cpu_s) if cpu_s else None,
        "cpu_ms_per_step_median": 1000 * statistics.median(cpu_s) if cpu_s else None,
        "ms_per_pair": 1000 * seconds / (steps * pairs_per_step),
        "pairs_per_s": steps * pairs_per_step / seconds,
        "tokens_per_s": tokens / seconds,
        "real_token_fraction": tokens / sum(recorder.slots),  # the rest is padding
        "build_ms_per_micro_batch": 1000 * statistics.mean(recorder.build_s),
        "model_tflop_per_step": {k: v / steps / 1e12 for k, v in parts.items()},
        "achieved_tflops": tflops,
        "mfu": tflops / peak_tflops if peak_tflops else None,
        "step_ms": [round(1000 * s, 3) for s in step_s],
        **({"step_cpu_ms": [round(1000 * s, 3) for s in cpu_s]} if cpu_s else {}),
    }


def add_ratios(result: dict) -> None:
    """Each run's time per step relative to tr's (mean, and fastest step: on a shared CPU
    other jobs only ever add time) and its model FLOPs relative to tr's, and DAP's published
    ratio beside dap's. With a `freeze` column (`me5`): relative to tr's at the same freeze
    setting."""
    bases = {r.get("freeze"): r for r in result["runs"] if r["run"] == "tr"}
    for r in result["runs"]:
        base = bases.get(r.get("freeze"))
        r["ratio_to_tr"] = r["ms_per_step"] / base["ms_per_step"] if base else None
        r["fastest_ratio_to_tr"] = min(r["step_ms"]) / min(base["step_ms"]) if base else None
        flops = sum(r["model_tflop_per_step"].values())
        r["flops_ratio_to_tr"] = (
            flops / sum(base["model_tflop_per_step"].values()) if base else None
        )
    paper = PAPER_MS_PER_SAMPLE["dap"] / PAPER_MS_PER_SAMPLE["tr"]
    result["paper_dap_over_tr"] = {"ms_per_sample": PAPER_MS_PER_SAMPLE, "ratio": paper}
    for r in result["runs"]:
        if r["run"] == "dap":
            r["paper_ratio_to_tr"] = paper
