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
records who holds the lock and marks the jobs it starts (`record_lock_owner`: an environment
variable they inherit, whatever process group they are in); `release_stale_lock` removes
the lock when that process and every marked process are gone, or the machine has rebooted
since. A run through a cluster executor never releases its lock this way: its jobs may still
be running in the cluster's queue, where no local check can see them; the message says so.

**Broken inputs.** A file can break after its job ended (a copy of `results/` cut short), and
then looks newer than what was computed from it: the run plans those consumers again and
would remove their outputs before one of them fails on the file. `set_aside_unreadable_inputs`
checks, as the run starts, the files it reads and does not rebuild (`xlsent.readback`): a
broken one is moved aside and the run stops before it removes or runs anything. Snakemake then
has nothing to do (it remakes a missing file only where a job needs it again), so every run
names the files set aside and still missing (`still_set_aside`), with the user's command
that remakes them.

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
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
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


def set_aside_unreadable_inputs(
    dag: _Dag, snakemake_dir: str | os.PathLike[str], argv: Sequence[str]
) -> list[str]:
    """Move aside the files that the jobs to run read and no job to run rebuilds, where they
    do not read back (`xlsent.readback`); return what to tell the user (nothing: all read),
    with the command `argv` (this run's) that remakes them, and record them in
    `snakemake_dir` for the runs after (`still_set_aside`).

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
    return "To remake it now, and what was computed from it: " + readback.remake_command(
        sorted(paths), argv
    )


def rebuilt_outputs(dag: _Dag) -> list[str]:
    """The existing outputs of `rebuilt_downstream(dag)`, consumers first: what
    `invalidate_rebuilt_outputs` removes (and what `xlsent.configfiles` may refuse to)."""
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


# -- locks -------------------------------------------------------------------------------

OWNER_RECORD = "xlsent-lock-owner.json"
# The environment variable that marks every process a run starts (its jobs inherit it, and
# what they start): found by it in any process group, also when Snakemake led none (started
# by a script, its jobs share the script's group).
RUN_MARK = "XLSENT_RUN"


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


def marked(mark: str) -> list[int]:
    """The live processes whose environment carries the run mark `mark` (`RUN_MARK`): a
    zombie's environment reads empty, another user's not at all."""
    needle = f"{RUN_MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue  # ended meanwhile, or not ours
        if needle in environment.split(b"\0"):
            found.append(int(entry.name))
    return found


def record_lock_owner(snakemake_dir: str | os.PathLike[str], executor: str) -> None:
    """Record this Snakemake process as the holder of the lock (called once it holds it),
    and mark the jobs it starts (`RUN_MARK`) so that a later run can find them."""
    pid = os.getpid()
    mark = f"{socket.gethostname()}:{pid}:{_start_ticks(pid)}"
    os.environ[RUN_MARK] = mark  # Snakemake starts each job with a copy of os.environ
    record = {
        "host": socket.gethostname(),
        "boot_id": _boot_id(),
        "pid": pid,
        "pgid": os.getpgid(pid),
        "start_ticks": _start_ticks(pid),
        "executor": executor,
        "mark": mark,
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
    if owner.get("host") != socket.gethostname():
        return False, None
    pid = owner["pid"]
    rebooted = owner.get("boot_id") is not None and owner["boot_id"] != _boot_id()
    started = _start_ticks(pid)
    if not rebooted and started is not None and started == owner.get("start_ticks"):
        return False, None  # still running
    if owner.get("executor") != "local":
        return False, (
            f"Snakemake (pid {pid}) was killed, and its jobs, run by the {owner.get('executor')} "
            "executor, may still be queued or running where no local check sees them: cancel "
            "what it left (`squeue --me`, `scancel`), then `snakemake --unlock` and the same "
            "command"
        )
    if rebooted:
        return True, f"Snakemake (pid {pid}) held it before this machine rebooted"
    if "mark" in owner:
        survivors = marked(owner["mark"])
    elif owner.get("pgid") == pid:  # recorded by an older xlsent: its jobs are its group
        survivors = group_members(pid)
    else:
        return False, (
            f"Snakemake (pid {pid}) was killed, and whether its jobs still run cannot be told "
            "(an older xlsent recorded its lock): once `ps` shows none of them, run "
            "`snakemake --unlock` and the same command"
        )
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
def sole_writer(
    directory: str | os.PathLike[str], log: str | os.PathLike[str] | None = None
) -> Iterator[None]:
    """Hold `directory` (created if missing) for this process alone while inside: an
    exclusive, non-blocking `flock` on its `.writer` file, which records the holder for the
    message a second writer gets.

    `log` is the job's log, which its stderr appends to (`2>> LOG`: a second writer's line
    then cannot be overwritten). Snakemake removes a job's log before the job starts, so a
    second job of the same output would take the holder's away: the holder keeps a second
    name for it (`holders_log`), and a job refused puts it back and appends its refusal."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / WRITER_LOCK, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            if log is not None:
                _continue_holders_log(Path(log))
            raise BusyDirectoryError(
                f"{directory} is being written by {holder}, a job of an earlier run that is "
                "still going (a Snakemake killed alone leaves its jobs running): wait for it "
                "to end or stop it, then run the same command again"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        handle.flush()
        second = None if log is None else holders_log(Path(log))
        if second is not None and Path(log).exists():  # stderr goes there (not by hand: a tty)
            with suppress(OSError):  # a file system without hard links: the log goes unkept
                _link(Path(log), second)
        try:
            yield
        finally:
            if second is not None:
                second.unlink(missing_ok=True)
            fcntl.flock(handle, fcntl.LOCK_UN)


def holders_log(log: Path) -> Path:
    """The second name of a holder's `log`, beside it (a hard link: the same file system)."""
    return log.with_name(f".{log.name}.holder")


def _link(source: Path, name: Path) -> None:
    """Give the file `source` the name `name` too, in place of what had that name."""
    name.unlink(missing_ok=True)
    os.link(source, name)


def _continue_holders_log(log: Path) -> None:
    """Put the holder's log (its second name) back at `log`, and send this process's stderr
    to its end, where its refusal is appended after the holder's lines."""
    if not holders_log(log).exists():
        return  # the holder ran without a log (by hand): nothing was taken from it
    _link(holders_log(log), log)
    appending = os.open(log, os.O_WRONLY | os.O_APPEND)
    os.dup2(appending, sys.stderr.fileno())
    os.close(appending)
