"""Evaluate stage: Tatoeba retrieval and bitext mining (BUCC) of an encoder, and word
translation (BLI) of word vectors.

Every evaluation writes one run's results Parquet through
`xlsent.evaluate.results.write_results`, except eval-mteb, which keeps MTEB's own result JSON
(`xlsent.evaluate.mteb`).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from xlsent.arguments import settings_object
from xlsent.commands import Subparsers, lang_paths, log, require
from xlsent.commands.encode import (
    add_encoder_arguments,
    add_tatoeba_text_argument,
    encoding_devices,
    loaded_encoder,
    parsed_encoding,
)
from xlsent.io import write_json


def register(sub: Subparsers) -> None:
    """Add eval-tatoeba, eval-retrieval, fetch-tatoeba, bli-dictionary, bli-split, eval-bli,
    fetch-bucc, mining-set, eval-bucc, eval-mteb and fetch-mteb."""
    _add_eval_tatoeba(sub)
    _add_eval_retrieval(sub)
    _add_fetch_tatoeba(sub)
    _add_bli_dictionary(sub)
    _add_bli_split(sub)
    _add_eval_bli(sub)
    _add_fetch_bucc(sub)
    _add_mining_set(sub)
    _add_eval_bucc(sub)
    _add_eval_mteb(sub)
    _add_fetch_mteb(sub)


def log_tatoeba_means(rows: list[dict]) -> None:
    """One line per language: its accuracy averaged over both directions."""
    for row in rows:
        if row["direction"] == "mean":
            log.info("%s %s %.1f", row["lang"], row["direction"], row["value"])


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The run and seed whose results an evaluation writes."""
    p.add_argument("--run", required=True)
    p.add_argument("--seed", type=int, required=True)


def _add_vectors_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--vectors", required=True, help="the run's sentence vectors of the source (xlsent encode)"
    )


def _vectors(args: argparse.Namespace):
    """The `--vectors` file as an encoder (`xlsent.evaluate.vectors.SentenceVectors`)."""
    from xlsent.evaluate.vectors import SentenceVectors

    return SentenceVectors.read(args.vectors)


def _add_eval_tatoeba(sub: Subparsers) -> None:
    p = sub.add_parser("eval-tatoeba", help="Tatoeba retrieval accuracy of one run")
    p.add_argument("--dir", required=True)
    p.add_argument("--langs", nargs="+", required=True)
    add_tatoeba_text_argument(p)
    _add_vectors_argument(p)
    _add_run_arguments(p)
    p.add_argument("--out", required=True)
    p.set_defaults(handler=eval_tatoeba)


def eval_tatoeba(args: argparse.Namespace) -> None:
    from xlsent.evaluate import tatoeba
    from xlsent.evaluate.results import vectors_devices, write_results

    encoder = _vectors(args)
    rows = tatoeba.evaluate(encoder, Path(args.dir), args.langs, args.tatoeba_text)
    devices = vectors_devices(encoder.metadata)
    write_results(rows, "tatoeba", args.run, args.seed, args.out, devices)
    log_tatoeba_means(rows)


def add_held_out_arguments(p: argparse.ArgumentParser) -> None:
    """Held-out pairs, per language, from the corpus stage or Tatoeba (the mining set's, and
    sentence retrieval's: `retrieval_pairs`)."""
    p.add_argument("--from", dest="source", choices=["corpus", "tatoeba"], required=True)
    p.add_argument(
        "--pairs",
        nargs="+",
        required=True,
        help="LANG=PATH: a corpus split (.parquet) or the Tatoeba directory, per language",
    )
    add_tatoeba_text_argument(p, "--from tatoeba")


def _require_tatoeba_text(args: argparse.Namespace) -> None:
    """Held-out pairs from the Tatoeba files are read as the Tatoeba evaluation reads them."""
    if args.source == "tatoeba":
        require(args, "with --from tatoeba", "tatoeba_text")


