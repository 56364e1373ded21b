"""What a run removes as it starts: the outputs it rebuilds because something they were computed
from is rebuilt.

Snakemake deletes a job's outputs when the job starts, not when it decides to rebuild them.
If a job is killed, its outputs are gone, and the outputs computed from them earlier look up
to date to the next run: Snakemake does not rebuild a missing intermediate file whose
consumers are complete (its rule for temporary files). After a settings change and a killed
`train`, evaluation, tables and plots would keep the old model's numbers.
`invalidate_rebuilt_outputs` closes that gap: when a run starts, every output that will be
rebuilt because something it was computed from is rebuilt is removed at once, consumers
first. A kill at any later moment then leaves those outputs missing, and the next run
rebuilds them and what they need. Under other config files than those the results were made
with, a run removes nothing (`xlsent.failures.configfile_guard`).

This works on Snakemake's scheduler-plugin view of the DAG (`needrun_jobs`,
`job_dependencies`, `job.output`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol


class _Dag(Protocol):
    def needrun_jobs(self) -> Iterable[Any]: ...

    def job_dependencies(self, job: Any) -> Iterable[Any]: ...


def rebuilt_downstream(dag: _Dag) -> list[Any]:
    """The jobs to run that consume the output of another job to run, consumers first.

    These are the jobs whose outputs are stale only because an input will change: nothing in
    their own record says so, so a kill of the job upstream must not leave them in place.
    """
    needrun = set(dag.needrun_jobs())
    waiting = {job: [dep for dep in dag.job_dependencies(job) if dep in needrun] for job in needrun}
    stale = {job for job, deps in waiting.items() if deps}
    # Kahn's algorithm over the stale jobs, producers before consumers; reversed at the end.
    pending = {job: sum(dep in stale for dep in waiting[job]) for job in stale}
    consumers: dict[Any, list[Any]] = {job: [] for job in stale}
    for job in stale:
        for dep in waiting[job]:
            if dep in stale:
                consumers[dep].append(job)
    ready = sorted((job for job, n in pending.items() if n == 0), key=str)
    order = []
    while ready:
        job = ready.pop()
        order.append(job)
        for consumer in consumers[job]:
            pending[consumer] -= 1
            if pending[consumer] == 0:
                ready.append(consumer)
    return order[::-1]


def rebuilt_outputs(dag: _Dag) -> list[str]:
    """The existing outputs of `rebuilt_downstream(dag)`, consumers first: what
    `invalidate_rebuilt_outputs` removes (and what `xlsent.failures.configfile_guard` may refuse
    to)."""
    return [
        str(output)
        for job in rebuilt_downstream(dag)
        for output in job.output
        if Path(output).exists() or Path(output).is_symlink()
    ]


def invalidate_rebuilt_outputs(outputs: Sequence[str]) -> None:
    """Remove `outputs` (`rebuilt_outputs`) in their order, consumers first.

    Consumers go first so that a kill in the middle of this still leaves nothing stale: an
    output that survives has an input that still exists, and Snakemake sees it is older.
    """
    for output in outputs:
        path = Path(output)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
