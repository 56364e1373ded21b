"""One writer per training run's checkpoint directory (`xlsent.recovery.sole_writer`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from xlsent.recovery import BusyDirectoryError, sole_writer


def _holder(directory: Path) -> subprocess.Popen:
    """A process that holds `directory` as its writer until killed (as an orphaned job)."""
    code = textwrap.dedent(
        f"""
        import sys, time
        from xlsent.recovery import sole_writer
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