def retrieval_pairs(args: argparse.Namespace) -> dict[str, tuple[list[str], list[str]]]:
    """The (foreign, English) held-out sentences of each language of `--pairs`."""
    from xlsent.evaluate import retrieval

    _require_tatoeba_text(args)
    pairs = {
        lang: retrieval.heldout_pairs(args.source, path, lang, args.tatoeba_text)
        for lang, path in lang_paths(args.pairs).items()
    }
    for lang, (xx, _) in pairs.items():
        log.info("%s: %d held-out pairs", lang, len(xx))
    return pairs


def _add_eval_retrieval(sub: Subparsers) -> None:
    p = sub.add_parser(
        "eval-retrieval", help="P@1 of translations among held-out pairs, of one encoder"
    )
    add_held_out_arguments(p)
    _add_vectors_argument(p)
    _add_run_arguments(p)
    p.add_argument("--out", required=True)
    p.set_defaults(handler=eval_retrieval)


def eval_retrieval(args: argparse.Namespace) -> None:
    from xlsent.evaluate import retrieval
    from xlsent.evaluate.results import vectors_devices, write_results

    pairs = retrieval_pairs(args)
    encoder = _vectors(args)
    rows = retrieval.evaluate(pairs, lambda lang: encoder)
    devices = vectors_devices(encoder.metadata)
    write_results(rows, "retrieval", args.run, args.seed, args.out, devices)
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
    from xlsent import dictionaries

    if args.freedict:
        pairs = dictionaries.freedict_pairs(args.freedict, args.index, lowercase=not args.keep_case)
    else:
        pairs = dictionaries.load_dictionary(args.muse, args.download_dir)
    if args.reverse:
        pairs = [(target, source) for source, target in pairs]
    log.info("wrote %d word pairs to %s", dictionaries.write_muse(pairs, args.out), args.out)


def _add_bli_split(sub: Subparsers) -> None:
    p = sub.add_parser(
        "bli-split", help="a language's dictionaries split into a seed part and test parts"
    )
    p.add_argument(
        "--dictionaries",
        nargs="+",
        required=True,
        help="DIRECTION=FILE (en2xx, xx2en): every MUSE dictionary of the language",
    )
    p.add_argument("--settings", required=True, help="JSON of evaluate.bli's seed_share and seed")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("--seed-out", help="write the seed dictionary (en xx pairs) here")
    out.add_argument("--test", choices=["en2xx", "xx2en"], help="write this direction's test part")
    p.add_argument("--out", help="with --test: the test dictionary")
    p.add_argument("--stats", required=True, help="JSON of the split's counts")
    p.set_defaults(handler=bli_split)


def bli_split(args: argparse.Namespace) -> None:
    from xlsent import dictionaries

    if args.test:
        require(args, "with --test", "out")
    files = lang_paths(args.dictionaries)
    pairs = {direction: dictionaries.read_muse(path) for direction, path in files.items()}
    if args.test and args.test not in pairs:
        raise FileNotFoundError(f"--test {args.test}: no {args.test} dictionary in --dictionaries")
    settings = settings_object(
        dictionaries.SplitSettings, json.loads(args.settings), "evaluate.bli"
    )
    seed, tests = dictionaries.split_dictionary(pairs, settings.seed_share, settings.seed)
    stats = {
        "seed_share": settings.seed_share,
        "seed": settings.seed,
        "seed_pairs": len(seed),
        "seed_english_words": len({en for en, _ in seed}),
        **{
            direction: {
                "pairs": len(pairs[direction]),
                "source_words": len({src for src, _ in pairs[direction]}),
                "test_pairs": len(test),
                "test_source_words": len({src for src, _ in test}),
            }
            for direction, test in tests.items()
        },
    }
    if args.seed_out:
        dictionaries.write_muse(seed, args.seed_out)
        log.info("wrote %d seed pairs to %s", len(seed), args.seed_out)
    else:
        dictionaries.write_muse(tests[args.test], args.out)
        log.info("wrote %d %s test pairs to %s", len(tests[args.test]), args.test, args.out)
    write_json(args.stats, stats)
    log.info("split: %s", json.dumps(stats))


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
    from xlsent import dictionaries
    from xlsent.bisent2vec.model import SentenceModel
    from xlsent.evaluate import bli
    from xlsent.evaluate.results import WORD_VECTOR_DEVICES, write_results
    from xlsent.search import RETRIEVALS

    model = SentenceModel.load(args.model)
    src, tgt = ("en", args.lang) if args.direction == "en2xx" else (args.lang, "en")
    pairs = dictionaries.load_dictionary(args.dictionary, args.download_dir)
    src_words, src_vectors = model.word_vectors(src)
    tgt_words, tgt_vectors = model.word_vectors(tgt)
    _, coverage = bli.gold_translations(src_words, tgt_words, pairs)
    if coverage["queries"]:
        rows = bli.evaluate(src_words, src_vectors, tgt_words, tgt_vectors, pairs)
    else:
        # No test word survives the vocabulary filter (a language of a few dozen pairs): no
        # score, and 0 test words in the table, rather than a failed job that would stop the
        # table of every other language.
        log.warning(
            "%s %s: none of the %d test pairs has both words in the vocabularies (%d source, "
            "%d target words): no score",
            args.lang,
            args.direction,
            coverage["pairs"],
            len(src_words),
            len(tgt_words),
        )
        rows = [
            {"method": m, "k": k, "metric": f"p@{k}", "value": None, "n": 0}
            for m in RETRIEVALS
            for k in bli.KS
        ]
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
        WORD_VECTOR_DEVICES,
    )
    # `queries`: the test words kept after the vocabulary filter (both sides in vocabulary).
    write_json(args.stats, {"rows": rows, "coverage": coverage, "test_words": coverage["queries"]})
    for r in rows if coverage["queries"] else []:
        log.info(
            "%s %s %s %s: %.1f (%d words)",
            args.lang,
            args.direction,
            r["method"],
            r["metric"],
            r["value"],
            r["n"],
        )


