"""Workflow files that no longer read back: named, set aside, remade.

Every file the workflow writes appears whole or not at all (`xlsent.io.atomic_path`), but a
file can break after its job ended: a copy of `results/` cut short, a disk that filled under
rsync, a failing disk. Its reader then fails with the format library's words and no file
(polars' "File out of specification: The file must end with PAR1", torch's "PytorchStreamReader
failed reading zip archive"), and since the truncation made the file newer than what was
computed from it, every rerun plans those consumers again and fails the same way. Three places
deal with such a file:

- a run, as it starts, checks the files its jobs will read that it does not rebuild
  (`set_aside_unreadable_inputs`, from the Snakefile's `onstart`): one that
  does not read back is moved aside (`set_aside`) and the run stops before it removes or runs
  anything, so that the same command goes on, remaking the file where a job needs it;
- a reader of a workflow file opens it inside `reading(path)`, which turns the format
  library's error into an `UnreadableFileError` naming the file and the command that remakes
  it (for a file broken where `problem`'s cheap check does not look);
- `xlsent status` lists every output that does not read back with that command.

`problem` reads what a truncation loses first, the end of the file: a Parquet or Arrow file's
footer, a zip archive's central directory (a torch checkpoint is one), a JSON document whole
(they are small). That costs a read of a few kilobytes per file, whatever its size.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from xlsent.failures.errors import XlsentError

# What a format library raises on bytes it cannot parse (not on a permission or a missing
# file: those are OSErrors with an errno, named by xlsent.io.file_error and the CLI); and
# polars' `ComputeError` (`format_errors`).
FORMAT_ERRORS = (
    pa.ArrowInvalid,
    zipfile.BadZipFile,
    EOFError,
    json.JSONDecodeError,
    UnicodeDecodeError,
)


def format_errors() -> tuple[type[Exception], ...]:
    """`FORMAT_ERRORS`, and polars' `ComputeError` where polars is imported: a process that has
    not imported polars cannot have raised it, and the Snakemake process, which imports this
    module to check its inputs with pyarrow, is spared polars' import (0.15 s a start)."""
    polars = sys.modules.get("polars")
    return (*FORMAT_ERRORS, polars.exceptions.ComputeError) if polars else FORMAT_ERRORS


# An alignment's manifest (xlsent.align.shards), JSON under the name Hadoop gives a done flag.
MANIFEST = "_SUCCESS"


class UnreadableFileError(XlsentError):
    """A workflow file that does not read back; the message names it and the fix."""


def unreadable(path: str | os.PathLike[str], why: str) -> UnreadableFileError:
    """The error of the workflow file `path`, which does not read back because of `why`."""
    return UnreadableFileError(
        f"{path} does not read back ({why}): the file is truncated or corrupt, broken after the "
        "job that wrote it ended (a copy cut short, a full or failing disk). Remake it and what "
        f"was computed from it: {remake_command([path])}"
    )


def remake_command(paths: list[str] | list[Path], argv: Sequence[str] | None = None) -> str:
    """The command that remakes `paths` and what was computed from them: `argv`, the user's
    Snakemake command line (a run's `sys.argv`), with `--forcerun` added and a dry run's flag
    left out; without it, the option and a reminder of the rest."""
    forced = ["--forcerun", *map(str, paths)]
    if argv is None:
        return f"snakemake {' '.join(forced)} (with your other arguments)"
    # `python -m snakemake` runs snakemake/__main__.py: the command is `snakemake` either way.
    return shlex.join(["snakemake", *(arg for arg in argv[1:] if arg not in DRY_RUN), *forced])


# Snakemake's flags of a dry run, left out of a command that is to do the work.
DRY_RUN = ("-n", "--dry-run", "--dryrun")


