"""Kill points: a named point kills the process that reaches it, and with a kill log it
fires once, in the first process, so that a run of every point armed kills one job of each
kind (tests/workflow/test_kill_anywhere.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

PASS_POINT = (
    "from xlsent.failures.kill_points import kill_point\n"
    "kill_point('clean')\n"
    "kill_point('clean')\n"
    "print('passed')\n"
)


def _pass(env: dict[str, str]) -> subprocess.CompletedProcess:
    """A process that passes the point `clean` twice, then prints `passed`."""
    return subprocess.run(
        [sys.executable, "-c", PASS_POINT], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def env() -> dict[str, str]:
    """This environment without the test session's own kill settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("XLSENT_KILL")}


def test_an_armed_point_kills_at_its_passage_and_a_log_fires_it_once(env, tmp_path: Path):
    log = tmp_path / "kills.log"
    assert _pass(env).stdout == "passed\n"  # nothing armed
    armed = {**env, "XLSENT_KILL_AT": "other,clean", "XLSENT_KILL_LOG": str(log)}
    first = _pass(armed)
    assert first.returncode == -signal.SIGKILL and first.stdout == ""
    assert log.read_text() == "clean\n"
    # The second job to reach it goes on: the point is in the log.
    assert _pass(armed).stdout == "passed\n"
    assert log.read_text() == "clean\n"


def test_a_point_armed_at_its_second_passage_kills_there_without_a_log(env):
    armed = {**env, "XLSENT_KILL_AT": "clean@2"}
    for _ in range(2):  # no log: every process that reaches it dies
        assert _pass(armed).returncode == -signal.SIGKILL
    assert _pass({**env, "XLSENT_KILL_AT": "clean@3"}).stdout == "passed\n"
