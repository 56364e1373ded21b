"""Tables stage: every run's results gathered into the papers' tables and figures."""

from __future__ import annotations

import argparse
from pathlib import Path

from xlsent.commands import Subparsers, lang_paths, log


def register(sub: Subparsers) -> None:
    """Add tables, tables-ablation, tables-bli and plots."""
    _add_tables(sub)
    _add_tables_ablation(sub)
    _add_tables_bli(sub)
    _add_plots(sub)
    _add_tables_cost(sub)


def _add_tables(sub: Subparsers) -> None:
    p = sub.add_parser("tables", help="gather evaluation results into tables")
    p.add_argument("--groups", nargs="+", required=True)
    p.add_argument(
        "--language-directions",
        nargs="+",
        choices=["mean", "xx2en", "en2xx"],
        required=True,
        help="the per-language table's directions",
    )
    p.add_argument(
        "--corpus-stats", nargs="*", required=True, help="sample_stats.json: marks scarce languages"
    )
    p.add_argument("--out", required=True)
    p.add_argument("results", nargs="+")
    p.set_defaults(handler=tables)


def tables(args: argparse.Namespace) -> None:
    from xlsent import tables as result_tables

    scarce = result_tables.scarce_languages(args.corpus_stats)
    summary, per_language = result_tables.tatoeba_tables(
        args.results, args.groups, scarce, args.language_directions
    )
    for path in result_tables.write_tables(summary, per_language, Path(args.out), scarce=scarce):
        log.info("wrote %s", path)


def _add_tables_ablation(sub: Subparsers) -> None:
    p = sub.add_parser("tables-ablation", help="the ablation table of chosen runs")
    p.add_argument("--runs", nargs="+", required=True)
    p.add_argument("--groups", nargs="+", required=True)
    p.add_argument(
        "--corpus-stats", nargs="*", required=True, help="sample_stats.json: marks scarce languages"
    )
    p.add_argument("--out", required=True)
    p.add_argument("results", nargs="+")
    p.set_defaults(handler=tables_ablation)


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


def _add_tables_bli(sub: Subparsers) -> None:
    p = sub.add_parser("tables-bli", help="the word translation table of the BLI results")
    p.add_argument("--out", required=True)
    p.add_argument("results", nargs="+")
    p.set_defaults(handler=tables_bli)


def tables_bli(args: argparse.Namespace) -> None:
    from xlsent import tables as result_tables

    table, queries = result_tables.bli_table(args.results)
    result_tables.write_bli_table(table, queries, Path(args.out))
    log.info("wrote %s", args.out)


def _add_plots(sub: Subparsers) -> None:
    p = sub.add_parser("plots", help="figures of the Tatoeba table and the training records")
    p.add_argument("--summary", required=True, help="results/tables/tatoeba.csv")
    p.add_argument("--groups", nargs="+", required=True)
    p.add_argument("--logs", nargs="*", required=True, help="LABEL=train_log.jsonl")
    p.add_argument("--bars", required=True)
    p.add_argument("--curves", required=True)
    p.set_defaults(handler=plots)


def plots(args: argparse.Namespace) -> None:
    from xlsent import plots as figures

    figures.group_bars(args.summary, args.groups, args.bars)
    figures.dev_curves(lang_paths(args.logs), args.curves)
    log.info("wrote %s and %s", args.bars, args.curves)


def _add_tables_cost(sub: Subparsers) -> None:
    p = sub.add_parser("tables-cost", help="what each stage and run cost (benchmark files)")
    p.add_argument("--benchmarks", required=True, help="the benchmark directory")
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
    from xlsent import tables as result_tables

    gpus = {key: int(value) for key, value in (item.split("=", 1) for item in args.gpus)}
    table = result_tables.cost_table(args.benchmarks, gpus)
    result_tables.write_cost_table(table, Path(args.out))
    log.info("wrote %s", args.out)
