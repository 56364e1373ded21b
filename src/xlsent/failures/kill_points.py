"""Named kill points: how the recovery tests kill a job at an exact moment, with SIGKILL.

A long-running command calls `kill_point("train.checkpoint")` at the moments where a kill
is most likely to leave damage (half an output written, a checkpoint just saved, an
evaluation running). Nothing happens unless the environment variable `XLSENT_KILL_AT`
names the point: then the process kills its children and itself with SIGKILL, as an
out-of-memory killer or a cluster's time limit would, without running any cleanup.

`XLSENT_KILL_AT` is a comma-separated list of points, each optionally `point@n` to die at
its n-th passage (default the first). `XLSENT_KILL_LOG`, when set, is a file to which the
point's name is appended before the kill, so that a test knows which point fired; a point
then fires once per log, in the first process that reaches it: the jobs of one rule that
run beside it go on (a run of every point armed kills one job of each kind, not every job
of the rules it reaches, each of which would start again).

A training of several processes passes its points in each of them: `XLSENT_KILL_RANK` kills
only the process of that rank (the others then see a peer die), and `XLSENT_TERM_LAUNCHER`
makes the point send SIGTERM to the process's launcher (its parent) instead, as Slurm does
when it preempts the job, and go on once the launcher has passed it back.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from collections import Counter
from pathlib import Path

_passages: Counter[str] = Counter()


def _armed() -> dict[str, int]:
    armed = {}
    for item in os.environ.get("XLSENT_KILL_AT", "").split(","):
        name, _, count = item.strip().partition("@")
        if name:
            armed[name] = int(count or 1)
    return armed


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, from /proc (parents before their children)."""
    parent_of = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            # The command name (field 2) may hold spaces: the parent pid follows its ")".
            parent_of[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parent_of.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _claim(log: Path, name: str) -> bool:
    """Append `name` to the kill log unless it is there already: whether this process fires.
    Under the log's lock, so that of two jobs reaching the point at once one fires."""
    with open(log, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        if name in f.read().split():
            return False
        f.write(f"{name}\n")
        f.flush()
    return True


def kill_point(name: str) -> None:
    """SIGKILL this process (and its descendants) here if `XLSENT_KILL_AT` names `name`."""
    armed = _armed()
    if name not in armed:
        return
    rank = os.environ.get("XLSENT_KILL_RANK")
    if rank is not None and os.environ.get("RANK", "0") != rank:
        return
    _passages[name] += 1
    if _passages[name] != armed[name]:
        return
    if (log := os.environ.get("XLSENT_KILL_LOG")) and not _claim(Path(log), name):
        return
    if os.environ.get("XLSENT_TERM_LAUNCHER"):
        # Preempted here, not a step or two later: wait for the SIGTERM the launcher passes
        # on, then let this process's handler take it, so that the processes agree to stop
        # at this step. Without the wait, a short run on a busy machine could finish its last
        # steps before the launcher's signal arrived, and export instead of stopping.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        os.kill(os.getppid(), signal.SIGTERM)
        signal.sigtimedwait({signal.SIGTERM}, 60)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        signal.raise_signal(signal.SIGTERM)
        return
    for pid in reversed(_descendants(os.getpid())):
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            os.kill(pid, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
