"""A failed job's own message on the console, not only in its log.

Every rule sends its command's stderr to its `log:` file, where a known failure leaves one
ERROR line naming the file and the fix (`xlsent.cli.main`), while the console shows
Snakemake's "returned non-zero exit status 2". When a run fails, the Snakefile's `onerror`
handler prints `report` of the jobs that failed for good: once, at the end, after the other
jobs of a `--keep-going` run. It runs in the process that plans the run, which reads a
cluster job's log on the shared file system as a local one.

Snakemake's `--show-failed-logs` prints whole logs instead: hours of progress lines of a
long job, again at every retry, and for a cluster group the logs of all its jobs and its
Slurm log, which holds them again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

# xlsent.cli's log format: "2026-01-31 12:00:00,000 ERROR xlsent: message".
_ERROR = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ (ERROR .*)$")


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


def report(failed: Iterable[_Job], tail: int = 5) -> list[str]:
    """Console lines, for each failed job: the last ERROR line of each of its logs that has
    one; without any, the last `tail` lines of its log written last (a traceback ends with
    the exception, a killed job's log with its last progress line; in a group, that is the
    log of the job that ran last)."""
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
        for log, lines in said.items():
            out += [f"{log}:", *(f"    {line}" for line in lines)]
    return out
