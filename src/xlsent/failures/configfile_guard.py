"""The config files a working directory's results were made with, and a run's refusal to
remove those results under other config files.

A Snakemake command without its `--configfile` runs the workflow's own `config.yaml` (the
paper's setup). In a directory whose results another config made, that run plans nearly
everything again, and as it starts it removes what it rebuilds
(`xlsent.failures.rebuilt_outputs`): trained models, evaluations, tables, before its first job
fails on the network. Nothing there said "this is another config".

So each run that starts its jobs records its config files beside Snakemake's own records
(`record`), and a run that would remove results checks them first (`refusal`): under other
config files than the last run's, it stops before it removes or runs anything, naming both
sets and the two ways on: the command with the config files of the results, or the same
command with `XLSENT_ALLOW_REMOVAL=1` in front, which rebuilds them under its own.

Under the same config files a run removes what it rebuilds without asking: a changed setting,
a new release of a corpus file, an upgrade of xlsent or a `--forcerun` retrain what depends on
them, which is what the user asked for (the everyday "change one setting, only what depends
on it runs again"; the kill-anywhere and staleness tests change settings and inputs and
rerun). A trained model, hours of a GPU, is not removed where the config files cannot be told:
a directory without a record (results of a version before it) refuses the same way when a
model would go, and only then.

Config files are named relative to the working directory when they are in it, so that a
directory copied or moved with its config keeps its record; others by their absolute path.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from xlsent import layout

# In Snakemake's directory (`.snakemake`): the config files of the last run that started jobs.
RECORD = "xlsent-configfiles.json"
# Set to 1 (in the environment of the Snakemake command) to remove the results a run
# rebuilds although other config files made them: Snakemake's command line takes no option
# of ours, and the schema refuses a config key it does not know.
ALLOW = "XLSENT_ALLOW_REMOVAL"
# Where trained models are (`xlsent.layout.MODEL`).
MODELS = layout.MODELS


def names(configfiles: Iterable[str | os.PathLike[str]]) -> list[str]:
    """`configfiles` as a record names them: relative to the working directory when they are
    in it, else absolute."""
    here = Path.cwd()
    named = []
    for configfile in configfiles:
        path = Path(os.path.abspath(configfile))
        named.append(str(path.relative_to(here)) if path.is_relative_to(here) else str(path))
    return named


def record(snakemake_dir: str | os.PathLike[str], configfiles: Iterable[str]) -> None:
    """Record `configfiles` (`names`) as those the results of this directory are made with."""
    path = Path(snakemake_dir) / RECORD
    path.write_text(json.dumps({"configfiles": list(configfiles)}) + "\n")


def recorded(snakemake_dir: str | os.PathLike[str]) -> list[str] | None:
    """The config files `record` recorded; None without a record (or one that does not read)."""
    try:
        return list(json.loads((Path(snakemake_dir) / RECORD).read_text())["configfiles"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def check_and_record(
    snakemake_dir: str | os.PathLike[str],
    configfiles: Iterable[str | os.PathLike[str]],
    removed: Sequence[str],
    argv: Sequence[str],
) -> str | None:
    """The `refusal` of a run of `configfiles` that would remove `removed`; where there is
    none, record its config files as those the results in `snakemake_dir`'s directory are
    made with from now on."""
    now = names(configfiles)
    refused = refusal(recorded(snakemake_dir), now, removed, argv)
    if refused is None:
        record(snakemake_dir, now)
    return refused


def refusal(
    before: list[str] | None,
    now: list[str],
    removed: Sequence[str],
    argv: Sequence[str],
    environ: Mapping[str, str] = os.environ,
) -> str | None:
    """Why a run of config files `now` (`names`) must not remove `removed`, the results it
    rebuilds (`xlsent.failures.rebuilt_outputs.rebuilt_outputs`), in a directory whose last run
    had config files `before` (`recorded`); None where it may. `argv`: the run's command line,
    which the message gives back with each way on."""
    if not removed or environ.get(ALLOW) or before == now:
        return None
    models = [path for path in removed if path.startswith(MODELS)]
    if before is None and not models:
        return None
    what = f"{_count(removed, 'result')} that it rebuilds"
    if models:
        shown = ", ".join(models[:3]) + (", ..." if len(models) > 3 else "")
        what += f", among them {_count(models, 'trained model')} ({shown})"
    allow = f"{ALLOW}=1 {_command(argv)}"
    if before is None:
        return (
            f"This run would remove {what}, and this directory has no record of the config "
            f"files they were made with (an xlsent before this check made them); this run's are "
            f"{', '.join(now)}. Nothing was removed or run.\n"
            f"If those made them, run the same command with {ALLOW}=1 in front: {allow}\n"
            "If others did, give those instead (--configfile FILE ...)."
        )
    return (
        f"This run would remove {what}, made with other config files: this directory's last "
        f"run had {', '.join(before)}, this run has {', '.join(now)}. Nothing was removed or "
        "run.\n"
        f"To go on with those results, give their config files: {_command(argv, before)}\n"
        "To rebuild them with this run's config files instead, run the same command with "
        f"{ALLOW}=1 in front: {allow}"
    )


def _count(items: Sequence[str], noun: str) -> str:
    return f"{len(items)} {noun}{'s' if len(items) > 1 else ''}"


def _command(argv: Sequence[str], configfiles: Sequence[str] | None = None) -> str:
    """The Snakemake command line `argv` (a run's `sys.argv`), with `configfiles` (`names`)
    in place of its own config files where given: absolute where the command names another
    working directory, from which the user's shell does not see them."""
    args = list(argv[1:])
    if configfiles is not None:
        elsewhere = any(
            arg in ("-d", "--directory") or arg.startswith("--directory=") for arg in args
        )
        given = [os.path.abspath(path) if elsewhere else path for path in configfiles]
        args = [*_without_configfiles(args), "--configfile", *given]
    # `python -m snakemake` runs snakemake/__main__.py: the command is `snakemake` either way.
    return shlex.join(["snakemake", *args])


def _without_configfiles(args: list[str]) -> list[str]:
    """`args` less `--configfile(s)` and its values (up to the next option)."""
    kept, values = [], False
    for arg in args:
        if arg in ("--configfile", "--configfiles"):
            values = True
        elif arg.startswith(("--configfile=", "--configfiles=")):
            values = False
        elif values and not arg.startswith("-"):
            continue
        else:
            values = False
            kept.append(arg)
    return kept