def _add_fetch_bucc(sub: Subparsers) -> None:
    p = sub.add_parser("fetch-bucc", help="download and unpack the BUCC 2018 files")
    p.add_argument("--url", required=True)
    p.add_argument("--dir", required=True, help="where the unpacked files go")
    p.add_argument("--langs", nargs="+", required=True)
    p.add_argument("--splits", nargs="+", required=True, help="e.g. sample training")
    p.add_argument("--download-dir", required=True, help="where the tarballs are kept")
    p.set_defaults(handler=fetch_bucc)


def fetch_bucc(args: argparse.Namespace) -> None:
    from xlsent.evaluate import bucc

    written = bucc.fetch(args.url, args.dir, args.langs, args.splits, args.download_dir)
    log.info("unpacked %d BUCC files into %s", len(written), args.dir)


def _add_mining_set(sub: Subparsers) -> None:
    p = sub.add_parser("mining-set", help="a BUCC-layout mining set from held-out pairs")
    add_held_out_arguments(p)
    p.add_argument(
        "--settings",
        required=True,
        help="JSON of evaluate.bucc.heldout's distractors, threshold_share and seed",
    )
    p.add_argument("--out-dir", required=True)
    p.add_argument("--stats", required=True, help="JSON of the counts per language and split")
    p.set_defaults(handler=mining_set)


def mining_set(args: argparse.Namespace) -> None:
    from xlsent.evaluate import mining_set as builder
    from xlsent.evaluate.mining_sizes import MiningSetSettings
    from xlsent.evaluate.retrieval import source_pairs

    _require_tatoeba_text(args)
    settings = settings_object(
        MiningSetSettings, json.loads(args.settings), "evaluate.bucc.heldout"
    )
    stats = {}
    for lang, path in lang_paths(args.pairs).items():
        pairs = source_pairs(args.source, path, lang, args.tatoeba_text)
        splits, stats[lang] = builder.build(pairs, lang, settings)
        builder.write(splits, args.out_dir)
        gold = "/".join(str(counts["gold"]) for counts in stats[lang]["splits"].values())
        log.info("%s: mining set of %d pairs, %s gold (dev/test)", lang, len(pairs), gold)
    write_json(args.stats, stats)


