"""Training throughput of the methods at the xlm-roberta-base shape: ms/step, pairs/s, MFU.

The xlm-roberta-base shape (built from its config: no download, random weights) wrapped in
the real `Objectives` of each method (`--methods`, of training/runs.py's RUNS, with the
paper config's settings), fed a synthetic full-length batch through the method's collator
as in training (training/xlmr.py): 2N sentences of `--seq` tokens (CLS + 30 subwords + SEP
at 32), words of 2 subwords, 2/3 of them linked; the English sides drawn from
`--english-vocab` ids, `dap`'s RTL vocabulary. Meant for a GPU; runs on CPU with a small
`--batch`. Each row has its model FLOPs per step (training/flops.py), its MFU given
`--peak-tflops`, and its time and FLOPs relative to tr's; docs/results.md#benchmarks says
what every column means and why 76,000 English ids.

    python benchmarks/train_xlmr.py --device cuda --batch 256 --peak-tflops 989
    .venv/bin/python benchmarks/train_xlmr.py --device cpu --batch 32 --steps 5 \\
        --methods tr dap dap-all --english-vocab 76000

Prints a table and writes train_xlmr.json: `runs` (per run: ms_per_step, pairs_per_s,
tokens_per_s, model_tflop_per_step, achieved_tflops, mfu, build_ms_at_build_batch,
ratio_to_tr, flops_ratio_to_tr).
"""

from __future__ import annotations

import harness
import torch
from training import xlmr
from training.record import add_ratios
from training.report import report
from training.runs import RUNS


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--methods", nargs="+", choices=list(RUNS), default=["tr", "wacse", "dap"])
    parser.add_argument(
        "--shape",
        choices=sorted(xlmr.SHAPES),
        default="base",
        help="base: xlm-roberta-base; tiny: the same architecture at 32 wide (--smoke)",
    )
    parser.add_argument("--steps", type=int, default=30, help="timed steps per method")
    parser.add_argument("--warmup", type=int, help="untimed steps first (3 on CUDA, 1 on CPU)")
    parser.add_argument("--batch", type=int, default=256, help="pairs per step")
    parser.add_argument(
        "--micro-batch",
        type=int,
        help="pairs per micro-batch (default --batch); below it, `tr` and `wacse` rank over "
        "the whole batch by gradient caching and `*-micro` within each micro-batch",
    )
    parser.add_argument("--seq", type=int, default=32, help="tokens per sentence")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--peak-tflops", type=float, help="dense bf16 peak of the device (MFU)")
    parser.add_argument(
        "--build-batch", type=int, default=256, help="pairs of the batch-building timing"
    )
    parser.add_argument(
        "--english-vocab",
        type=int,
        default=76_000,
        help="distinct ids of the English side, dap's RTL vocabulary (with </s>)",
    )
    smoke = {
        "methods": ["tr", "wacse", "dap", "tr-tlm"],
        "shape": "tiny",
        "steps": 2,
        "warmup": 1,
        "batch": 4,
        "micro_batch": 2,
        "seq": 16,
        "build_batch": 8,
        "english_vocab": 200,
        "threads": 1,
    }
    args = harness.parse(parser, smoke)
    # On CPU a step of the base shape takes seconds: one warm-up step does.
    warmup = args.warmup if args.warmup is not None else 3 if args.device != "cpu" else 1
    result = xlmr.bench(
        list(dict.fromkeys(args.methods)),
        args.shape,
        args.steps,
        warmup,
        args.batch,
        args.micro_batch or args.batch,
        args.seq,
        args.device,
        args.threads,
        args.peak_tflops,
        args.build_batch,
        args.english_vocab,
    )
    add_ratios(result)
    print(report(result))
    harness.write_json(args.out_dir, __file__, result)


if __name__ == "__main__":
    main()
