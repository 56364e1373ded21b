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
import os
import sys
from collections.abc import Callable
from pathlib import Path

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

    cfg = SampleConfig(
        args.max_pairs,
        args.dev_pairs,
        args.dev_fraction,
        args.seed,
        args.min_train_pairs,
        args.min_dev_pairs,
        args.min_pairs_action,
    )
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


@command
def word_spans(args: argparse.Namespace) -> None:
    from xlsent.align.shards import iter_shards
    from xlsent.tokenize import word_spans as spans

    stats = spans(args.corpus, iter_shards(Path(args.manifest)), args.tokenizer, args.out)
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
    try:
        best = trainer.run(Path(args.checkpoints) / "train_log.jsonl")
        if trainer.world.main:  # under torchrun, one process writes the model
            log.info("best dev P@1 %.2f at step %s", best["dev_p1"], best["step"])
            trainer.export(Path(args.out), {"settings": settings, "model": model})
    finally:
        distributed.shutdown(trainer.world)


# -- evaluate ------------------------------------------------------------------------------------
def _device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


@command
def eval_tatoeba(args: argparse.Namespace) -> None:
    import torch

    from xlsent.evaluate import tatoeba
    from xlsent.models.encoder import TextEncoder

    torch.set_num_threads(args.threads)
    encode = TextEncoder.load(args.model, args.max_length, args.batch_size, _device(args.device))
    rows = tatoeba.evaluate(encode, Path(args.dir), args.langs)
    _write_results(rows, "tatoeba", args.run, args.seed, args.out)
    for row in rows:
        if row["direction"] == "mean":
            log.info("%s %s %.1f", row["lang"], row["direction"], row["value"])


def _write_results(rows: list[dict], task: str, run: str, seed: int, out: str) -> None:
    """Evaluation rows as the results Parquet every task writes (xlsent.tables.COLUMNS)."""
    import polars as pl

    from xlsent.io import write_parquet

    frame = pl.DataFrame(rows).select(
        task=pl.lit(task),
        run=pl.lit(run),
        seed=pl.lit(seed, dtype=pl.Int64),
        lang=pl.col("lang"),
        direction=pl.col("direction"),
        metric=pl.col("metric"),
        value=pl.col("value").cast(pl.Float64),
        n=pl.col("n").cast(pl.Int64),
    )
    write_parquet(out, frame.to_arrow())


@command
def fetch_tatoeba(args: argparse.Namespace) -> None:
    from xlsent.evaluate import tatoeba

    tatoeba.fetch(args.url, Path(args.dir), args.langs)


@command
def tables(args: argparse.Namespace) -> None:
    from xlsent import tables as result_tables

    scarce = result_tables.scarce_languages(args.corpus_stats)
    summary, per_language = result_tables.tatoeba_tables(args.results, args.groups, scarce)
    for path in result_tables.write_tables(summary, per_language, Path(args.out), scarce=scarce):
        log.info("wrote %s", path)


@command
def plots(args: argparse.Namespace) -> None:
    from xlsent import plots as figures

    figures.group_bars(args.summary, args.groups, args.bars)
    figures.dev_curves(_lang_paths(args.logs), args.curves)
    log.info("wrote %s and %s", args.bars, args.curves)


@command
def tables_ablation(args: argparse.Namespace) -> None:
    from xlsent import tables as result_tables

    table = result_tables.ablation_table(args.results, args.runs, args.groups)
    scarce = {
        lang: text
        for lang, text in result_tables.scarce_languages(args.corpus_stats).items()
        if lang in table.columns
    }
    result_tables.write_table(
        table,
        Path(args.out),
        caption="Ablation (WACSE Table 10): Tatoeba accuracy (%), mean of both directions, "
        f"averaged over {', '.join(args.groups)} and per language; seeds averaged.",
        notes=result_tables.scarce_note(scarce),
    )
    log.info("wrote %s", args.out)


