"""Snakemake's scheduler with one reevaluation timer (`xlsent.scheduler`), on toy workflows
run by Snakemake itself: as many passes as jobs end (and one a second while they run), not one
more a second for every job that ended, and a rate limit that holds jobs back still lets every
one of them run."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xlsent import scheduler

JOBS = 16
SNAKEFILE = f"""
import xlsent.scheduler

xlsent.scheduler.one_timer()

rule all:
    input: expand("out/{{i}}", i=range({JOBS}))

rule one:
    output: "out/{{i}}"
    shell: "sleep 0.5; touch {{output}}"
"""


def _run(workdir: Path, *args: str) -> tuple[str, float]:
    (workdir / "Snakefile").write_text(SNAKEFILE)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--verbose", *args],
        cwd=workdir, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in (workdir / "out").iterdir()) == sorted(map(str, range(JOBS)))
    return proc.stderr, time.monotonic() - start


def test_the_installed_snakemake_takes_the_one_timer():
    assert scheduler.one_timer()
    assert scheduler.one_timer()  # a second call (the Snakefile parsed again) keeps it


@pytest.mark.slow  # two Snakemake runs of a few seconds
def test_passes_follow_the_jobs_that_end_not_their_square(tmp_path):
    # Upstream, every job that ends adds a pass a second until the run ends: 37 passes here
    # where 16 jobs of 0.5 s ran on 2 cores in 6.4 s; with one timer, 19 in 5.3 s.
    log, seconds = _run(tmp_path)
    passes = log.count("Ready jobs")
    assert passes <= JOBS + math.ceil(seconds) + 4, (passes, seconds)


@pytest.mark.slow
def test_a_rate_limit_still_runs_every_job(tmp_path):
    # 2 submissions a second: the jobs held back run when the pending timer's pass comes.
    _, seconds = _run(tmp_path, "--max-jobs-per-timespan", "2/1s")
    assert seconds >= (JOBS / 2) - 1
