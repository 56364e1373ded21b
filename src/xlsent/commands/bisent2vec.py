"""Bi-Sent2vec stage: build the C++ trainer, train an en-xx word-vector model, evaluate it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from xlsent.commands import Subparsers, lang_paths, log, require
from xlsent.commands.encode import add_tatoeba_text_argument
from xlsent.commands.evaluate import add_held_out_arguments, log_tatoeba_means, retrieval_pairs
from xlsent.io import write_json
from xlsent.methods import METHODS, WORD_VECTOR_METHODS


def register(sub: Subparsers) -> None:
    """Add bisent2vec-build, bisent2vec-train, bisent2vec-eval-tatoeba and
    bisent2vec-eval-retrieval."""
    _add_bisent2vec_build(sub)
    _add_bisent2vec_train(sub)
    _add_bisent2vec_eval_tatoeba(sub)
    _add_bisent2vec_eval_retrieval(sub)


def _add_bisent2vec_build(sub: Subparsers) -> None:
    p = sub.add_parser("bisent2vec-build", help="compile the Bi-Sent2vec trainer (CMake)")
    p.add_argument("--build-dir", required=True)
    p.add_argument("--source", required=True, help="the csrc/bisent2vec directory")
    p.add_argument("--jobs", type=int, required=True, help="parallel compile jobs")
    p.add_argument("--test", action="store_true", help="also run the C++ unit tests")
    p.set_defaults(handler=bisent2vec_build)


def bisent2vec_build(args: argparse.Namespace) -> None:
    from xlsent.bisent2vec import build

    binary = build.build(args.build_dir, args.source, jobs=args.jobs)
    if args.test:
        output = build.run_ctest(args.build_dir)
        log.info("C++ unit tests: %s", next(x for x in output.splitlines() if "tests passed" in x))
    log.info("trainer binary: %s", binary)


def _add_bisent2vec_train(sub: Subparsers) -> None:
    p = sub.add_parser("bisent2vec-train", help="train one en-xx Bi-Sent2vec (or CBOW) model")
    p.add_argument("--lang", required=True)
    p.add_argument("--words", nargs="+", required=True, help="the language's words Parquet files")
    p.add_argument("--method", choices=WORD_VECTOR_METHODS, required=True)
    p.add_argument("--binary", help="the bisent2vec binary (bisent2vec-build)")
    p.add_argument(
        "--settings", required=True, help="JSON of Bi-Sent2vec settings (dim, lr, word_ngrams, ...)"
    )
    p.add_argument("--mapped-settings", help="with --method mapped: JSON of the mapping's settings")
    p.add_argument(
        "--seed-pairs",
        help="with --method mapped: a MUSE file of (en xx) seed pairs; without it, a lexicon "
        "induced from the training pairs",
    )
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--resume", help="a model directory to continue training from")
    p.add_argument("--out", required=True, help="the model directory")
    p.add_argument("--stats", help="a copy of the model's stats.json")
    p.set_defaults(handler=bisent2vec_train)


def bisent2vec_train(args: argparse.Namespace) -> None:
    from xlsent.bisent2vec import baseline, data, mapped, trainer

    settings = trainer.Bisent2vecSettings.from_dict(json.loads(args.settings))
    method = METHODS[args.method]
    if method.binary:
        require(args, f"with --method {method.name} (bisent2vec-build)", "binary")
    out = Path(args.out)
    pairs = out.with_name(f".{out.name}.pairs.txt")  # the trainer's input, beside the model
    try:
        counts = data.write_pairs(args.words, pairs, lowercase=settings.lowercase)
        if "mapped" in method.blocks:
            stats = mapped.train_mapped(
                pairs,
                out,
                args.lang,
                settings,
                mapped.MappedSettings.from_dict(json.loads(args.mapped_settings or "{}")),
                seed_dictionary=args.seed_pairs,
                threads=args.threads,
            )
        elif not method.binary:
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


def _add_bisent2vec_eval_tatoeba(sub: Subparsers) -> None:
    p = sub.add_parser("bisent2vec-eval-tatoeba", help="Tatoeba accuracy of a bag-of-words model")
    model = p.add_mutually_exclusive_group(required=True)
    model.add_argument("--model", help="a bisent2vec-train model directory")
    model.add_argument("--models", nargs="+", help="LANG=DIR: a model per language pair")
    p.add_argument("--dir", required=True)
    p.add_argument("--langs", nargs="+", required=True)
    add_tatoeba_text_argument(p)
    p.add_argument("--idf-words", nargs="*", help="held-out words Parquet files: tf-idf weights")
    p.add_argument("--idf", nargs="*", help="with --models: LANG=PATH, held-out words for idf")
    p.add_argument("--run", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(handler=bisent2vec_eval_tatoeba)


def bisent2vec_eval_tatoeba(args: argparse.Namespace) -> None:
    from xlsent.bisent2vec.model import SentenceModel, pair_encoder
    from xlsent.evaluate import tatoeba
    from xlsent.evaluate.results import WORD_VECTOR_DEVICES, write_results

    if args.model:
        model = SentenceModel.load(args.model)
        foreign = next(lang for lang in model.langs if lang != "en")
        idf = model.pair_idf(args.idf_words, foreign) if args.idf_words else None
        rows = tatoeba.evaluate(
            model.text_encoder(idf), Path(args.dir), args.langs, args.tatoeba_text
        )
    else:
        # One model per language pair (the workflow's layout): each language evaluated with
        # its own model, its idf from its own held-out words.
        models, idf_words = lang_paths(args.models), lang_paths(args.idf or [])
        missing = [lang for lang in args.langs if lang not in models]
        if missing:
            raise FileNotFoundError(f"no model given for {', '.join(missing)} (--models LANG=DIR)")
        rows = []
        for lang in args.langs:
            encode = pair_encoder(models[lang], lang, idf_words.get(lang))
            rows += tatoeba.evaluate(encode, Path(args.dir), [lang], args.tatoeba_text)
    write_results(rows, "tatoeba", args.run, args.seed, args.out, WORD_VECTOR_DEVICES)
    log_tatoeba_means(rows)


def _add_bisent2vec_eval_retrieval(sub: Subparsers) -> None:
    p = sub.add_parser(
        "bisent2vec-eval-retrieval",
        help="P@1 of translations among held-out pairs, of word vectors (tf-idf weighted)",
    )
    p.add_argument("--models", nargs="+", required=True, help="LANG=DIR: a model per pair")
    p.add_argument(
        "--idf", nargs="+", required=True, help="LANG=PATH: the pair's words the idf counts"
    )
    add_held_out_arguments(p)
    p.add_argument("--run", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(handler=bisent2vec_eval_retrieval)


def bisent2vec_eval_retrieval(args: argparse.Namespace) -> None:
    """Each language retrieved with its own pair model's tf-idf-weighted sentence vectors
    (Sabet et al. 2019, §4.3), the idf counted on that pair's words (`--idf`)."""
    from xlsent.bisent2vec.model import pair_encoder
    from xlsent.evaluate import retrieval
    from xlsent.evaluate.results import WORD_VECTOR_DEVICES, write_results

    models, idf_words = lang_paths(args.models), lang_paths(args.idf)
    pairs = retrieval_pairs(args)
    missing = [lang for lang in pairs if lang not in models or lang not in idf_words]
    if missing:
        raise FileNotFoundError(
            f"no model or idf words given for {', '.join(missing)} (--models, --idf LANG=PATH)"
        )
    rows = retrieval.evaluate(pairs, lambda lang: pair_encoder(models[lang], lang, idf_words[lang]))
    write_results(rows, "retrieval", args.run, args.seed, args.out, WORD_VECTOR_DEVICES)
    log_tatoeba_means(rows)
