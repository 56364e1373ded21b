"""Corpus stage: download OPUS archives, clean a language's bitexts, sample train/dev."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from xlsent.commands import Subparsers, UsageError, log, require
from xlsent.corpus.sources import SOURCES
from xlsent.io import write_json


def register(sub: Subparsers) -> None:
    """Add clean, download-opus, sample and demo-testset."""
    _add_clean(sub)
    _add_download_opus(sub)
    _add_sample(sub)
    _add_demo_testset(sub)


def _add_clean(sub: Subparsers) -> None:
    p = sub.add_parser("clean", help="read one language's bitexts and clean them")
    p.add_argument("--lang", required=True)
    p.add_argument("--source", choices=list(SOURCES), required=True)
    # Each source's own flags (xlsent.corpus.sources), which the rule passes with its name.
    for name, source in SOURCES.items():
        source.add_arguments(p.add_argument_group(f"--source {name}"))
    p.add_argument(
        "--settings",
        required=True,
        help="JSON of corpus.clean's settings that the style reads (style, min_tokens; "
        "max_length_ratio with style words; with style dap and a cap, corpus.per_source_cap "
        "and corpus.seed), as xlsent.config.clean_settings gives them",
    )
    p.add_argument(
        "--tokenizer-dir",
        help="style dap: the directory whose tokenizer.json counts the tokens",
    )
    p.add_argument("--out", required=True)
    p.add_argument("--stats", required=True)
    p.set_defaults(handler=clean)


def clean(args: argparse.Namespace) -> None:
    from xlsent.arguments import settings_object
    from xlsent.corpus import clean as cleaning
    from xlsent.corpus.clean_base import FILTERS, CleanConfig

    settings = json.loads(args.settings)
    if "tokenizer" in settings:
        raise UsageError(
            "corpus.clean setting 'tokenizer' is a model's name: pass the directory of its "
            "tokenizer.json as --tokenizer-dir"
        )
    cfg = settings_object(
        CleanConfig, {**settings, "tokenizer": args.tokenizer_dir}, "corpus.clean"
    )
    if cfg.style not in FILTERS:
        raise UsageError(f"corpus.clean style must be one of {', '.join(FILTERS)}, not {cfg.style}")
    if cfg.style == "dap":
        require(args, "with style dap", "tokenizer_dir")
    source = SOURCES[args.source]
    stats = cleaning.clean(source.bitexts(args.lang, args), args.lang, args.out, cfg)
    stats.update(source.stats())
    write_json(args.stats, stats)
    dropped = ", ".join(f"{k} {v}" for k, v in stats["dropped"].items() if v)
    # Style dap with a per-source cap: the pairs the cap left untokenized (xlsent.corpus.capped).
    beyond = f"; beyond the cap: {stats['beyond_cap']}" if "beyond_cap" in stats else ""
    log.info(
        "%s: kept %d of %d pairs (dropped: %s%s)",
        args.lang,
        stats["kept"],
        stats["read"],
        dropped or "none",
        beyond,
    )


def _add_download_opus(sub: Subparsers) -> None:
    p = sub.add_parser("download-opus", help="download one OPUS Moses zip (resumable)")
    p.add_argument("--lang", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--manifest", required=True)
    p.add_argument("--base-url", help="a mirror instead of the manifest's base_url")
    p.add_argument("--retries", type=int, required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(handler=download_opus)


def download_opus(args: argparse.Namespace) -> None:
    from xlsent.corpus.readers import opus

    manifest = opus.load_manifest(args.manifest)
    if args.base_url:
        manifest = dataclasses.replace(manifest, base_url=args.base_url.rstrip("/"))
    (archive,) = opus.archives(manifest, args.lang, [args.corpus])
    opus.download_archive(archive, args.out, retries=args.retries)


def _add_sample(sub: Subparsers) -> None:
    p = sub.add_parser("sample", help="sample the train/dev splits of one language")
    p.add_argument("--lang", required=True)
    p.add_argument(
        "--settings",
        required=True,
        help="JSON of the corpus block's sampling settings (max_pairs, dev_pairs, ..., "
        "mining_pairs)",
    )
    p.add_argument("--clean", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--stats", required=True)
    p.add_argument("--mining", required=True, help="where the held-out mining split goes")
    p.set_defaults(handler=sample)


def sample(args: argparse.Namespace) -> None:
    from xlsent.arguments import settings_object
    from xlsent.corpus.sample import SampleConfig
    from xlsent.corpus.sample import sample as draw

    cfg = settings_object(SampleConfig, json.loads(args.settings), "corpus")
    stats = draw(args.clean, args.lang, args.train, args.dev, cfg, args.mining)
    write_json(args.stats, stats)


def _add_demo_testset(sub: Subparsers) -> None:
    p = sub.add_parser("demo-testset", help="write the demo's held-out pairs in LASER layout")
    p.add_argument("--langs", nargs="+", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--heldout-fraction", type=float, required=True)
    p.add_argument("--max-pairs", type=int, required=True)
    p.set_defaults(handler=demo_testset)


def demo_testset(args: argparse.Namespace) -> None:
    from xlsent.corpus.readers import demo

    counts = demo.write_heldout(
        args.langs, Path(args.out_dir), args.heldout_fraction, args.max_pairs
    )
    log.info("held-out demo test sets: %s", json.dumps(counts))
