"""What keeps a killed run from leaving results that a rerun trusts, and a plain rerun working.

**Stale outputs.** Snakemake deletes a job's outputs when the job starts, not when it decides
to rebuild them. If a job is killed, its outputs are gone, and the outputs computed from
them earlier look up to date to the next run: Snakemake does not rebuild a missing
intermediate file whose consumers are complete (its rule for temporary files). After a
settings change and a killed `train`, evaluation, tables and plots would keep the old
model's numbers. `invalidate_rebuilt_outputs` closes that gap: when a run starts, every
output that will be rebuilt because something it was computed from is rebuilt is removed at
once, consumers first. A kill at any later moment then leaves those outputs missing, and the
next run rebuilds them and what they need.

**Stale locks.** Snakemake locks the working directory and releases it when it stops; a
Snakemake killed with SIGKILL (an out-of-memory kill, a closed session, a reboot) leaves the
lock behind, and the next run refuses to start until `snakemake --unlock`. A local run
records who holds the lock (`record_lock_owner`); `release_stale_lock` removes the lock
when that process and every process of its group are gone, or the machine has rebooted since.
A run through a cluster executor never releases its lock this way: its jobs may still be
running in the cluster's queue, where no local check can see them.

**Broken inputs.** A file can break after its job ended (a copy of `results/` cut short), and
then looks newer than what was computed from it: the run plans those consumers again and
would remove their outputs before one of them fails on the file. `set_aside_unreadable_inputs`
checks, as the run starts, the files it reads and does not rebuild (`xlsent.readback`): a
broken one is moved aside and the run stops before it removes or runs anything.

These work on Snakemake's scheduler-plugin view of the DAG (`needrun_jobs`,
`job_dependencies`, `job.output`) and its lock directory, `.snakemake/locks`.

**One writer per training run.** A Snakemake killed alone leaves its jobs running; whoever
then forces the lock away (`snakemake --unlock`) and reruns would start the same training job
a second time, two processes writing one checkpoint directory. `sole_writer` holds the
directory for its job with an exclusive `flock`, which the kernel drops when the process
ends however it ends, so no stale lock survives a kill; the second job stops at once, naming
the first.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from xlsent import readback
from xlsent.errors import XlsentError


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


def set_aside_unreadable_inputs(dag: _Dag) -> list[str]:
    """Move aside the files that the jobs to run read and no job to run rebuilds, where they
    do not read back (`xlsent.readback`); return what to tell the user (nothing: all read).

    Such a file broke after its job ended (a copy cut short), which made it newer than what
    was computed from it: the run plans those consumers again and would remove their outputs
    (`invalidate_rebuilt_outputs`) before one fails on it. Found here first, nothing is
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
                why = readback.problem(path)
                if why is not None:
                    broken[path] = why
    lines = [
        f"{path} does not read back ({why}): the file is truncated or corrupt, broken after "
        f"the job that wrote it ended; moved it to {readback.set_aside(path)}."
        for path, why in sorted(broken.items())
    ]
    if lines:
        lines.append(
            "Nothing was removed or run. Run the same command again: it remakes a file set "
            "aside where a job needs it, and keeps the results computed from it before it broke."
        )
    return lines


def invalidate_rebuilt_outputs(dag: _Dag) -> list[str]:
    """Remove the existing outputs of `rebuilt_downstream(dag)`, consumers first; return them.

    Consumers go first so that a kill in the middle of this still leaves nothing stale: an
    output that survives has an input that still exists, and Snakemake sees it is older.
    """
    removed = []
    for job in rebuilt_downstream(dag):
        for output in job.output:
            path = Path(output)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
            else:
                continue
            removed.append(str(output))
    return removed


# -- locks -------------------------------------------------------------------------------

OWNER_RECORD = "xlsent-lock-owner.json"


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks since boot), so a reused pid is not taken for it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    return int(stat.rsplit(")", 1)[1].split()[19])


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (not zombies: an exited job whose parent,
    a killed Snakemake, can no longer collect it is not running)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        state, _, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def record_lock_owner(snakemake_dir: str | os.PathLike[str], executor: str) -> None:
    """Record this Snakemake process as the holder of the lock (called once it holds it)."""
    pid = os.getpid()
    record = {
        "host": socket.gethostname(),
        "boot_id": _boot_id(),
        "pid": pid,
        "pgid": os.getpgid(pid),
        "start_ticks": _start_ticks(pid),
        "executor": executor,
    }
    path = Path(snakemake_dir) / OWNER_RECORD
    path.write_text(json.dumps(record) + "\n")


def lock_status(snakemake_dir: str | os.PathLike[str]) -> tuple[bool, str | None]:
    """(whether the lock in `snakemake_dir` is stale, why), or (False, None) when there is no
    lock or nothing can be told about it."""
    if not any((Path(snakemake_dir) / "locks").glob("*.lock")):
        return False, None
    try:
        owner = json.loads((Path(snakemake_dir) / OWNER_RECORD).read_text())
    except (OSError, ValueError):
        return False, None  # a lock we did not record (another command or version): keep it
    if owner.get("executor") != "local" or owner.get("host") != socket.gethostname():
        return False, None
    pid = owner["pid"]
    if owner.get("boot_id") is not None and owner["boot_id"] != _boot_id():
        return True, f"Snakemake (pid {pid}) held it before this machine rebooted"
    started = _start_ticks(pid)
    if started is not None and started == owner.get("start_ticks"):
        return False, None  # still running
    if owner.get("pgid") != pid:
        return False, None  # its jobs shared a process group with others: can't tell
    survivors = group_members(pid)
    if survivors:
        return False, (
            f"Snakemake (pid {pid}) was killed but its jobs are still running (pids "
            f"{', '.join(map(str, survivors))}): wait for them or kill them, then run again"
        )
    return True, f"Snakemake (pid {pid}) was killed, and none of its jobs is still running"


def release_stale_lock(snakemake_dir: str | os.PathLike[str]) -> tuple[bool, str | None]:
    """Remove the lock left by a killed local Snakemake; return `lock_status` before it."""
    stale, why = lock_status(snakemake_dir)
    if stale:
        for lock in (Path(snakemake_dir) / "locks").glob("*.lock"):
            lock.unlink(missing_ok=True)
        (Path(snakemake_dir) / OWNER_RECORD).unlink(missing_ok=True)
    return stale, why


WRITER_LOCK = ".writer"


class BusyDirectoryError(XlsentError):
    """Another live process writes the directory; the message names it and what to do."""


@contextmanager
def sole_writer(directory: str | os.PathLike[str]) -> Iterator[None]:
    """Hold `directory` (created if missing) for this process alone while inside: an
    exclusive, non-blocking `flock` on its `.writer` file, which records the holder for the
    message a second writer gets."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / WRITER_LOCK, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise BusyDirectoryError(
                f"{directory} is being written by {holder}, a job of an earlier run that is "
                "still going (a Snakemake killed alone leaves its jobs running): wait for it "
                "to end or stop it, then run the same command again"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
