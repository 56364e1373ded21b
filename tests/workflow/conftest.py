"""Fixtures of the workflow tests: runs of the real Snakemake workflow in scratch directories.

The helpers that run Snakemake (`snakemake`, `planned_jobs`, `write_config`, ...) are in
tests/support.py; only fixtures live here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import demo_config, snakemake, write_config


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo DAG run once, from an empty directory, as `make demo` runs it: every target
    of `rule all` (the tables and the alignments)."""
    workdir = tmp_path_factory.mktemp("demo")
    configfile = write_config(workdir / "config.yaml", demo_config())
    snakemake(workdir, "--cores", "2", "--max-threads", "1", "--configfile", str(configfile))
    return workdir
