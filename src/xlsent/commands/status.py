"""`xlsent status`: for users, not rules; what the next run redoes and why."""

from __future__ import annotations

import argparse

from xlsent.commands import Subparsers


def register(sub: Subparsers) -> None:
    """Add status."""
    _add_status(sub)


def _add_status(sub: Subparsers) -> None:
    p = sub.add_parser(
        "status",
        help="what the next run redoes and why: `xlsent status [SNAKEMAKE ARGS]`, e.g. "
        "`xlsent status --configfile resources/demo/config.yaml`",
        usage="xlsent status [SNAKEMAKE ARGUMENTS ...]",
        description="What the next `snakemake` run with the same arguments redoes, and why.\n"
        "Every argument is Snakemake's (targets, --configfile, --config, --directory, ...),\n"
        "given as to the run itself, in the directory where you run Snakemake.",
        epilog="examples:\n"
        "  xlsent status --configfile resources/demo/config.yaml\n"
        "  xlsent status results/tables/tatoeba.csv --config languages=low4",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # Its arguments are Snakemake's, passed through as they are: the CLI's main() hands
    # over whatever it did not parse in the attribute that `passthrough` names.
    p.set_defaults(handler=status, passthrough="snakemake_args")


def status(args: argparse.Namespace) -> None:
    from xlsent.status import report

    print(report(args.snakemake_args))