def _add_eval_bucc(sub: Subparsers) -> None:
    p = sub.add_parser("eval-bucc", help="bitext mining P/R/F1 of one model (BUCC layout)")
    p.add_argument("--dir", required=True, help="the BUCC-layout directory")
    p.add_argument("--langs", nargs="+", required=True)
    p.add_argument("--threshold-split", required=True, help="whose gold chooses the threshold")
    p.add_argument("--test-split", required=True, help="where the threshold is applied")
    p.add_argument(
        "--pivot", required=True, help="the language whose threshold every one gets too, or none"
    )
    p.add_argument("--settings", required=True, help="JSON of evaluate.bucc.mining")
    _add_vectors_argument(p)
    _add_run_arguments(p)
    p.add_argument("--threads", type=int, required=True, help="the job's threads (faiss)")
    p.add_argument("--out", required=True)
    p.set_defaults(handler=eval_bucc)


def eval_bucc(args: argparse.Namespace) -> None:
    import faiss

    from xlsent.evaluate import bucc
    from xlsent.evaluate.mining import MiningSettings
    from xlsent.evaluate.results import vectors_devices, write_results

    faiss.omp_set_num_threads(args.threads)
    encoder = _vectors(args)
    rows = bucc.evaluate(
        encoder,
        Path(args.dir),
        args.langs,
        args.threshold_split,
        args.test_split,
        settings_object(MiningSettings, json.loads(args.settings), "evaluate.bucc.mining"),
        pivot=None if args.pivot.lower() == "none" else args.pivot,
    )
    write_results(rows, "bucc", args.run, args.seed, args.out, vectors_devices(encoder.metadata))


def hf_offline_environment(cache_dir: str) -> dict[str, str]:
    """The environment in which the Hugging Face libraries read `cache_dir` (filled by
    fetch-mteb) and nothing from the network. They read it once, when imported."""
    return {"HF_HOME": cache_dir, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def _add_eval_mteb(sub: Subparsers) -> None:
    p = sub.add_parser("eval-mteb", help="MTEB tasks of one model: MTEB's result JSON per task")
    p.add_argument("--tasks", nargs="+", required=True, help="MTEB task names, or LocalTatoeba")
    p.add_argument(
        "--langs", nargs="+", required=True, help="the subsets of these and English are evaluated"
    )
    p.add_argument("--tatoeba-dir", help="LASER's Tatoeba files, for LocalTatoeba")
    p.add_argument("--cache-dir", help="a Hugging Face cache filled by fetch-mteb: read offline")
    add_encoder_arguments(p)
    _add_run_arguments(p)
    p.add_argument("--out", required=True, help="the directory of MTEB's result JSON")
    p.set_defaults(handler=eval_mteb, pandas=True)  # MTEB's `datasets` needs pandas (cli.py)


def eval_mteb(args: argparse.Namespace) -> None:
    if args.cache_dir:  # before anything imports the Hugging Face libraries
        os.environ.update(hf_offline_environment(args.cache_dir))
    from xlsent.evaluate import mteb
    from xlsent.evaluate.results import vectors_devices

    encoding = parsed_encoding(args)
    encode = loaded_encoder(args, encoding)
    encoder = mteb.XlsentEncoder(
        encode,
        args.run,
        f"seed{args.seed}",
        needs_language=getattr(encode, "languages", None) is not None,
        max_tokens=encoding.max_length,
    )
    tasks = mteb.tasks(args.tasks, args.langs, args.tatoeba_dir)
    devices = vectors_devices(encoding_devices(args, encoding))
    for result in mteb.run(encoder, tasks, args.out, encoding.batch_size, devices):
        log.info("%s: main score %.4f", result.task_name, result.get_score())


def _add_fetch_mteb(sub: Subparsers) -> None:
    p = sub.add_parser(
        "fetch-mteb", help="download MTEB tasks' data into a cache for offline eval-mteb"
    )
    p.add_argument("--tasks", nargs="+", required=True)
    p.add_argument("--langs", nargs="+", required=True)
    p.add_argument("--cache-dir", required=True, help="becomes evaluate.mteb.cache_dir")
    p.set_defaults(handler=fetch_mteb, pandas=True)


def fetch_mteb(args: argparse.Namespace) -> None:
    os.environ["HF_HOME"] = args.cache_dir  # before the Hugging Face libraries are imported
    from xlsent.evaluate import mteb

    mteb.fetch(args.tasks, args.langs)
    log.info("MTEB data of %s in %s", " ".join(args.tasks), args.cache_dir)
