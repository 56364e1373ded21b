"""`xlsent <subcommand>`: the entry points the Snakemake rules call, one per job kind.

Every subcommand takes explicit paths (no hidden defaults about the results layout, which
belongs to the workflow) and settings as flags or as one JSON object (`--settings`).
Known input errors print one actionable line and exit 2; anything else is a bug and keeps
its traceback.

The subcommands live in `xlsent.commands`, one module per stage, each registering its own
parsers; this module only assembles them, configures logging and maps errors to exit codes.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

# OpenMP threads that wait spin by default, burning the cores that a DAG's other jobs share:
# a 2-thread me5 training step beside other jobs on 2 cores took 8.2-8.8 CPU-s spinning and
# 4.2-4.4 with PASSIVE, whose threads sleep (wall 16-20 s against 7-11). Set before torch or
# faiss starts its OpenMP runtime; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from xlsent.commands import (
    align,
    bisent2vec,
    corpus,
    encode,
    evaluate,
    hard_negatives,
    log,
    status,
    tables,
    tokenize,
    train,
)

# What `xlsent --help` leads with: the workflow is run by Snakemake, not by these commands.
USAGE = """\
Cross-lingual sentence encoders, from parallel corpora to the papers' tables.

The workflow is run by Snakemake, from the repository root:
  make demo                                        the offline demo (minutes, 2 cores)
  snakemake --cores 8 results/tables/tatoeba.csv   the paper config (config.yaml)
  snakemake --profile slurm results/tables/tatoeba.csv --configfile my.yaml
  xlsent status [SNAKEMAKE ARGUMENTS]              what the next run redoes, and why
A failed or killed run resumes with the same command (docs/recovery.md).

The commands below are what the workflow's rules call, one per job kind; each takes
explicit paths and settings, for running one job by hand."""

# The stages in workflow order: `xlsent --help` lists their subcommands in this order.
STAGES = (
    corpus,
    tokenize,
    align,
    hard_negatives,
    train,
    encode,
    evaluate,
    bisent2vec,
    tables,
    status,
)


def build_parser() -> argparse.ArgumentParser:
    """The `xlsent` parser: every stage's subcommands, each with its handler as a default."""
    parser = argparse.ArgumentParser(
        prog="xlsent",
        description=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for stage in STAGES:
        stage.register(sub)
    return parser


class _NoPandas:
    """A finder that answers an import of pandas with ModuleNotFoundError (`sys.meta_path`)."""

    @staticmethod
    def find_spec(name: str, *_) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas: not imported by xlsent's jobs", name=name)


def without_pandas() -> None:
    """Run this process as if pandas were not installed.

    pyarrow imports pandas (a quarter of a CPU-second, twice that on a busy machine) at its
    first conversion from Python or numpy (`pa.table` of lists, `pa.array`, `to_numpy`): in
    nearly every job, though no job holds a pandas object, and the demo runs about 200 jobs.
    Its Python side asks once and keeps the answer, which is settled here while an import of
    pandas fails; its C++ side asks at every conversion, which `sys.modules["pandas"] = None`
    (Python's own way to mark a module absent) answers at once. `importlib.util.find_spec`
    then says pandas is not installed, so libraries that can do without it do. A command
    whose libraries need pandas (MTEB's `datasets`) sets `pandas=True` and skips this.
    """
    import pyarrow.lib

    if "pandas" in sys.modules:
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pyarrow.lib._pandas_api.have_pandas  # noqa: B018 (the lookup makes pyarrow ask)
    finally:
        sys.meta_path.remove(finder)
    sys.modules["pandas"] = None


def main(argv: list[str] | None = None) -> None:
    """Run one subcommand; a known failure is one log line and exit 2, a bug its traceback."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    # A subcommand that wraps another program (status: Snakemake) names the attribute that
    # receives the arguments it leaves to it; any other leaves none.
    passthrough = getattr(args, "passthrough", None)
    if passthrough:
        setattr(args, passthrough, rest)
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    # The command line itself, for a command that starts itself again in other processes
    # (`train` on several GPUs).
    args.argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # faiss says at INFO which of its builds it tried and loaded: seven lines in every log.
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    from xlsent.failures.errors import XlsentError
    from xlsent.io import describe_os_error

    if not getattr(args, "pandas", False):
        without_pandas()

    try:
        args.handler(args)
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


if __name__ == "__main__":  # the training processes run `-m xlsent.cli` (xlsent.train.launch)
    main()
