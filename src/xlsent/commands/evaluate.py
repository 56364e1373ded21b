"""Evaluate stage: Tatoeba retrieval of an encoder, and word translation (BLI) of word vectors.

Every evaluation writes one run's results Parquet through `xlsent.tables.write_results`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from xlsent.commands import Subparsers, log, resolve_device
from xlsent.io import write_json


def register(sub: Subparsers) -> None:
    """Add eval-tatoeba, fetch-tatoeba, bli-dictionary and eval-bli."""
    _add_eval_tatoeba(sub)
    _add_fetch_tatoeba(sub)
    _add_bli_dictionary(sub)
    _add_eval_bli(sub)


def log_tatoeba_means(rows: list[dict]) -> None:
    """One line per language: its accuracy averaged over both directions."""
    for row in rows:
        if row["direction"] == "mean":
            log.info("%s %s %.1f", row["lang"], row["direction"], row["value"])


def _add_eval_tatoeba(sub: Subparsers) -> None:
    p = sub.add_parser("eval-tatoeba", help="Tatoeba retrieval accuracy of one model")
    p.add_argument("--model", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--langs", nargs="+", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--max-length", type=int, required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--device", required=True, help="auto (CUDA if present), cpu, cuda or cuda:N")
    p.add_argument("--threads", type=int, required=True, help="the job's CPU threads")
    p.add_argument("--out", required=True)
    p.set_defaults(handler=eval_tatoeba)


def eval_tatoeba(args: argparse.Namespace) -> None:
    import torch

    from xlsent.evaluate import tatoeba
    from xlsent.models.encoder import TextEncoder
    from xlsent.tables import write_results

    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    encode = TextEncoder.load(args.model, args.max_length, args.batch_size, device)
    rows = tatoeba.evaluate(encode, Path(args.dir), args.langs)
    write_results(rows, "tatoeba", args.run, args.seed, args.out)
    log_tatoeba_means(rows)


def _add_fetch_tatoeba(sub: Subparsers) -> None:
    p = sub.add_parser("fetch-tatoeba", help="download the LASER Tatoeba files")
    p.add_argument("--url", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--langs", nargs="+", required=True)
    p.set_defaults(handler=fetch_tatoeba)


def fetch_tatoeba(args: argparse.Namespace) -> None:
    from xlsent.evaluate import tatoeba

    tatoeba.fetch(args.url, Path(args.dir), args.langs)


def _add_bli_dictionary(sub: Subparsers) -> None:
    p = sub.add_parser("bli-dictionary", help="a MUSE word-pair file from a FreeDict dictionary")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--freedict", help="e.g. /usr/share/dictd/freedict-eng-deu.dict.dz")
    source.add_argument("--muse", help="a MUSE file or URL (copied, or reversed)")
    p.add_argument("--download-dir", help="where a --muse URL is downloaded to")
    p.add_argument("--index", help="its .index (default: beside it)")
    p.add_argument("--reverse", action="store_true", help="write target-source pairs")
    p.add_argument("--keep-case", action="store_true", help="do not lowercase")
    p.add_argument("--out", required=True)
    p.set_defaults(handler=bli_dictionary)


def bli_dictionary(args: argparse.Namespace) -> None:
    from xlsent.evaluate import bli

    if args.freedict:
        pairs = bli.freedict_pairs(args.freedict, args.index, lowercase=not args.keep_case)
    else:
        pairs = bli.load_dictionary(args.muse, args.download_dir)
    if args.reverse:
        pairs = [(target, source) for source, target in pairs]
    log.info("wrote %d word pairs to %s", bli.write_muse(pairs, args.out), args.out)


def _add_eval_bli(sub: Subparsers) -> None:
    p = sub.add_parser("eval-bli", help="word translation P@1/5/10 (NN and CSLS) of a model")
    p.add_argument("--model", required=True, help="a bisent2vec-train model directory")
    p.add_argument("--lang", required=True)
    p.add_argument("--direction", choices=["en2xx", "xx2en"], required=True)
    p.add_argument("--dictionary", required=True, help="MUSE file or URL, source words first")
    p.add_argument("--download-dir", help="where a dictionary URL is downloaded to")
    p.add_argument("--run", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--stats", required=True, help="JSON of the rows and the dictionary's coverage")
    p.set_defaults(handler=eval_bli)


def eval_bli(args: argparse.Namespace) -> None:
    from xlsent.bisent2vec.model import SentenceModel
    from xlsent.evaluate import bli
    from xlsent.tables import write_results

    model = SentenceModel.load(args.model)
    src, tgt = ("en", args.lang) if args.direction == "en2xx" else (args.lang, "en")
    pairs = bli.load_dictionary(args.dictionary, args.download_dir)
    src_words, src_vectors = model.word_vectors(src)
    tgt_words, tgt_vectors = model.word_vectors(tgt)
    rows = bli.evaluate(src_words, src_vectors, tgt_words, tgt_vectors, pairs)
    write_results(
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
