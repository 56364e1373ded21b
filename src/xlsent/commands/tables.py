"""Tables stage: every run's results gathered into the papers' tables and figures."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from xlsent import layout
from xlsent.commands import Subparsers, UsageError, lang_paths, log
from xlsent.commands.encode import add_tatoeba_text_argument


def register(sub: Subparsers) -> None:
    """Add tables, tables-retrieval, tables-ablation, tables-compare, tables-transfer,
    tables-bli, tables-bucc, tables-mteb, tables-dev, plots, figure-aligned-words,
    figure-tatoeba-tokens and tables-cost."""
    _add_tables(sub)
    _add_tables_retrieval(sub)
    _add_tables_ablation(sub)
    _add_tables_compare(sub)
    _add_tables_transfer(sub)
    _add_tables_bli(sub)
    _add_tables_bucc(sub)
    _add_tables_mteb(sub)
    _add_tables_dev(sub)
    _add_plots(sub)
    _add_figure_aligned_words(sub)
    _add_figure_tatoeba_tokens(sub)
    _add_tables_cost(sub)


# A table job's groups carry their languages when the config defines them.
GROUPS_HELP = "language groups: a built-in group's name, or NAME=CODE,CODE,... for another"


def _groups(items: list[str]) -> dict[str, tuple[str, ...]]:
    from xlsent import languages

    try:
        return languages.parse_group_arguments(items)
    except languages.UnknownLanguageError as err:
        raise UsageError(f"--groups: {err}") from None


def _table_parser(
    sub: Subparsers,
    name: str,
    help_text: str,
    handler: Callable[[argparse.Namespace], None],
    groups: str | None = None,
    corpus_stats: bool = False,
) -> argparse.ArgumentParser:
    """A table command's parser: the result files (positional) and `--out`, with `groups`
    the nargs of `--groups` where the table has groups and `--corpus-stats` where it marks
    scarce languages; the caller adds the table's own flags."""
    p = sub.add_parser(name, help=help_text)
    if groups is not None:
        p.add_argument("--groups", nargs=groups, required=True, help=GROUPS_HELP)
    if corpus_stats:
        p.add_argument(
            "--corpus-stats",
            nargs="*",
            required=True,
            help="sample_stats.json: marks scarce languages",
        )
    p.add_argument("--out", required=True)
    p.add_argument("results", nargs="+")
    p.set_defaults(handler=handler)
    return p


def _add_tables(sub: Subparsers) -> None:
    p = _table_parser(
        sub, "tables", "gather evaluation results into tables", tables, "+", corpus_stats=True
    )
    p.add_argument(
        "--language-directions",
        nargs="+",
        choices=["mean", "xx2en", "en2xx"],
        required=True,
        help="the per-language table's directions",
    )


def tables(args: argparse.Namespace) -> None:
    from xlsent.tables import tatoeba, write

    groups = _groups(args.groups)
    scarce = write.scarce_languages(args.corpus_stats)
    summary, per_language = tatoeba.tatoeba_tables(
        args.results, groups, scarce, args.language_directions
    )
    written = tatoeba.write_tables(summary, per_language, Path(args.out), groups, scarce=scarce)
    for path in written:
        log.info("wrote %s", path)


def _add_tables_retrieval(sub: Subparsers) -> None:
    _table_parser(
        sub,
        "tables-retrieval",
        "the sentence retrieval table of held-out pairs (every run)",
        tables_retrieval,
        "*",
        corpus_stats=True,
    )


def tables_retrieval(args: argparse.Namespace) -> None:
    from xlsent.tables import retrieval, write

    groups = _groups(args.groups)
    scarce = write.scarce_languages(args.corpus_stats)
    table, pairs = retrieval.retrieval_table(args.results, groups, scarce)
    retrieval.write_retrieval_table(table, pairs, Path(args.out), groups, scarce=scarce)
    log.info("wrote %s", args.out)


def _add_tables_ablation(sub: Subparsers) -> None:
    p = _table_parser(
        sub,
        "tables-ablation",
        "the ablation table of chosen runs",
        tables_ablation,
        "+",
        corpus_stats=True,
    )
    p.add_argument("--runs", nargs="+", required=True)


