"""Train stage: one encoder run at one seed (also under torchrun, one process per GPU)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from xlsent.commands import Subparsers, lang_paths, log


def register(sub: Subparsers) -> None:
    """Add train."""
    _add_train(sub)


def _add_train(sub: Subparsers) -> None:
    p = sub.add_parser("train", help="train one run at one seed")
    p.add_argument("--settings", required=True, help="JSON of the run's train settings")
    p.add_argument("--model", required=True, help="JSON of the run's model entry")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--pretrained")
    p.add_argument(
        "--train",
        nargs="+",
        required=True,
        help="LANG=subwords/train.parquet (wacse: LANG=the word-span file)",
    )
    p.add_argument("--dev", nargs="+", required=True, help="LANG=subwords/dev.parquet")
    p.add_argument("--checkpoints", required=True)
    p.add_argument("--threads", type=int, required=True, help="the job's CPU threads")
    p.add_argument("--out", required=True)
    p.set_defaults(handler=train)


def train(args: argparse.Namespace) -> None:
    import torch

    from xlsent.config import program_settings
    from xlsent.models.encoder import SHAPE_KEYS
    from xlsent.train import distributed
    from xlsent.train.loop import ModelSpec, Trainer, TrainSettings

    settings = json.loads(args.settings)
    model = json.loads(args.model)
    # Under torchrun the job's threads are shared by its processes.
    torch.set_num_threads(max(1, args.threads // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
    spec = ModelSpec(
        init=model["init"],
        tokenizer_dir=Path(args.tokenizer),
        pretrained_dir=Path(args.pretrained) if args.pretrained else None,
        shape={k: model[k] for k in SHAPE_KEYS if k in model},
    )
    trainer = Trainer(
        TrainSettings(**program_settings("train", settings)),
        spec,
        lang_paths(args.train),
        lang_paths(args.dev),
        Path(args.checkpoints),
    )
    Path(args.checkpoints).mkdir(parents=True, exist_ok=True)
    try:
        best = trainer.run(Path(args.checkpoints) / "train_log.jsonl")
        if trainer.world.main:  # under torchrun, one process writes the model
            log.info("best dev P@1 %.2f at step %s", best["dev_p1"], best["step"])
            trainer.export(Path(args.out), {"settings": settings, "model": model})
    finally:
        distributed.shutdown(trainer.world)
