"""Training throughput of the methods side by side at the demo shape: ms/step, pairs/s, tokens/s.

The demo config's scratch encoder trained by the real `Trainer` on the real demo corpus (de
kk te zh: CLDR names and Django messages, word-aligned by eflomal for `wacse`) on this
machine's CPU, each method (`--methods`, of training/runs.py's RUNS) with the config's
`train` block and its run's overrides at `--batch` pairs per step. The methods' steps are
interleaved, one step of each in turn, so that load from other jobs falls on all alike;
`--isolate` runs each in its own process instead and adds its peak memory. Each row has the
method's model FLOPs per step (xlsent.train.flops) and its time and FLOPs relative to tr's;
docs/results.md#benchmarks says what every column means and what was measured.

    .venv/bin/python benchmarks/train_demo.py --steps 30
    .venv/bin/python benchmarks/train_demo.py --methods tr tr-micro wacse wacse-micro \\
        --batch 128 --micro-batch 32 --isolate
    .venv/bin/python benchmarks/train_demo.py --methods tr wacse dap tr-awp tr-wtr dap-all

Prints a table and writes train_demo.json: `runs` (per run: ms_per_step, pairs_per_s,
tokens_per_s, cpu_ms_per_step, model_tflop_per_step, ratio_to_tr, flops_ratio_to_tr).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import harness
import torch
from training import demo
from training.record import add_ratios
from training.report import report
from training.runs import DEMO_CONFIG, RUNS, load_config, run_settings


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--methods", nargs="+", choices=list(RUNS), default=["tr", "wacse", "dap"])
    parser.add_argument("--langs", nargs="+", default=demo.LANGS, help="of the demo corpus")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per method")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--batch", type=int, default=128, help="pairs per step")
    parser.add_argument(
        "--micro-batch",
        type=int,
        help="pairs per micro-batch (default --batch); below it, `tr` and `wacse` rank over "
        "the whole batch by gradient caching and `*-micro` within each micro-batch",
    )
    parser.add_argument(
        "--isolate", action="store_true", help="each run in its own process (own peak memory)"
    )
    # On a CPU shared with other jobs one thread is steadier: 2 threads on 2 busy cores ran
    # 3-4x slower than 1 (the threads wait on each other).
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--peak-tflops", type=float, help="dense peak of the device (MFU)")
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)  # --isolate's children
    parser.add_argument("--json-out", type=Path, help=argparse.SUPPRESS)
    smoke = {"langs": ["de", "kk"], "steps": 2, "warmup": 1, "batch": 8, "threads": 1}
    args = harness.parse(parser, smoke)
    runs = list(dict.fromkeys(args.methods))
    micro_batch = args.micro_batch or args.batch
    config = load_config(DEMO_CONFIG)
    sizes = {"batch_size": args.batch, "micro_batch_size": micro_batch, "device": "cpu"}
    settings = {run: run_settings(config, run, **sizes) for run in runs}

    def measure(workdir: Path, data: dict) -> dict:
        return demo.interleaved(
            workdir, data, settings, args.steps, args.warmup, args.threads, args.peak_tflops, "demo"
        )

    if args.json_out:  # a child of --isolate: its one run, on the data prepared before
        with tempfile.TemporaryDirectory() as tmp:
            args.json_out.write_text(json.dumps(measure(Path(tmp), demo.load(args.data_dir))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        data = demo.prepare(Path(tmp), config, args.langs)
        prepared_s = time.perf_counter() - start
        if args.isolate:
            demo.save(data, Path(tmp))
            common = [f"--steps={args.steps}", f"--warmup={args.warmup}", f"--batch={args.batch}"]
            common += [f"--micro-batch={micro_batch}", f"--threads={args.threads}"]
            common += [f"--peak-tflops={args.peak_tflops}"] if args.peak_tflops else []
            children = [[f"--methods={run}", *common] for run in runs]
            result = demo.isolated(__file__, children, Path(tmp))
        else:
            result = measure(Path(tmp), data)
    result["data_preparation_s"] = prepared_s
    add_ratios(result)
    print(report(result))
    harness.write_json(args.out_dir, __file__, result)


if __name__ == "__main__":
    main()