def tables_ablation(args: argparse.Namespace) -> None:
    from xlsent.tables import tatoeba, write
    from xlsent.tables.devices import devices_notes

    groups = _groups(args.groups)
    table = tatoeba.ablation_table(args.results, args.runs, groups)
    scarce = {
        lang: text
        for lang, text in write.scarce_languages(args.corpus_stats).items()
        if lang in table.columns
    }
    write.write_table(
        table,
        Path(args.out),
        caption="Ablation (WACSE Table 10): Tatoeba accuracy (%), mean of both directions, "
        f"averaged over {', '.join(groups)} and per language; seeds averaged.",
        notes=write.scarce_note(scarce) + devices_notes(table),
    )
    log.info("wrote %s", args.out)


def _add_tables_compare(sub: Subparsers) -> None:
    p = sub.add_parser(
        "tables-compare",
        help="two runs against each other per group and language: the difference, each run's "
        "seed range, the languages above, below and level",
    )
    p.add_argument("--pairs", nargs="+", required=True, help="A:B, each pair of runs compared")
    p.add_argument("--groups", nargs="+", required=True, help=GROUPS_HELP)
    p.add_argument("--out", required=True)
    p.add_argument(
        "--results",
        nargs="*",
        required=True,
        help="the runs' results/eval/tatoeba/... and results/eval/bucc/... files: a run's "
        "seeds are the files given",
    )
    p.add_argument(
        "--models",
        nargs="*",
        required=True,
        help="RUN/seedN=results/models/RUN/seedN: the dev P@1 of each kept checkpoint, "
        "compared as a task of its own (none: no dev rows)",
    )
    p.set_defaults(handler=tables_compare)


def tables_compare(args: argparse.Namespace) -> None:
    from xlsent.tables import compare

    pairs = []
    for item in args.pairs:
        a, sep, b = item.partition(":")
        if not (sep and a and b):
            raise UsageError(f"--pairs: expected RUN:RUN, got {item!r}")
        pairs.append((a, b))
    if not (args.results or args.models):
        raise UsageError("tables-compare: give --results, --models or both")
    table = compare.compare_table(
        args.results, pairs, _groups(args.groups), lang_paths(args.models)
    )
    compare.write_compare_table(table, Path(args.out))
    log.info("wrote %s", args.out)


def _add_tables_transfer(sub: Subparsers) -> None:
    p = _table_parser(
        sub,
        "tables-transfer",
        "the dual-pivot transfer table: pivot and other languages",
        tables_transfer,
        "*",
    )
    p.add_argument("--pivots", nargs="+", required=True, help="RUN=LANG: each run's pivot")
    p.add_argument("--trained", nargs="+", required=True, help="the languages trained on")


def tables_transfer(args: argparse.Namespace) -> None:
    from xlsent.tables import transfer

    pivots = {run: str(lang) for run, lang in lang_paths(args.pivots).items()}
    table = transfer.transfer_table(args.results, pivots, args.trained, _groups(args.groups))
    transfer.write_transfer_table(table, Path(args.out))
    log.info("wrote %s", args.out)


def _add_tables_bli(sub: Subparsers) -> None:
    _table_parser(sub, "tables-bli", "the word translation table of the BLI results", tables_bli)


def tables_bli(args: argparse.Namespace) -> None:
    from xlsent.tables import bli

    table, queries = bli.bli_table(args.results)
    bli.write_bli_table(table, queries, Path(args.out))
    log.info("wrote %s", args.out)


def _add_tables_bucc(sub: Subparsers) -> None:
    p = sub.add_parser("tables-bucc", help="the bitext mining table of the BUCC results")
    p.add_argument("--out", required=True)
    p.add_argument("--results", nargs="+", required=True, help="results/eval/bucc/... files")
    p.set_defaults(handler=tables_bucc)


def tables_bucc(args: argparse.Namespace) -> None:
    from xlsent.tables import bucc

    bucc.write_bucc_table(
        bucc.bucc_table(args.results),
        Path(args.out),
        notes=bucc.bucc_notes(args.results),
        lowered=bucc.bucc_lowered(args.results),
    )
    log.info("wrote %s", args.out)


def _add_tables_mteb(sub: Subparsers) -> None:
    p = sub.add_parser("tables-mteb", help="the MTEB table of the runs' MTEB result JSON")
    p.add_argument("--out", required=True)
    p.add_argument(
        "--results", nargs="+", required=True, help="RUN/seedSEED=DIR: results/eval/mteb/..."
    )
    p.set_defaults(handler=tables_mteb)


