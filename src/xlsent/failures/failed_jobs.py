"""A failed job's own message on the console, not only in its log.

Every rule sends its command's stderr to its `log:` file, where a known failure leaves one
ERROR line naming the file and the fix (`xlsent.cli.main`), while the console shows
Snakemake's "returned non-zero exit status 2". When a run fails, the Snakefile's `onerror`
handler prints `report` of the jobs that failed for good: once, at the end, after the other
jobs of a `--keep-going` run. It runs in the process that plans the run, which reads a
cluster job's log on the shared file system as a local one.

A job killed by a signal (the kernel's out-of-memory killer, a time limit, `kill -9`) writes
nothing of it: Snakemake says "exit status 137", its log ends with its last progress line.
From Snakemake's own log of the run, which holds each failed local command with its status,
`report` says what the status means and, for a training job, at which step the same command
resumes it (the trainer logs each checkpoint).

Snakemake's `--show-failed-logs` prints whole logs instead: hours of progress lines of a
long job, again at every retry, and for a cluster group the logs of all its jobs and its
Slurm log, which holds them again.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

# xlsent.cli's log format: "2026-01-31 12:00:00,000 ERROR xlsent: message".
_ERROR = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ (ERROR .*)$")
# Python's CalledProcessError, as Snakemake logs a failed local job's command.
_STATUS = re.compile(r"^Command '(.*)' returned non-zero exit status (\d+)\.$", re.MULTILINE)
# The trainer's lines (xlsent.train.loop) of a checkpoint saved, or resumed from.
_CHECKPOINT = re.compile(r"(?:checkpoint at step (\d+): (\S+)$|resumed from (\S+) at step (\d+)$)")
# The train rule's command (`xlsent train`; a training process of several: `-m xlsent.cli
# train`).
_TRAINING = re.compile(r"\bxlsent(\.cli)? train ")
# What a signal that ends a job says of its cause.
_CAUSES = {
    signal.SIGKILL: "killed (out of memory, a time limit, or `kill -9`)",
    signal.SIGTERM: "terminated (a time limit, a shutdown, or `kill`)",
    signal.SIGINT: "interrupted (Ctrl-C)",
    signal.SIGSEGV: "crashed (a segmentation fault)",
    signal.SIGBUS: "crashed (a bus error: a file it mapped shrank, or a full /dev/shm)",
    signal.SIGABRT: "aborted",
}


class _Job(Protocol):
    # A job's log files; a cluster group job's are those of all its jobs.
    @property
    def log(self) -> Iterable[Any]: ...


def _lines(log: Path) -> list[str]:
    """The non-blank lines of `log` (a progress bar's updates, split at their "\\r", are
    lines); none when the job never ran (the later jobs of a failed group) or the log cannot
    be read: the report must not hide the run's own error."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()]


def exit_statuses(snakemake_logs: Iterable[str | Path]) -> dict[str, int]:
    """{command: exit status} of the failed local commands in Snakemake's logs of the run."""
    statuses = {}
    for path in snakemake_logs:
        try:
            text = Path(path).read_text(errors="replace")
        except OSError:
            continue
        statuses.update((command, int(status)) for command, status in _STATUS.findall(text))
    return statuses


def signal_note(status: int, command: str, lines: list[str]) -> str | None:
    """What exit status `status` (a shell's 128 + the signal's number) of `command` says, and
    what the same command does next, from the job's log `lines`; None for an ordinary exit."""
    try:
        sig = signal.Signals(status - 128)
    except ValueError:
        return None
    note = f"Exit status {status} is 128 + {sig.name}: the job was "
    note += _CAUSES.get(sig, f"ended by {sig.name}") + "."
    checkpoints = [m for m in map(_CHECKPOINT.search, lines) if m]
    if checkpoints:
        saved_step, saved, resumed_from, resumed_step = checkpoints[-1].groups()
        step, path = (saved_step, saved) if saved_step else (resumed_step, resumed_from)
        return f"{note} The same command resumes its training at step {step} ({path})."
    if _TRAINING.search(command):
        return f"{note} It saved no checkpoint: the same command starts its training over."
    return f"{note} The same command runs it again."


def report(
    failed: Iterable[_Job], snakemake_logs: Iterable[str | Path] = (), tail: int = 5
) -> list[str]:
    """Console lines, for each failed job: the last ERROR line of each of its logs that has
    one; without any, the last `tail` lines of its log written last (a traceback ends with
    the exception, a killed job's log with its last progress line; in a group, that is the
    log of the job that ran last), and for a job a signal ended (its exit status in
    `snakemake_logs`, Snakemake's logs of the run) what that means."""
    statuses = exit_statuses(snakemake_logs)
    out = []
    for job in failed:
        logs = {Path(log): _lines(Path(log)) for log in job.log}
        said = {}
        for log, lines in logs.items():
            errors = [m.group(1) for m in map(_ERROR.match, lines) if m]
            if errors:
                said[log] = errors[-1:]
        written = [log for log, lines in logs.items() if lines]
        if not said and written:
            last = max(written, key=lambda log: log.stat().st_mtime)
            said[last] = logs[last][-tail:]
        for log in logs:
            for command, status in statuses.items():
                note = signal_note(status, command, logs[log]) if _mentions(command, log) else None
                if note is not None:
                    said[log] = [*said.get(log, []), note]
        for log, lines in said.items():
            out += [f"{log}:", *(f"    {line}" for line in lines)]
    return out


def _mentions(command: str, log: Path) -> bool:
    """Whether `command` writes to `log` (every rule's command redirects to its log)."""
    return re.search(rf"(^|[\s>]){re.escape(str(log))}(\s|$)", command) is not None