def problem(path: str | os.PathLike[str]) -> str | None:
    """Why the workflow file `path` does not read back, or None (also for a directory, a
    missing file and the kinds not checked: text, images)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        if path.suffix == ".parquet":
            pq.read_metadata(path)
        elif path.suffix == ".arrow":
            with pa.memory_map(str(path)) as source:
                pa.ipc.open_file(source)
        elif path.suffix == ".pt":
            zipfile.ZipFile(path).close()
        elif path.suffix == ".json" or path.name == MANIFEST:
            json.loads(path.read_bytes())
    except FORMAT_ERRORS as err:
        return _first_sentence(err)
    return None


def _first_sentence(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.split(". ")[0].rstrip(".")


@contextmanager
def reading(path: str | os.PathLike[str]) -> Iterator[None]:
    """Inside, a format error on the workflow file `path` that `problem` confirms (a broken
    file, not a missing column) is an `UnreadableFileError` naming it and the fix."""
    try:
        yield
    except format_errors() as err:
        why = problem(path)
        if why is None:
            raise
        raise unreadable(path, why) from err


def set_aside(path: str | os.PathLike[str]) -> Path:
    """Move the broken file `path` to `{path}.unreadable` (kept to look at; a later one
    replaces it) and return where it went."""
    aside = Path(f"{path}.unreadable")
    os.replace(path, aside)
    return aside


# -- a run's inputs that no longer read back ---------------------------------------------------


class _Dag(Protocol):
    def needrun_jobs(self) -> Iterable[Any]: ...

    def job_dependencies(self, job: Any) -> Iterable[Any]: ...


def set_aside_unreadable_inputs(
    dag: _Dag, snakemake_dir: str | os.PathLike[str], argv: Sequence[str]
) -> list[str]:
    """Move aside the files that the jobs to run read and no job to run rebuilds, where they
    do not read back (`problem`); return what to tell the user (nothing: all read),
    with the command `argv` (this run's) that remakes them, and record them in
    `snakemake_dir` for the runs after (`still_set_aside`).

    Such a file broke after its job ended (a copy cut short), which made it newer than what
    was computed from it: the run plans those consumers again and would remove their outputs
    (`xlsent.failures.rebuilt_outputs`) before one fails on it. Found here first, nothing is
    removed; set aside, the file is missing to the next run, which remakes it where a job
    needs it and keeps the results computed from it before it broke.
    """
    needrun = set(dag.needrun_jobs())
    broken: dict[str, str] = {}
    for job in needrun:
        read = set(map(str, job.input))
        for producer in dag.job_dependencies(job):
            if producer in needrun:
                continue
            for path in sorted(read.intersection(map(str, producer.output)) - set(broken)):
                why = problem(path)
                if why is not None:
                    broken[path] = why
    lines = [
        f"{path} does not read back ({why}): the file is truncated or corrupt, broken after "
        f"the job that wrote it ended; moved it to {set_aside(path)}."
        for path, why in sorted(broken.items())
    ]
    if lines:
        record = Path(snakemake_dir) / SET_ASIDE_RECORD
        record.write_text(json.dumps(sorted({*_set_aside(record), *broken})) + "\n")
        lines.append(
            "Nothing was removed or run. The results computed from it are kept, and the same "
            f"command remakes it only where a job needs it again. {_remake(broken, argv)}"
        )
    return lines


# The files runs set aside and that are not remade yet, in Snakemake's directory (JSON).
SET_ASIDE_RECORD = "xlsent-set-aside.json"


def still_set_aside(snakemake_dir: str | os.PathLike[str], argv: Sequence[str]) -> list[str]:
    """Lines naming the files that a run set aside (`set_aside_unreadable_inputs`) and no
    run has remade, with the command `argv` that remakes them; the record forgets those
    remade."""
    record = Path(snakemake_dir) / SET_ASIDE_RECORD
    recorded = _set_aside(record)
    missing = [path for path in recorded if not Path(path).exists()]
    if missing != recorded:
        if missing:
            record.write_text(json.dumps(missing) + "\n")
        else:
            record.unlink(missing_ok=True)
    return [
        f"{path}, set aside as unreadable ({path}.unreadable), is still missing; the results "
        "computed from it are kept, and a run remakes it only where a job needs it again. "
        + _remake([path], argv)
        for path in missing
    ]


def _set_aside(record: Path) -> list[str]:
    try:
        return list(json.loads(record.read_text()))
    except (OSError, ValueError):
        return []


def _remake(paths: Iterable[str], argv: Sequence[str]) -> str:
    return "To remake it now, and what was computed from it: " + remake_command(sorted(paths), argv)