def tables_mteb(args: argparse.Namespace) -> None:
    from xlsent.evaluate import mteb
    from xlsent.tables import mteb as mteb_tables
    from xlsent.tables.devices import seeds_devices

    rows, records = [], {}
    for label, directory in lang_paths(args.results).items():
        run, sep, seed = label.rpartition("/seed")
        if not sep or not seed.isdigit():
            raise UsageError(f"--results: expected RUN/seedSEED=DIR, got {label!r}")
        rows += [{"run": run, "seed": int(seed), **row} for row in mteb.read_results(directory)]
        records.setdefault(run, []).append(mteb.read_devices(directory))
    devices = {run: seeds_devices(seeds) for run, seeds in records.items()}
    summary, per_subset = mteb_tables.mteb_table(rows, devices)
    for path in mteb_tables.write_mteb_tables(summary, per_subset, Path(args.out)):
        log.info("wrote %s", path)


def _add_tables_dev(sub: Subparsers) -> None:
    p = sub.add_parser("tables-dev", help="dev P@1 at each evaluation of the encoder runs")
    p.add_argument("--out", required=True)
    p.add_argument("--models", nargs="+", required=True, help="RUN/seedN=results/models/RUN/seedN")
    p.add_argument(
        "--corpus-stats",
        nargs="*",
        required=True,
        help="sample_stats.json: the languages whose dev split is below the minimum",
    )
    p.add_argument(
        "--without-small-dev",
        action="store_true",
        help="leave those languages out of every step's mean and the chosen one's (the "
        "checkpoint stays the one each run kept)",
    )
    p.set_defaults(handler=tables_dev)


def tables_dev(args: argparse.Namespace) -> None:
    from xlsent.tables import dev

    small = dev.small_dev_languages(args.corpus_stats)
    table = dev.dev_table(lang_paths(args.models), small, args.without_small_dev)
    dev.write_dev_table(table, Path(args.out), small, args.without_small_dev)
    log.info("wrote %s", args.out)


def _add_plots(sub: Subparsers) -> None:
    p = sub.add_parser("plots", help="figures of the Tatoeba table and the training records")
    p.add_argument("--summary", required=True, help="results/tables/tatoeba.csv")
    p.add_argument("--groups", nargs="+", required=True, help=GROUPS_HELP)
    p.add_argument("--logs", nargs="*", required=True, help="LABEL=train_log.jsonl")
    p.add_argument("--bars", required=True)
    p.add_argument("--curves", required=True)
    p.set_defaults(handler=plots)


def plots(args: argparse.Namespace) -> None:
    from xlsent.figures.plots import draw

    draw(args.summary, list(_groups(args.groups)), lang_paths(args.logs), args.bars, args.curves)
    log.info("wrote %s and %s", args.bars, args.curves)


def _add_figure_arguments(p: argparse.ArgumentParser, pairs: str, stats: str) -> None:
    """What both figures take besides their data: how much to draw, the seed, the encoding,
    and where the picture and its JSON (`stats`: what was drawn, and the measures) go."""
    p.add_argument("--pairs", type=int, required=True, help=pairs)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--max-length", type=int, required=True, help="subword tokens per sentence")
    p.add_argument("--threads", type=int, required=True, help="the job's CPU threads")
    p.add_argument("--out", required=True, help="the PNG")
    p.add_argument("--stats", required=True, help=f"the JSON of {stats} and the measures")


def _add_figure_aligned_words(sub: Subparsers) -> None:
    p = sub.add_parser(
        "figure-aligned-words", help="WACSE Figure 1: t-SNE of aligned word pairs, run by run"
    )
    p.add_argument("--models", nargs="+", required=True, help="RUN=MODEL_DIR, in panel order")
    p.add_argument(
        "--alignments", nargs="+", required=True, help="LANG=results/align/{aligner}/LANG/_SUCCESS"
    )
    p.add_argument(
        "--corpora", nargs="+", required=True, help="LANG=the training pairs that were aligned"
    )
    _add_figure_arguments(p, pairs="word pairs in all", stats="the pairs")
    # scikit-learn looks pandas up in sys.modules (cli.py: without_pandas)
    p.set_defaults(handler=figure_aligned_words, pandas=True)


def figure_aligned_words(args: argparse.Namespace) -> None:
    import torch

    from xlsent.figures import alignment

    torch.set_num_threads(args.threads)
    alignments = lang_paths(args.alignments)
    corpora = lang_paths(args.corpora)
    if set(corpora) != set(alignments):
        raise UsageError("--alignments and --corpora must name the same languages")
    alignment.aligned_words_figure(
        lang_paths(args.models),
        alignments,
        corpora,
        args.pairs,
        args.seed,
        args.max_length,
        Path(args.out),
        Path(args.stats),
        args.threads,
    )
    log.info("wrote %s and %s", args.out, args.stats)


