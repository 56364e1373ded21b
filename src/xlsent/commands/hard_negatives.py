"""Hard-negative stage: a shard of the training pool (every language's pairs, one after another)
encoded by the model a run starts from, then each language's hard negatives mined from the
shards that hold its pairs (`xlsent.hard_negatives`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from xlsent.arguments import lang_paths, settings_object
from xlsent.commands import Subparsers, log, resolve_device


def register(sub: Subparsers) -> None:
    """Add hard-negatives-encode and hard-negatives."""
    _add_encode(sub)
    _add_mine(sub)


def _add_encode(sub: Subparsers) -> None:
    p = sub.add_parser(
        "hard-negatives-encode",
        help="encode one shard of the training pool with a run's starting model",
    )
    p.add_argument(
        "--settings", required=True, help="JSON of hard_negatives.encode (less gpus, threads)"
    )
    p.add_argument(
        "--subwords",
        nargs="+",
        required=True,
        help="LANG=PATH: each language's subwords/train.parquet, the pool's languages",
    )
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--shard-size", type=int, required=True)
    p.add_argument(
        "--max-pairs",
        type=int,
        help="the runs' train.max_pairs: the pool is the pairs it keeps (absent: all of them)",
    )
    p.add_argument("--model", required=True, help="the model directory the runs start from")
    p.add_argument("--tokenizer", required=True, help="the tokenizer of the subwords")
    p.add_argument("--threads", type=int, required=True, help="the job's CPU threads")
    p.add_argument("--out", required=True, help="the shard's vectors (Arrow IPC)")
    p.set_defaults(handler=encode)


def encode(args: argparse.Namespace) -> None:
    import torch

    from xlsent.hard_negatives.encode import PoolEncoding, encode_shard

    torch.set_num_threads(args.threads)
    settings = settings_object(PoolEncoding, json.loads(args.settings), "hard_negatives.encode")
    counts = encode_shard(
        settings,
        lang_paths(args.subwords),
        args.index,
        args.shard_size,
        Path(args.model),
        Path(args.tokenizer),
        Path(args.out),
        resolve_device(settings.device),
        args.max_pairs,
    )
    log.info("%s", json.dumps(counts))


def _add_mine(sub: Subparsers) -> None:
    p = sub.add_parser(
        "hard-negatives", help="a language's hard negatives, mined from the shards of its pairs"
    )
    p.add_argument("--settings", required=True, help="JSON of hard_negatives.mine")
    p.add_argument("--lang", required=True)
    p.add_argument("--corpus", required=True, help="the language's corpus train.parquet")
    p.add_argument("--threads", type=int, required=True, help="the job's CPU threads (faiss)")
    p.add_argument("--out", required=True, help="the negatives (Parquet)")
    p.add_argument("--manifest", required=True, help="the manifest, written last (_SUCCESS)")
    p.add_argument("shards", nargs="+", help="the encoded shards that hold its pairs, in order")
    p.set_defaults(handler=mine)


def mine(args: argparse.Namespace) -> None:
    import faiss

    from xlsent.hard_negatives.mine import MiningSettings, run

    faiss.omp_set_num_threads(args.threads)
    settings = settings_object(MiningSettings, json.loads(args.settings), "hard_negatives.mine")
    record = run(
        [Path(p) for p in args.shards],
        args.lang,
        Path(args.corpus),
        settings,
        Path(args.out),
        Path(args.manifest),
    )
    log.info("%s", json.dumps(record["totals"]))