@command
def tables_bli(args: argparse.Namespace) -> None:
    from xlsent import tables as result_tables

    table, queries = result_tables.bli_table(args.results)
    result_tables.write_bli_table(table, queries, Path(args.out))
    log.info("wrote %s", args.out)


# -- bisent2vec ----------------------------------------------------------------------------------
def _bisent2vec_settings(text: str | None):
    from xlsent.bisent2vec.trainer import Bisent2vecSettings

    return Bisent2vecSettings.from_dict(json.loads(text) if text else {})


@command
def bisent2vec_build(args: argparse.Namespace) -> None:
    from xlsent.bisent2vec import build

    binary = build.build(args.build_dir, args.source or build.SOURCE_DIR, jobs=args.jobs)
    if args.test:
        output = build.run_ctest(args.build_dir)
        log.info("C++ unit tests: %s", next(x for x in output.splitlines() if "tests passed" in x))
    log.info("trainer binary: %s", binary)


@command
def bisent2vec_train(args: argparse.Namespace) -> None:
    from xlsent.bisent2vec import Bisent2vecError, baseline, data, trainer

    settings = _bisent2vec_settings(args.settings)
    if args.method == "bisent2vec" and not args.binary:
        raise Bisent2vecError("--binary is required with --method bisent2vec (bisent2vec-build)")
    out = Path(args.out)
    pairs = out.with_name(f".{out.name}.pairs.txt")  # the trainer's input, beside the model
    try:
        counts = data.write_pairs(args.words, pairs, lowercase=settings.lowercase)
        if args.method == "fasttext-cbow":
            stats = baseline.train_cbow(pairs, out, args.lang, settings, threads=args.threads)
        else:
            stats = trainer.train(
                args.binary,
                pairs,
                out,
                args.lang,
                settings,
                threads=args.threads,
                resume=args.resume,
                extra_stats={"data": counts},
            )
    finally:
        pairs.unlink(missing_ok=True)
    if args.stats:
        write_json(args.stats, stats)


@command
def bisent2vec_eval_tatoeba(args: argparse.Namespace) -> None:
    import pyarrow.parquet as pq

    from xlsent.bisent2vec.model import SentenceModel
    from xlsent.evaluate import tatoeba

    def idf_of(model: SentenceModel, foreign: str, paths: list) -> dict | None:
        if not paths:
            return None
        sides: dict[str, list[list[str]]] = {"en": [], foreign: []}
        for path in paths:
            table = pq.read_table(path, columns=["en_words", "xx_words"])
            sides["en"] += table.column("en_words").to_pylist()
            sides[foreign] += table.column("xx_words").to_pylist()
        return {lang: model.idf(sentences, lang) for lang, sentences in sides.items()}

    if bool(args.model) == bool(args.models):
        raise SystemExit("give either --model DIR or --models LANG=DIR ...")
    if args.model:
        model = SentenceModel.load(args.model)
        foreign = [lang for lang in model.langs if lang != "en"]
        idf = idf_of(model, foreign[0], args.idf_words)
        rows = tatoeba.evaluate(model.text_encoder(idf), Path(args.dir), args.langs or foreign)
    else:
        # One model per language pair (the workflow's layout): each language evaluated with
        # its own model, its idf from its own held-out words.
        models, idf_words = _lang_paths(args.models), _lang_paths(args.idf or [])
        langs = args.langs or list(models)
        missing = [lang for lang in langs if lang not in models]
        if missing:
            raise FileNotFoundError(f"no model given for {', '.join(missing)} (--models LANG=DIR)")
        rows = []
        for lang in langs:
            model = SentenceModel.load(models[lang])
            idf = idf_of(model, lang, [idf_words[lang]] if lang in idf_words else [])
            rows += tatoeba.evaluate(model.text_encoder(idf), Path(args.dir), [lang])
    _write_results(rows, "tatoeba", args.run, args.seed, args.out)
    for row in rows:
        if row["direction"] == "mean":
            log.info("%s %s %.1f", row["lang"], row["direction"], row["value"])


