"""One writer per training run's checkpoint directory (`xlsent.failures.locks.sole_writer`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from xlsent.failures.locks import (
    BusyDirectoryError,
    holders_log,
    lock_status,
    release_stale_lock,
    sole_writer,
)


def _holder(directory: Path) -> subprocess.Popen:
    """A process that holds `directory` as its writer until killed (as an orphaned job)."""
    code = textwrap.dedent(
        f"""
        import sys, time
        from xlsent.failures.locks import sole_writer
        with sole_writer({str(directory)!r}):
            print("holding", flush=True)
            time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_a_second_writer_stops_naming_the_first_and_a_kill_frees_the_directory(tmp_path):
    directory = tmp_path / "checkpoints" / "tr" / "seed42"
    first = _holder(directory)
    try:
        busy = pytest.raises(BusyDirectoryError, match=rf"being written by pid {first.pid} on ")
        with busy, sole_writer(directory):
            pass
    finally:
        os.kill(first.pid, signal.SIGKILL)  # as kill -9 or an out-of-memory kill
        first.wait()
    # The kernel released the lock with the process: no stale lock, the rerun writes.
    with sole_writer(directory):
        assert (directory / ".writer").read_text() == (
            f"pid {os.getpid()} on {os.uname().nodename}\n"
        )


def test_the_directory_is_free_again_once_its_writer_is_done(tmp_path):
    busy = pytest.raises(BusyDirectoryError, match=f"pid {os.getpid()} ")
    with sole_writer(tmp_path), busy, sole_writer(tmp_path):
        pass
    with sole_writer(tmp_path):
        pass


def _job(code: str, log: Path) -> subprocess.Popen:
    """A job as a rule's shell starts it: `python -c CODE 2>> LOG`."""
    with open(log, "a") as stderr:
        return subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def test_a_refused_job_keeps_the_running_jobs_log_and_appends_its_refusal(tmp_path):
    """The report: after `snakemake --unlock` and a rerun while an orphaned trainer still
    ran, the new job was refused, but the orphan's log was gone: Snakemake removes a job's
    log before it starts it, and the shell's `2> LOG` made a new one for the refusal."""
    directory, log = tmp_path / "checkpoints" / "tr" / "seed42", tmp_path / "seed42.log"
    holder = _job(
        f"""
        import sys
        from xlsent.failures.locks import sole_writer
        with sole_writer({str(directory)!r}, {str(log)!r}):
            print("step 1", file=sys.stderr, flush=True)
            print("holding", flush=True)
            sys.stdin.readline()  # until the refused job is done
            print("step 2", file=sys.stderr, flush=True)
        """,
        log,
    )
    assert holder.stdout.readline().strip() == "holding"
    log.unlink()  # Snakemake, as it starts the second job
    refused = _job(
        f"""
        import logging, sys
        from xlsent.failures.locks import BusyDirectoryError, sole_writer
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
        try:
            with sole_writer({str(directory)!r}, {str(log)!r}):
                pass
        except BusyDirectoryError as err:
            logging.getLogger("xlsent").error("%s", err)
            sys.exit(2)
        """,
        log,
    )
    assert refused.wait(timeout=60) == 2
    holder.communicate("go on\n", timeout=60)
    assert holder.returncode == 0
    first, refusal, last = log.read_text().splitlines()
    assert (first, last) == ("step 1", "step 2")  # the holder's whole log, in its place
    assert refusal.startswith(f"ERROR xlsent: {directory} is being written by pid {holder.pid}")
    assert not holders_log(log).exists()  # its second name goes with the holder


def test_the_lock_of_a_killed_snakemake_that_led_no_process_group_is_released_when_its_jobs_end(
    tmp_path,
):
    """The report: Snakemake started from a wrapper script (its jobs in the script's process
    group) and killed: no line, and the lock was never released, even after its jobs ended.
    Its jobs now carry the run's mark in their environment, whatever their group."""
    snakemake_dir = tmp_path / ".snakemake"
    (snakemake_dir / "locks").mkdir(parents=True)
    (snakemake_dir / "locks" / "0.input.lock").touch()
    # "Snakemake": records the lock, starts a job (a child that outlives it), reports both.
    code = textwrap.dedent(
        f"""
        import os, subprocess, sys, time
        from xlsent.failures.locks import record_lock_owner
        record_lock_owner({str(snakemake_dir)!r}, "local")
        # The job says it runs once it does: a process that has just been started may not
        # have its environment yet (the kernel sets it as its exec completes), and this
        # "Snakemake" is killed within the same moment.
        job = subprocess.Popen(
            [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(600)"],
            start_new_session=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert job.stdout.readline().strip() == "up"
        print(os.getpgid(0), job.pid, flush=True)
        time.sleep(600)
        """
    )
    snakemake = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    group, job = map(int, snakemake.stdout.readline().split())
    try:
        assert group != snakemake.pid  # it leads no group, as under a wrapper script
        assert lock_status(snakemake_dir) == (False, None)  # alive: its lock
        os.kill(snakemake.pid, signal.SIGKILL)
        snakemake.wait()
        assert lock_status(snakemake_dir) == (
            False,
            f"Snakemake (pid {snakemake.pid}) was killed but its jobs are still running (pids "
            f"{job}): wait for them or kill them, then run again",
        )
    finally:
        os.kill(job, signal.SIGKILL)
    _wait_gone(job)
    assert release_stale_lock(snakemake_dir) == (
        True,
        f"Snakemake (pid {snakemake.pid}) was killed, and none of its jobs is still running",
    )
    assert not any((snakemake_dir / "locks").iterdir())


def _wait_gone(pid: int, timeout: float = 30) -> None:
    """Until `pid` is reaped (by init: its parent is gone)."""
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid):
        assert time.monotonic() < deadline, f"{pid} did not end"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
