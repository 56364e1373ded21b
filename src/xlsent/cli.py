"""`xlsent <subcommand>`: the entry points the Snakemake rules call, one per job kind.

Every subcommand takes explicit paths (no hidden defaults about the results layout, which
belongs to the workflow) and settings as flags or as one JSON object (`--settings`).
Known input errors print one actionable line and exit 2; anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from xlsent.corpus.bitext import CorpusError
from xlsent.io import write_json

log = logging.getLogger("xlsent")

_COMMANDS: dict[str, Callable[[argparse.Namespace], None]] = {}


def command(func: Callable[[argparse.Namespace], None]) -> Callable[[argparse.Namespace], None]:
    _COMMANDS[func.__name__.replace("_", "-")] = func
    return func


def _lang_paths(items: list[str]) -> dict[str, Path]:
    """`key=path` arguments (LANG=PATH, CORPUS=PATH) as a mapping."""
    out = {}
    for item in items:
        lang, sep, path = item.partition("=")
        if not sep:
            raise SystemExit(f"expected KEY=PATH, got {item!r}")
        out[lang] = Path(path)
    return out


# -- corpus --------------------------------------------------------------------------------------
@command
def clean(args: argparse.Namespace) -> None:
    from xlsent.corpus import clean as cleaning
    from xlsent.corpus import demo, local, opus

    if args.source == "local":
        bitexts = local.discover(args.local_dir, args.lang, args.corpora)
    elif args.source == "demo":
        bitexts = demo.bitexts(args.lang, args.heldout_fraction)
    else:
        manifest = opus.load_manifest(args.manifest)
        zips = _lang_paths(args.zip)  # CORPUS=PATH
        bitexts = [
            opus.bitext_from_zip(zips[archive.corpus], archive.corpus, args.lang, archive.opus_code)
            for archive in opus.archives(manifest, args.lang, list(zips))
        ]
    stats = cleaning.clean(
        bitexts,
        args.lang,
        args.out,
        cleaning.CleanConfig(min_tokens=args.min_tokens, max_length_ratio=args.max_length_ratio),
    )
    if args.source == "demo":
        stats["provenance"] = demo.provenance()
    write_json(args.stats, stats)
    dropped = ", ".join(f"{k} {v}" for k, v in stats["dropped"].items() if v)
    log.info(
        "%s: kept %d of %d pairs (dropped: %s)",
        args.lang,
        stats["kept"],
        stats["read"],
        dropped or "none",
    )


@command
def download_opus(args: argparse.Namespace) -> None:
    from xlsent.corpus import opus

    manifest = opus.load_manifest(args.manifest)
    if args.base_url:
        manifest = dataclasses.replace(manifest, base_url=args.base_url.rstrip("/"))
    (archive,) = opus.archives(manifest, args.lang, [args.corpus])
    opus.download_archive(archive, args.out, retries=args.retries)


@command
def sample(args: argparse.Namespace) -> None:
    from xlsent.corpus.sample import SampleConfig
    from xlsent.corpus.sample import sample as draw

    cfg = SampleConfig(args.max_pairs, args.dev_pairs, args.dev_fraction, args.seed)
    write_json(args.stats, draw(args.clean, args.lang, args.train, args.dev, cfg))


@command
def demo_testset(args: argparse.Namespace) -> None:
    from xlsent.corpus import demo

    counts = demo.write_heldout(
        args.langs, Path(args.out_dir), args.heldout_fraction, args.max_pairs
    )
    log.info("held-out demo test sets: %s", json.dumps(counts))


# -- tokenize ----------------------------------------------------------------------------------
@command
def words(args: argparse.Namespace) -> None:
    from xlsent.tokenize import words as tokenize_words

    stats = tokenize_words(args.corpus, args.lang, args.out)
    log.info("%s", json.dumps(stats))


@command
def fetch_model(args: argparse.Namespace) -> None:
    from xlsent.models.encoder import fetch_pretrained

    fetch_pretrained(args.path, args.out)


@command
def tokenizer(args: argparse.Namespace) -> None:
    from xlsent.models import tokenizer as tok

    if args.pretrained:
        stats = tok.save_pretrained_tokenizer(args.pretrained, args.out)
    else:
        stats = tok.train_sentencepiece(
            _lang_paths(args.corpus),
            args.out,
            args.vocab_size,
            args.sentences,
            args.seed,
            args.threads,
        )
    log.info("%s", json.dumps(stats))


@command
def subwords(args: argparse.Namespace) -> None:
    from xlsent.tokenize import subwords as encode

    log.info("%s", json.dumps(encode(args.corpus, args.tokenizer, args.out)))


# -- align ---------------------------------------------------------------------------------------
@command
def align_shard(args: argparse.Namespace) -> None:
    from xlsent.align import job

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
    )
    write_json(args.stats, stats)
    log.info("%s", json.dumps(stats))


@command
def align_manifest(args: argparse.Namespace) -> None:
    from xlsent.align.shards import write_manifest

    info = {"method": args.method, "lang": args.lang, "settings": json.loads(args.settings)}
    manifest = write_manifest(Path(args.out), [Path(p) for p in args.stats], info)
    log.info("%s: %s", args.lang, json.dumps(manifest["totals"]))


@command
def align_pharaoh(args: argparse.Namespace) -> None:
    from xlsent.align.links import to_pharaoh
    from xlsent.align.shards import iter_shards
    from xlsent.io import atomic_path

    with atomic_path(args.out) as tmp, open(tmp, "w") as f:
        for shard in iter_shards(Path(args.manifest)):
            for links in shard.column("links").to_pylist():
                f.write(to_pharaoh({(link["en"], link["xx"]) for link in links}) + "\n")


# -- train ---------------------------------------------------------------------------------------
@command
def train(args: argparse.Namespace) -> None:
    import torch

    from xlsent.models.encoder import SCRATCH_DEFAULTS
    from xlsent.train.loop import ModelSpec, Trainer, TrainSettings

    settings = json.loads(args.settings)
    model = json.loads(args.model)
    torch.set_num_threads(args.threads)
    spec = ModelSpec(
        init=model["init"],
        tokenizer_dir=Path(args.tokenizer),
        pretrained_dir=Path(args.pretrained) if args.pretrained else None,
        shape={k: model[k] for k in SCRATCH_DEFAULTS if k in model},
    )
    # threads and gpus are the job's resources (Snakemake's), not training settings.
    known = {k: v for k, v in settings.items() if k not in ("threads", "gpus")}
    trainer = Trainer(
        TrainSettings(**known),
        spec,
        _lang_paths(args.train),
        _lang_paths(args.dev),
        Path(args.checkpoints),
    )
    Path(args.checkpoints).mkdir(parents=True, exist_ok=True)
    best = trainer.run(Path(args.checkpoints) / "train_log.jsonl")
    log.info("best dev P@1 %.2f at step %s", best["dev_p1"], best["step"])
    trainer.export(Path(args.out), {"settings": settings, "model": model})


# -- evaluate ------------------------------------------------------------------------------------
def _device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


@command
def eval_tatoeba(args: argparse.Namespace) -> None:
    import polars as pl
    import torch

    from xlsent.evaluate import tatoeba
    from xlsent.io import write_parquet
    from xlsent.models.encoder import TextEncoder

    torch.set_num_threads(args.threads)
    encode = TextEncoder.load(args.model, args.max_length, args.batch_size, _device(args.device))
    rows = tatoeba.evaluate(encode, Path(args.dir), args.langs)
    frame = pl.DataFrame(rows).select(
        task=pl.lit("tatoeba"),
        run=pl.lit(args.run),
        seed=pl.lit(args.seed, dtype=pl.Int64),
        lang=pl.col("lang"),
        direction=pl.col("direction"),
        metric=pl.col("metric"),
        value=pl.col("value").cast(pl.Float64),
        n=pl.col("n").cast(pl.Int64),
    )
    write_parquet(args.out, frame.to_arrow())
    for lang, direction, value in (
        frame.filter(pl.col("direction") == "mean").select("lang", "direction", "value").iter_rows()
    ):
        log.info("%s %s %.1f", lang, direction, value)


@command
def fetch_tatoeba(args: argparse.Namespace) -> None:
    from xlsent.evaluate import tatoeba

    tatoeba.fetch(args.url, Path(args.dir), args.langs)


@command
def tables(args: argparse.Namespace) -> None:
    from xlsent import tables as result_tables

    summary, per_language = result_tables.tatoeba_tables(args.results, args.groups)
    for path in result_tables.write_tables(summary, per_language, Path(args.out)):
        log.info("wrote %s", path)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xlsent", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("clean", help="read one language's bitexts and clean them")
    p.add_argument("--lang", required=True)
    p.add_argument("--source", choices=["opus", "local", "demo"], required=True)
    p.add_argument("--local-dir")
    p.add_argument("--corpora", nargs="*")
    p.add_argument("--manifest")
    p.add_argument("--zip", nargs="*", default=[], help="CORPUS=PATH of each downloaded OPUS zip")
    p.add_argument("--heldout-fraction", type=float, default=0.2)
    p.add_argument("--min-tokens", type=int, default=4)
    p.add_argument("--max-length-ratio", type=float, default=3.0)
    p.add_argument("--out", required=True)
    p.add_argument("--stats", required=True)

    p = sub.add_parser("download-opus", help="download one OPUS Moses zip (resumable)")
    p.add_argument("--lang", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--manifest", required=True)
    p.add_argument("--base-url")
    p.add_argument("--retries", type=int, default=5)
    p.add_argument("--out", required=True)

    p = sub.add_parser("sample", help="sample the train/dev splits of one language")
    p.add_argument("--lang", required=True)
    p.add_argument("--clean", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--stats", required=True)
    p.add_argument("--max-pairs", type=int, required=True)
    p.add_argument("--dev-pairs", type=int, required=True)
    p.add_argument("--dev-fraction", type=float, required=True)
    p.add_argument("--seed", type=int, required=True)

    p = sub.add_parser("demo-testset", help="write the demo's held-out pairs in LASER layout")
    p.add_argument("--langs", nargs="+", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--heldout-fraction", type=float, required=True)
    p.add_argument("--max-pairs", type=int, required=True)

    p = sub.add_parser("words", help="spaCy word tokens of one corpus split")
    p.add_argument("--lang", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--out", required=True)

    p = sub.add_parser("fetch-model", help="copy or download a pretrained encoder")
    p.add_argument("--path", required=True, help="hub id or local directory")
    p.add_argument("--out", required=True)

    p = sub.add_parser("tokenizer", help="train (scratch) or copy (pretrained) a tokenizer")
    p.add_argument("--pretrained", help="pretrained model directory to take the tokenizer from")
    p.add_argument("--corpus", nargs="*", default=[], help="LANG=train.parquet to train on")
    p.add_argument("--vocab-size", type=int, default=32000)
    p.add_argument("--sentences", type=int, default=2_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", required=True)

    p = sub.add_parser("subwords", help="encode one corpus split with a tokenizer")
    p.add_argument("--corpus", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--out", required=True)

    p = sub.add_parser("align-shard", help="word-align one shard of a language")
    p.add_argument("--method", choices=["wspalign", "eflomal"], required=True)
    p.add_argument("--settings", required=True, help="JSON of the method's settings")
    p.add_argument("--corpus", required=True, help="the language's train.parquet")
    p.add_argument("--words", required=True, help="its word tokens")
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--shard-size", type=int, required=True)
    p.add_argument("--total", type=int, required=True, help="training pairs of the language")
    p.add_argument("--model", help="the WSPAlign checkpoint directory")
    p.add_argument("--out", required=True)
    p.add_argument("--stats", required=True)

    p = sub.add_parser("align-manifest", help="join a language's shards (_SUCCESS)")
    p.add_argument("--method", required=True)
    p.add_argument("--lang", required=True)
    p.add_argument("--settings", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("stats", nargs="+", help="the shards' stats JSON, in shard order")

    p = sub.add_parser("align-pharaoh", help="export a language's links as Pharaoh i-j lines")
    p.add_argument("--manifest", required=True)
    p.add_argument("--out", required=True)

    p = sub.add_parser("train", help="train one run at one seed")
    p.add_argument("--settings", required=True, help="JSON of the run's train settings")
    p.add_argument("--model", required=True, help="JSON of the run's model entry")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--pretrained")
    p.add_argument("--train", nargs="+", required=True, help="LANG=subwords/train.parquet")
    p.add_argument("--dev", nargs="+", required=True, help="LANG=subwords/dev.parquet")
    p.add_argument("--checkpoints", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", required=True)

    p = sub.add_parser("eval-tatoeba", help="Tatoeba retrieval accuracy of one model")
    p.add_argument("--model", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--langs", nargs="+", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--max-length", type=int, required=True)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", required=True)

    p = sub.add_parser("fetch-tatoeba", help="download the LASER Tatoeba files")
    p.add_argument("--url", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--langs", nargs="+", required=True)

    p = sub.add_parser("tables", help="gather evaluation results into tables")
    p.add_argument("--groups", nargs="+", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("results", nargs="+")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from xlsent.config import ConfigError
    from xlsent.download import DownloadError
    from xlsent.evaluate.tatoeba import TatoebaError

    try:
        _COMMANDS[args.command](args)
    except (CorpusError, ConfigError, DownloadError, TatoebaError, FileNotFoundError) as err:
        log.error("%s", err)
        sys.exit(2)


if __name__ == "__main__":
    main()