@command
def bli_dictionary(args: argparse.Namespace) -> None:
    from xlsent.evaluate import bli

    if args.freedict:
        pairs = bli.freedict_pairs(args.freedict, args.index, lowercase=not args.keep_case)
    else:
        pairs = bli.load_dictionary(args.muse, args.download_dir)
    if args.reverse:
        pairs = [(target, source) for source, target in pairs]
    log.info("wrote %d word pairs to %s", bli.write_muse(pairs, args.out), args.out)


@command
def eval_bli(args: argparse.Namespace) -> None:
    from xlsent.bisent2vec.model import SentenceModel
    from xlsent.evaluate import bli

    model = SentenceModel.load(args.model)
    src, tgt = ("en", args.lang) if args.direction == "en2xx" else (args.lang, "en")
    pairs = bli.load_dictionary(args.dictionary, args.download_dir)
    src_words, src_vectors = model.word_vectors(src)
    tgt_words, tgt_vectors = model.word_vectors(tgt)
    rows = bli.evaluate(src_words, src_vectors, tgt_words, tgt_vectors, pairs)
    _write_results(
        [
            {
                **r,
                "lang": args.lang,
                "direction": args.direction,
                "metric": f"{r['metric']}_{r['method']}",
            }
            for r in rows
        ],
        "bli",
        args.run,
        args.seed,
        args.out,
    )
    if args.stats:
        _, coverage = bli.gold_translations(src_words, tgt_words, pairs)
        write_json(args.stats, {"rows": rows, "coverage": coverage})
    for r in rows:
        log.info(
            "%s %s %s %s: %.1f (%d words)",
            args.lang,
            args.direction,
            r["method"],
            r["metric"],
            r["value"],
            r["n"],
        )


