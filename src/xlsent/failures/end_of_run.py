"""What the jobs of a run did that its console must say at the end: a training that could not
resume where it stood, and the pairs each language's cleaning dropped.

Both are written where nobody looks while a run goes on. The trainer logs a checkpoint that
does not load, and what it did instead (`xlsent.train.checkpoints`: resumed from the one
before it, or started over); `clean_stats.json` counts the pairs each filter dropped and
names the file of a line that is not UTF-8 (`xlsent.corpus.clean`). The Snakefile's
`onsuccess` and `onerror` print `report` of the jobs that ran, whether the run succeeded or
not: a training that started over may be what failed later, and a language whose files hold
bad bytes is cleaned before anything fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

# The trainer's lines (xlsent.train.checkpoints, xlsent.train.loop) about a checkpoint that
# does not load, and what it did then.
_BROKEN = re.compile(r" (\S+) does not load \((.*)\): the file is truncated or corrupt")
_RESUMED = re.compile(r" resumed from (\S+) at step (\d+)$")
_STARTED_OVER = re.compile(r" no checkpoint of \S+ loads: training starts over at step 0$")
# Locations in clean_stats.json's examples: "FILE:LINE".
_LOCATION = re.compile(r"^(.*):(\d+)$")


class _Dag(Protocol):
    @property
    def jobs(self) -> Iterable[Any]: ...

    def finished(self, job: Any) -> bool: ...


def report(dag: _Dag, failed: Iterable[Any]) -> list[str]:
    """Console lines about the jobs of this run, those that finished in `dag` and those that
    `failed` or a Ctrl-C stopped (of a group job, each of its jobs): trainings that did not
    resume from their latest checkpoint, then one line per language cleaned."""
    ran = [job for job in dag.jobs if dag.finished(job)]
    ran += [job for each in failed for job in (each if each.is_group() else [each])]
    restarts = [
        line
        for job in ran
        if job.rule.name == "train"
        for log in job.log
        if (line := restart(Path(log)))
    ]
    drops = [
        line
        for job in ran
        if job.rule.name == "clean"
        for output in job.output
        if output.endswith("clean_stats.json") and (line := dropped(Path(output)))
    ]
    lines = []
    if restarts:
        lines += ["Trainings that could not resume from their latest checkpoint:", *restarts]
    if drops:
        lines += ["Pairs each language's cleaning dropped (its clean_stats.json):", *drops]
    return lines


def restart(log: Path) -> str | None:
    """`  LOG: CHECKPOINT did not load (why): ...` where the training of `log` found its
    latest checkpoint broken, saying where it went on; None where it resumed it (or never
    looked: a log that does not read)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    broken = [m for m in map(_BROKEN.search, lines) if m]
    if not broken:
        return None
    path, why = broken[0].groups()
    resumed = [m for m in map(_RESUMED.search, lines) if m]
    if resumed:
        what = f": the training resumed from {resumed[-1].group(1)} at step {resumed[-1].group(2)}"
    elif any(map(_STARTED_OVER.search, lines)):
        what = ", nor any checkpoint before it: the training started over at step 0"
    else:
        return None  # it stopped before deciding: its failure says why
    return (
        f"  {log}: {path} did not load ({why}){what}; the cost table counts the time of the "
        "jobs before"
    )


def dropped(stats_path: Path) -> str | None:
    """`  LANG: kept K of N pairs; dropped ...` from a `clean_stats.json`, each filter that
    dropped pairs with its count, the lines that are not UTF-8 with their files; None where
    it does not read."""
    try:
        stats = json.loads(stats_path.read_text())
    except (OSError, ValueError):
        return None
    counts = [f"{n} {name}" for name, n in stats["dropped"].items() if n and name != "invalid_utf8"]
    bad = stats["dropped"].get("invalid_utf8", 0)
    if bad:
        counts.insert(
            0, f"{bad} not valid UTF-8 ({_where(stats['examples']['invalid_utf8'], bad)})"
        )
    drops = f"; dropped {', '.join(counts)}" if counts else ""
    return f"  {stats['lang']}: kept {stats['kept']} of {stats['read']} pairs{drops}"


def _where(examples: list[str], count: int) -> str:
    """`FILE line 2, 4; FILE2 line 7, ...`: the first locations kept, by file."""
    lines: dict[str, list[str]] = {}
    for example in examples:
        found = _LOCATION.match(example)
        if found:
            lines.setdefault(found.group(1), []).append(found.group(2))
    listed = "; ".join(f"{file} line {', '.join(numbers)}" for file, numbers in lines.items())
    return listed + (", ..." if count > len(examples) else "")