def _add_figure_tatoeba_tokens(sub: Subparsers) -> None:
    p = sub.add_parser(
        "figure-tatoeba-tokens", help="DAP Figure 1: PCA of Tatoeba pairs' tokens, run by run"
    )
    p.add_argument("--models", nargs="+", required=True, help="RUN=MODEL_DIR, in panel order")
    p.add_argument("--dir", required=True, help="the Tatoeba files (LASER layout)")
    p.add_argument("--langs", nargs="+", required=True)
    add_tatoeba_text_argument(p)
    _add_figure_arguments(p, pairs="Tatoeba pairs in all", stats="the lines")
    # scikit-learn looks pandas up in sys.modules (cli.py: without_pandas)
    p.set_defaults(handler=figure_tatoeba_tokens, pandas=True)


def figure_tatoeba_tokens(args: argparse.Namespace) -> None:
    import torch

    from xlsent.figures import alignment

    torch.set_num_threads(args.threads)
    alignment.tatoeba_tokens_figure(
        lang_paths(args.models),
        Path(args.dir),
        args.langs,
        args.tatoeba_text,
        args.pairs,
        args.seed,
        args.max_length,
        Path(args.out),
        Path(args.stats),
    )
    log.info("wrote %s and %s", args.out, args.stats)


def _add_tables_cost(sub: Subparsers) -> None:
    p = sub.add_parser("tables-cost", help="what each stage and run cost (benchmark files)")
    p.add_argument("--benchmarks", required=True, help="the benchmark directory")
    p.add_argument(
        "--checkpoints",
        required=True,
        help="the training checkpoints' directory: the time of the jobs a resumed one "
        "followed, and the speed each training logged",
    )
    p.add_argument(
        "--vectors",
        required=True,
        help="the encode jobs' vectors (results/vectors): what each encoded on",
    )
    p.add_argument(
        "--models",
        required=True,
        help="the exported models (results/models): what each trained on",
    )
    p.add_argument(
        "--evaluations",
        help="the results files (results/eval): what an encoding whose vectors are gone ran "
        "on, from the evaluations that scored it (with --sources)",
    )
    p.add_argument(
        "--sources",
        nargs="*",
        default=[],
        metavar="TASK=SOURCE",
        help="the vectors' source each evaluation task reads (tatoeba=tatoeba bucc=mining)",
    )
    p.add_argument(
        "--gpus",
        nargs="*",
        required=True,
        help="STAGE=N or STAGE/RUN=N: the GPUs each job of a stage (or run) held",
    )
    p.add_argument("--out", required=True)
    p.add_argument("after", nargs="*", help="outputs to wait for (the other tables)")
    p.set_defaults(handler=tables_cost)


def tables_cost(args: argparse.Namespace) -> None:
    from xlsent.tables import cost
    from xlsent.tables.speed import log_speed

    gpus = {key: int(value) for key, value in (item.split("=", 1) for item in args.gpus)}
    # A training run's checkpoint directory {run}/seed{seed} (layout.CHECKPOINTS) records the
    # jobs before the one whose benchmark file is train/{run}/seed{seed}.tsv
    # (xlsent.train.checkpoints).
    trainings = layout.to_glob(layout.RUN_SEED)
    earlier = {
        f"train/{path.parent.parent.name}/{path.parent.name}": json.loads(path.read_text())
        for path in Path(args.checkpoints).glob(f"{trainings}/earlier_attempts.json")
    }
    # Its live log: the speed of its steps.
    speeds = {
        f"train/{path.parent.parent.name}/{path.parent.name}": log_speed(path)
        for path in Path(args.checkpoints).glob(f"{trainings}/train_log.jsonl")
    }
    # Every job that trained it, recorded at its export: the row of a training whose last job
    # left no benchmark file (xlsent.train.checkpoints).
    trained = {}
    for path in Path(args.checkpoints).glob(f"{trainings}/attempts.json"):
        record = json.loads(path.read_text())
        if record["exported"]:
            job = f"train/{path.parent.parent.name}/{path.parent.name}"
            trained[job] = (record["attempts"], path.stat().st_mtime)
    sources = {task: str(source) for task, source in lang_paths(args.sources).items()}
    devices = cost.recorded_devices(args.vectors, args.models, args.evaluations, sources)
    table = cost.cost_table(args.benchmarks, gpus, earlier, speeds, trained, devices)
    cost.write_cost_table(table, Path(args.out))
    log.info("wrote %s", args.out)