# -- users ---------------------------------------------------------------------------------------
@command
def status(args: argparse.Namespace) -> None:
    from xlsent.status import report

    print(report(args.snakemake_args))


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
    p.add_argument("--min-train-pairs", type=int, required=True)
    p.add_argument("--min-dev-pairs", type=int, required=True)
    p.add_argument("--min-pairs-action", choices=["error", "warn"], required=True)

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

    p = sub.add_parser(
        "word-spans", help="subword span of every word and the links of a language's pairs"
    )
    p.add_argument("--corpus", required=True, help="the language's train.parquet")
    p.add_argument("--manifest", required=True, help="its alignment manifest (_SUCCESS)")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--stats", required=True)

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
    p.add_argument(
        "--train",
        nargs="+",
        required=True,
        help="LANG=subwords/train.parquet (wacse: LANG=the word-span file)",
    )
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
    p.add_argument(
        "--corpus-stats", nargs="*", default=[], help="sample_stats.json: marks scarce languages"
    )
    p.add_argument("--out", required=True)
    p.add_argument("results", nargs="+")

    p = sub.add_parser("plots", help="figures of the Tatoeba table and the training records")
    p.add_argument("--summary", required=True, help="results/tables/tatoeba.csv")
    p.add_argument("--groups", nargs="+", required=True)
    p.add_argument("--logs", nargs="*", default=[], help="LABEL=train_log.jsonl")
    p.add_argument("--bars", required=True)
    p.add_argument("--curves", required=True)

    p = sub.add_parser("tables-ablation", help="the ablation table of chosen runs")
    p.add_argument("--runs", nargs="+", required=True)
    p.add_argument("--groups", nargs="+", required=True)
    p.add_argument(
        "--corpus-stats", nargs="*", default=[], help="sample_stats.json: marks scarce languages"
    )
    p.add_argument("--out", required=True)
    p.add_argument("results", nargs="+")
    p = sub.add_parser("tables-bli", help="the word translation table of the BLI results")
    p.add_argument("--out", required=True)
    p.add_argument("results", nargs="+")

    # -- bisent2vec
    p = sub.add_parser("bisent2vec-build", help="compile the Bi-Sent2vec trainer (CMake)")
    p.add_argument("--build-dir", required=True)
    p.add_argument("--source", help="the csrc/bisent2vec directory (default: the checkout's)")
    p.add_argument("--jobs", type=int)
    p.add_argument("--test", action="store_true", help="also run the C++ unit tests")

    p = sub.add_parser("bisent2vec-train", help="train one en-xx Bi-Sent2vec (or CBOW) model")
    p.add_argument("--lang", required=True)
    p.add_argument("--words", nargs="+", required=True, help="the language's words Parquet files")
    p.add_argument("--method", choices=["bisent2vec", "fasttext-cbow"], default="bisent2vec")
    p.add_argument("--binary", help="the bisent2vec binary (bisent2vec-build)")
    p.add_argument("--settings", help="JSON of Bi-Sent2vec settings (dim, lr, word_ngrams, ...)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--resume", help="a model directory to continue training from")
    p.add_argument("--out", required=True, help="the model directory")
    p.add_argument("--stats", help="a copy of the model's stats.json")

    p = sub.add_parser("bisent2vec-eval-tatoeba", help="Tatoeba accuracy of a bag-of-words model")
    p.add_argument("--model", help="a bisent2vec-train model directory")
    p.add_argument("--models", nargs="+", help="LANG=DIR: a model per language pair")
    p.add_argument("--dir", required=True)
    p.add_argument("--langs", nargs="*", help="default: the model's foreign language(s)")
    p.add_argument("--idf-words", nargs="*", help="held-out words Parquet files: tf-idf weights")
    p.add_argument("--idf", nargs="*", help="with --models: LANG=PATH, held-out words for idf")
    p.add_argument("--run", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)

    p = sub.add_parser("bli-dictionary", help="a MUSE word-pair file from a FreeDict dictionary")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--freedict", help="e.g. /usr/share/dictd/freedict-eng-deu.dict.dz")
    source.add_argument("--muse", help="a MUSE file or URL (copied, or reversed)")
    p.add_argument("--download-dir", help="where a --muse URL is downloaded to")
    p.add_argument("--index", help="its .index (default: beside it)")
    p.add_argument("--reverse", action="store_true", help="write target-source pairs")
    p.add_argument("--keep-case", action="store_true", help="do not lowercase")
    p.add_argument("--out", required=True)

    p = sub.add_parser("eval-bli", help="word translation P@1/5/10 (NN and CSLS) of a model")
    p.add_argument("--model", required=True, help="a bisent2vec-train model directory")
    p.add_argument("--lang", required=True)
    p.add_argument("--direction", choices=["en2xx", "xx2en"], default="en2xx")
    p.add_argument("--dictionary", required=True, help="MUSE file or URL, source words first")
    p.add_argument("--download-dir", help="where a dictionary URL is downloaded to")
    p.add_argument("--run", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--stats", help="JSON of the rows and the dictionary's coverage")

    p = sub.add_parser(
        "status",
        help="what the next run redoes and why: `xlsent status [SNAKEMAKE ARGS]`, e.g. "
        "`xlsent status --configfile resources/demo/config.yaml`",
    )
    # Its arguments are Snakemake's, passed through as they are (main() collects them).

    return parser


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "status":
        args.snakemake_args = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from xlsent.errors import XlsentError
    from xlsent.io import describe_os_error

    try:
        _COMMANDS[args.command](args)
    except (XlsentError, FileNotFoundError) as err:
        log.error("%s", err)
        sys.exit(2)
    except OSError as err:
        # Permissions or a full disk on a file no reader or writer turned into an error of its
        # own: still one line, naming the file (Python's OSError carries it) and the fix.
        fix = describe_os_error(err, err.filename) if isinstance(err.filename, str) else None
        if fix is None:
            raise
        log.error("%s: %s", err.filename, fix)
        sys.exit(2)


if __name__ == "__main__":
    main()
