"""Locks: the Snakemake lock a killed run leaves behind, and one writer per training run.

**Stale locks.** Snakemake locks the working directory and releases it when it stops; a
Snakemake killed with SIGKILL (an out-of-memory kill, a closed session, a reboot) leaves the
lock behind, and the next run refuses to start until `snakemake --unlock`. A local run
records who holds the lock and marks the jobs it starts (`record_lock_owner`: an environment
variable they inherit, whatever process group they are in); `release_stale_lock` removes
the lock when that process and every marked process are gone, or the machine has rebooted
since. A run through a cluster executor never releases its lock this way: its jobs may still
be running in the cluster's queue, where no local check can see them; the message says so.
The lock is Snakemake's lock directory, `.snakemake/locks`.

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
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from xlsent.failures.errors import XlsentError

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
