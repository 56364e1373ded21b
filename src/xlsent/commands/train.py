"""Train stage: WACSE's word spans of a language (what its word-level batches read), one
encoder run at one seed (also under torchrun, one process per GPU), or one dual-pivot head
over a frozen encoder."""

from __future__ import annotations

import argparse
import json
import os
from contextlib import nullcontext
from pathlib import Path

from xlsent.arguments import add_prefix, parsed_prefix
from xlsent.commands import Subparsers, lang_paths, log
from xlsent.models.sentence import DEFAULT_PRECISION, PRECISIONS

# Set by the launcher for the processes it starts: the checkpoint directory is held for them.
HELD_BY_LAUNCHER = "XLSENT_CHECKPOINTS_HELD_BY"


def register(sub: Subparsers) -> None:
    """Add word-spans, train and train-dualpivot."""
    _add_word_spans(sub)
    _add_train(sub)
    _add_train_dualpivot(sub)


def _add_word_spans(sub: Subparsers) -> None:
    p = sub.add_parser(
        "word-spans", help="subword span of every word and the links of a language's pairs"
    )
    p.add_argument("--corpus", required=True, help="the language's train.parquet")
    p.add_argument("--manifest", required=True, help="its alignment manifest (_SUCCESS)")
    p.add_argument("--tokenizer", required=True)
    add_prefix(p)
    p.add_argument("--out", required=True)
    p.add_argument("--stats", required=True)
    p.set_defaults(handler=word_spans)


def word_spans(args: argparse.Namespace) -> None:
    from xlsent.align.shards import iter_shards
    from xlsent.io import write_json
    from xlsent.train.word_spans import word_spans as spans

    stats = spans(
        args.corpus, iter_shards(Path(args.manifest)), args.tokenizer, args.out, parsed_prefix(args)
    )
    write_json(args.stats, stats)
    log.info(
        "%d pairs, %d links; dropped %d links whose words have no subword of their own "
        "(%d of %d words) or were not found in the text (%d pairs)",
        stats["pairs"],
        stats["links"] - stats["links_dropped"],
        stats["links_dropped"],
        stats["words_without_subword"],
        stats["words"],
        stats["words_not_in_text"],
    )


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
    p.add_argument(
        "--negative-files",
        nargs="+",
        help="LANG=the hard-negative stage's file of its training pairs (train.hard_negatives "
        "above 0)",
    )
    p.add_argument("--checkpoints", required=True)
    p.add_argument("--threads", type=int, required=True, help="the job's CPU threads")
    p.add_argument(
        "--processes",
        type=int,
        default=1,
        help="training processes on this node (one per GPU; on a CPU, processes over gloo); "
        "above 1, this command starts them and waits",
    )
    p.add_argument(
        "--nodes", type=int, help="nodes of the job, one command each (absent: this one)"
    )
    p.add_argument(
        "--dev-precision",
        choices=PRECISIONS,
        default=DEFAULT_PRECISION,
        help="how dev P@1 encodes (evaluate.precision, the evaluations' own); the rule passes "
        "it where it is not the default, so that no finished training runs again",
    )
    p.add_argument(
        "--rendezvous",
        help="HOST:PORT where the nodes' commands meet (default: the first node of the "
        "Slurm allocation)",
    )
    p.add_argument("--out", required=True)
    p.add_argument(
        "--log",
        required=True,
        help="the job's log, which stderr appends to (2>> LOG): a second job of the run, "
        "refused while this one runs, puts it back and appends its refusal",
    )
    # The export's sentence-transformers imports `datasets`, which needs pandas (cli.py).
    p.set_defaults(handler=train, pandas=True)


def train(args: argparse.Namespace) -> None:
    """Train in this process, or start the run's processes and wait for them (`--processes`
    or `--nodes` above 1). The checkpoint directory is held by one process of the job: the
    launcher of the first node, or the training process alone."""
    from xlsent.failures.locks import sole_writer
    from xlsent.train import launch

    checkpoints = Path(args.checkpoints)
    checkpoints.mkdir(parents=True, exist_ok=True)
    nodes = args.nodes or 1
    if launch.is_worker() or args.processes * nodes == 1:
        _train(args)
        return
    first_node = os.environ.get("SLURM_PROCID", "0") == "0"
    with sole_writer(checkpoints, args.log) if first_node else nullcontext():
        # Its processes see that the directory is held for them.
        os.environ[HELD_BY_LAUNCHER] = str(os.getpid())
        launch.launch(args.argv, args.processes, nodes, args.rendezvous, checkpoints)


