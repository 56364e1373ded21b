"""What a training benchmark measures of its steps, and the summary row of each run."""

from __future__ import annotations

import statistics
import time

from xlsent.train.collate import Batch
from xlsent.train.flops import rtl_rows
from xlsent.train.objectives import Objectives
from xlsent.train.speed import mfu

# DAP (Li et al. 2023): training time per sample of TR and DAP.
PAPER_MS_PER_SAMPLE = {"tr": 0.51, "dap": 0.88}


class Recorder:
    """Wraps `objectives.collator`: the time each batch took to build, its padded positions
    and its real tokens (the model FLOPs of a step come with it: `xlsent.train.step`)."""

    def __init__(self, objectives: Objectives):
        self.objectives = objectives
        self.build = objectives.collator
        self.build_s: list[float] = []
        self.slots: list[int] = []  # token positions of the padded 2N sentences
        self.tokens: list[int] = []  # their real tokens (not TLM's, not AWP's copies)

    def __call__(self, *args, **kwargs) -> Batch:
        start = time.perf_counter()
        batch = self.build(*args, **kwargs)
        self.build_s.append(time.perf_counter() - start)
        self.slots.append(batch.ids.numel())
        self.tokens.append(int(batch.mask.sum()))
        return batch

    def reset(self) -> None:
        """Forget the warm-up steps' batches."""
        self.build_s.clear()
        self.slots.clear()
        self.tokens.clear()


def summary(
    run: str,
    step_s: list[float],
    tokens: int,
    pairs_per_step: int,
    recorder: Recorder,
    flops: list[dict[str, float]],
    peak_tflops: float | None,
    cpu_s: list[float] | None = None,
) -> dict:
    """A run's row: its time per step and per pair, its throughputs, its padding, its model
    FLOPs (`flops`: each timed step's by part, as `xlsent.train.step.accumulate` counts them)
    and MFU (with `peak_tflops`: `xlsent.train.speed.mfu`); `cpu_s`: each step's CPU time of
    the whole process (every thread), where measured."""
    seconds = sum(step_s)
    steps = len(step_s)
    parts: dict[str, float] = {}
    for step_flops in flops:
        for name, value in step_flops.items():
            parts[name] = parts.get(name, 0.0) + value
    tflops = sum(parts.values()) / seconds / 1e12
    real = sum(recorder.tokens) / sum(recorder.slots)  # of the 2N sentences alone
    return {
        "run": run,
        "batch_pairs": pairs_per_step,
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
        "real_token_fraction": real,
        # The padded 2N sentences' positions that are padding (each micro-batch padded to
        # its longest sentence, as collated).
        "padding_share": 1 - real,
        "build_ms_per_micro_batch": 1000 * statistics.mean(recorder.build_s),
        "model_tflop_per_step": {k: v / steps / 1e12 for k, v in parts.items()},
        "achieved_tflops": tflops,
        "peak_tflops": peak_tflops,
        "mfu": mfu(sum(parts.values()), seconds, peak_tflops),
        "step_ms": [round(1000 * s, 3) for s in step_s],
        **({"step_cpu_ms": [round(1000 * s, 3) for s in cpu_s]} if cpu_s else {}),
    }


def add_ratios(result: dict) -> None:
    """Each run's time per step relative to tr's at the same batch (mean, and fastest step:
    on a shared CPU other jobs only ever add time) and its model FLOPs relative to tr's, and
    DAP's published ratio beside dap's. With a `freeze` column (`me5`): relative to tr's at
    the same freeze setting; with an `options` column (`xlmr`): at the same options, and each
    row's time relative to the same run's under the default options (`ratio_to_default`)."""

    def key(row: dict) -> tuple:
        return row.get("freeze"), row.get("options"), row["batch_pairs"]

    defaults = {
        (r["run"], r["batch_pairs"]): r for r in result["runs"] if r.get("options") == "default"
    }
    for r in result["runs"]:
        if "options" in r:
            default = defaults.get((r["run"], r["batch_pairs"]))
            r["ratio_to_default"] = r["ms_per_step"] / default["ms_per_step"] if default else None
    bases = {key(r): r for r in result["runs"] if r["run"] == "tr"}
    for r in result["runs"]:
        base = bases.get(key(r))
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
