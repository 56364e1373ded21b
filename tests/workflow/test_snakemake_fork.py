"""The tests' Snakemake runs, forked from a process that has imported Snakemake
(tests/snakemake_fork.py), are what a new `python -m snakemake` process gives: the same
output but for the run's date and id (and the order of jobs that do not depend on each
other), the same exit status, the run's own environment, a hang killed at its timeout."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import snakemake_fork
from support import demo_config, snakemake_command, snakemake_env, write_config

pytestmark = pytest.mark.workflow


def _fork(workdir: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300):
    command = snakemake_command(workdir, *args)
    return snakemake_fork.run(command, env or snakemake_env(), timeout)


def _jobs(stdout: str) -> list[str]:
    """What a dry run plans, in a fixed order: its jobs' outputs."""
    return sorted(re.findall(r"^\s+output: .*$", stdout, flags=re.MULTILINE))


@pytest.mark.parametrize("refused", [False, True], ids=["planned", "refused"])
def test_a_forked_run_prints_and_exits_as_a_new_process(refused, tmp_path):
    config = demo_config()
    if refused:
        config["languages"] = ["xx"]  # no such language: the config check stops the run
    args = ("--dry-run", "--configfile", str(write_config(tmp_path / "config.yaml", config)))
    fresh = subprocess.run(
        snakemake_command(tmp_path, *args),
        capture_output=True,
        text=True,
        env=snakemake_env(),
        timeout=300,
    )
    before = snakemake_fork.cpu_seconds()
    forked = _fork(tmp_path, *args)
    assert forked.returncode == fresh.returncode == refused
    assert forked.stderr == fresh.stderr
    assert not refused or "xx" in forked.stdout
    assert _jobs(forked.stdout) == _jobs(fresh.stdout)
    command = re.compile(r"^  Command: .*$", flags=re.MULTILINE)
    assert command.findall(forked.stdout) == command.findall(fresh.stdout)
    # Its CPU (a dry run: about a second) is counted for the test.
    assert snakemake_fork.cpu_seconds() - before > 0.2


def test_each_run_has_its_own_environment(tmp_path):
    """`--envvars NAME` stops a run where NAME is not set: set for one run, it is not for the
    next one forked from the same server."""
    configfile = str(write_config(tmp_path / "config.yaml", demo_config()))
    args = ("--dry-run", "--configfile", configfile, "--envvars", "XLSENT_FORK_PROBE")
    assert _fork(tmp_path, *args, env=snakemake_env(XLSENT_FORK_PROBE="1")).returncode == 0
    refused = _fork(tmp_path, *args)
    assert refused.returncode == 1
    assert "requested by the workflow but undefined" in refused.stderr + refused.stdout


def test_a_hang_is_killed_at_its_timeout(tmp_path):
    configfile = str(write_config(tmp_path / "config.yaml", demo_config()))
    with pytest.raises(subprocess.TimeoutExpired):
        _fork(tmp_path, "--cores", "1", "--configfile", configfile, timeout=0.5)
    # The run is gone: the next one in the directory plans the work, not refused by a lock.
    again = _fork(tmp_path, "--dry-run", "--configfile", configfile)
    assert again.returncode == 0, again.stderr