def _train(args: argparse.Namespace) -> None:
    """One training process: the run alone, or one rank of several."""
    import torch

    from xlsent.config import program_settings
    from xlsent.failures.locks import sole_writer
    from xlsent.models.encoder import SHAPE_KEYS
    from xlsent.models.sentence import SentenceSettings
    from xlsent.train import distributed
    from xlsent.train.loop import Trainer
    from xlsent.train.settings import ModelSpec, TrainSettings

    settings = json.loads(args.settings)
    model = json.loads(args.model)
    # The processes of a node share the job's threads.
    torch.set_num_threads(max(1, args.threads // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
    spec = ModelSpec(
        init=model["init"],
        tokenizer_dir=Path(args.tokenizer),
        pretrained_dir=Path(args.pretrained) if args.pretrained else None,
        shape={k: model[k] for k in SHAPE_KEYS if k in model},
        sentence=SentenceSettings.of_entry(model),
    )
    trainer = Trainer(
        TrainSettings(**program_settings("train", settings)),
        spec,
        lang_paths(args.train),
        lang_paths(args.dev),
        Path(args.checkpoints),
        lang_paths(args.negative_files) if args.negative_files else None,
    )
    # One process writes the checkpoints and the model: it holds them, unless its launcher
    # does (a user's own torchrun does not).
    holds = trainer.world.main and HELD_BY_LAUNCHER not in os.environ
    writing = sole_writer(args.checkpoints, args.log) if holds else nullcontext()
    try:
        with writing:
            best = trainer.run(Path(args.checkpoints) / "train_log.jsonl", args.dev_precision)
            if trainer.world.main:
                log.info("best dev P@1 %.2f at step %s", best["dev_p1"], best["step"])
                trainer.export(Path(args.out), {"settings": settings, "model": model})
        # The processes leave together, once the model is written, as a training script's
        # end does; not one tearing its process group down while a peer still works (a rank
        # 1 that left while rank 0 exported aborted once in its teardown, under the suite's
        # load: "terminate called without an active exception", a finished run reported as
        # a failed one).
        distributed.barrier(trainer.world)
    finally:
        trainer.close()
        distributed.shutdown(trainer.world)


def _add_train_dualpivot(sub: Subparsers) -> None:
    p = sub.add_parser(
        "train-dualpivot", help="train a dual-pivot head over a frozen encoder on one pivot pair"
    )
    p.add_argument("--settings", required=True, help="JSON of the run's dualpivot settings")
    p.add_argument("--encoder", required=True, help="the frozen encoder's model directory")
    p.add_argument("--model", required=True, help="JSON of the run's model entry (its prefix)")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--train", required=True, help="the pivot's subwords/train.parquet")
    p.add_argument("--dev", required=True, help="the pivot's subwords/dev.parquet")
    p.add_argument("--threads", type=int, required=True, help="the job's CPU threads")
    p.add_argument("--out", required=True)
    p.set_defaults(handler=train_dualpivot)


def train_dualpivot(args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    from xlsent.commands import resolve_device
    from xlsent.devices import device_record
    from xlsent.failures.kill_points import kill_point
    from xlsent.io import atomic_path, write_json
    from xlsent.models import dualpivot as model
    from xlsent.models.sentence import SentenceSettings
    from xlsent.train import dualpivot
    from xlsent.train.data import load_pairs
    from xlsent.train.reproducible import fixed_reduction_order

    settings = dualpivot.DualPivotSettings(**json.loads(args.settings))
    torch.set_num_threads(args.threads)
    device = torch.device(resolve_device(settings.device))
    fixed_reduction_order(device)
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    special = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)
    encoder = AutoModel.from_pretrained(args.encoder).to(device)
    splits = {}
    for split, path in (("train", args.train), ("dev", args.dev)):
        pairs = load_pairs({settings.pivot: Path(path)}, settings.max_length)
        splits[split] = (pairs.xx.to_list(), pairs.en.to_list())
    out = Path(args.out)
    with atomic_path(out) as tmp:
        tmp.mkdir(parents=True)
        head, record = dualpivot.train(
            settings, encoder, special, splits["train"], splits["dev"], tmp / "train_log.jsonl"
        )
        log.info("pivot %s dev P@1 %.2f", settings.pivot, record["dev_p1"])
        # The pivot's subwords carry the model entry's prefix; raw sentences get it from here.
        prefix = SentenceSettings.of_entry(json.loads(args.model)).prefix
        model.save(head.cpu(), args.encoder, args.tokenizer, tmp, prefix)
        kill_point("dualpivot.export")
        write_json(
            tmp / "run.json",
            {
                "settings": json.loads(args.settings),
                "model": json.loads(args.model),
                # The head trains without autocast: fp32 on whichever device (the tables' rows).
                "trained_on": [device_record(device, "fp32")],
            },
        )
        write_json(tmp / "best.json", {k: v for k, v in record.items() if k != "history"})
