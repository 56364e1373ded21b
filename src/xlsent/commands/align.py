"""Align stage: fetch and build eflomal, word-align a language's training pairs shard by
shard, then join the shards."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from xlsent.commands import Subparsers, log, require
from xlsent.io import write_json
from xlsent.methods import ALIGN_METHODS

# align-shard's flags of the pairs beyond the cap: all or none.
BEYOND_CAP = ("lang", "clean", "dev", "mining")


def register(sub: Subparsers) -> None:
    """Add eflomal-download, eflomal-build, align-shard, align-manifest and align-pharaoh."""
    _add_eflomal_download(sub)
    _add_eflomal_build(sub)
    _add_align_shard(sub)
    _add_align_manifest(sub)
    _add_align_pharaoh(sub)


def _add_eflomal_download(sub: Subparsers) -> None:
    p = sub.add_parser("eflomal-download", help="download eflomal's source from PyPI (checked)")
    p.add_argument("--out", required=True, help="the sdist to write")
    p.set_defaults(handler=eflomal_download)


def eflomal_download(args: argparse.Namespace) -> None:
    from xlsent.align.eflomal_build import fetch_sdist

    log.info("eflomal source: %s", fetch_sdist(args.out))


def _add_eflomal_build(sub: Subparsers) -> None:
    p = sub.add_parser("eflomal-build", help="compile eflomal with our seed patch")
    p.add_argument("--sdist", required=True, help="PyPI's eflomal-2.0.0.tar.gz")
    p.add_argument("--patch", required=True, help="csrc/eflomal/seed.patch")
    p.add_argument("--out", required=True, help="the binary to write")
    p.set_defaults(handler=eflomal_build)


def eflomal_build(args: argparse.Namespace) -> None:
    from xlsent.align.eflomal_build import compile_binary

    log.info("eflomal binary: %s", compile_binary(args.out, args.sdist, args.patch))


def _add_align_shard(sub: Subparsers) -> None:
    p = sub.add_parser("align-shard", help="word-align one shard of a language")
    p.add_argument("--method", choices=ALIGN_METHODS, required=True)
    p.add_argument("--settings", required=True, help="JSON of the method's settings")
    p.add_argument("--corpus", required=True, help="the language's train.parquet")
    p.add_argument("--words", required=True, help="its word tokens")
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--shard-size", type=int, required=True)
    p.add_argument("--total", type=int, required=True, help="training pairs of the language")
    p.add_argument("--model", help="the model directory: WSPAlign's checkpoint, SimAlign's encoder")
    p.add_argument("--binary", help="the eflomal binary (eflomal-build)")
    beyond = p.add_argument_group(
        "eflomal: a small shard estimates on pairs beyond the cap (xlsent.align.estimation)"
    )
    beyond.add_argument("--lang", help="the language (its word tokenizer)")
    beyond.add_argument("--clean", help="the language's clean.parquet")
    beyond.add_argument("--dev", help="its dev split, whose pairs are never borrowed")
    beyond.add_argument("--mining", help="its mining split, whose pairs are never borrowed")
    p.add_argument("--threads", type=int, required=True, help="the job's CPU threads")
    p.add_argument("--out", required=True)
    p.add_argument("--stats", required=True)
    p.set_defaults(handler=align_shard)


def align_shard(args: argparse.Namespace) -> None:
    """eflomal runs its own three samplers; a neural aligner on the CPU is limited to the
    job's `--threads`."""
    from xlsent.align import job
    from xlsent.align.estimation import BeyondCap

    if args.method != "eflomal":
        import torch

        torch.set_num_threads(args.threads)
    beyond = None
    if any(getattr(args, dest) is not None for dest in BEYOND_CAP):
        require(args, "to borrow pairs beyond the cap", *BEYOND_CAP)
        splits = (Path(args.corpus), Path(args.dev), Path(args.mining))
        beyond = BeyondCap(args.lang, Path(args.clean), splits)
    stats = job.run(
        args.method,
        json.loads(args.settings),
        Path(args.corpus),
        Path(args.words),
        args.index,
        args.shard_size,
        args.total,
        Path(args.out),
        Path(args.model) if args.model else None,
        Path(args.binary) if args.binary else None,
        beyond,
    )
    write_json(args.stats, stats)
    log.info("%s", json.dumps(stats))


def _add_align_manifest(sub: Subparsers) -> None:
    p = sub.add_parser("align-manifest", help="join a language's shards (_SUCCESS)")
    p.add_argument("--method", required=True)
    p.add_argument("--lang", required=True)
    p.add_argument("--settings", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("stats", nargs="+", help="the shards' stats JSON, in shard order")
    p.set_defaults(handler=align_manifest)


def align_manifest(args: argparse.Namespace) -> None:
    from xlsent.align.shards import write_manifest

    info = {"method": args.method, "lang": args.lang, "settings": json.loads(args.settings)}
    manifest = write_manifest(Path(args.out), [Path(p) for p in args.stats], info)
    log.info("%s: %s", args.lang, json.dumps(manifest["totals"]))


def _add_align_pharaoh(sub: Subparsers) -> None:
    p = sub.add_parser("align-pharaoh", help="export a language's links as Pharaoh i-j lines")
    p.add_argument("--manifest", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(handler=align_pharaoh)


def align_pharaoh(args: argparse.Namespace) -> None:
    from xlsent.align.links import to_pharaoh
    from xlsent.align.shards import iter_shards
    from xlsent.io import atomic_path

    with atomic_path(args.out) as tmp, open(tmp, "w") as f:
        for shard in iter_shards(Path(args.manifest)):
            for links in shard.column("links").to_pylist():
                f.write(to_pharaoh({(link["en"], link["xx"]) for link in links}) + "\n")
