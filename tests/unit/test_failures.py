"""xlsent.failures: what the console shows of a failed job's logs (the workflow's side is
tests/workflow/test_console_errors.py)."""

from __future__ import annotations

import os
from types import SimpleNamespace

from xlsent import failures

ERROR = "2026-01-31 12:00:00,000 ERROR xlsent: data/kk.gz: the gzip stream ends early"


def test_a_group_shows_the_error_line_of_its_failed_job_only(tmp_path):
    """A cluster group (clean -> sample -> words): clean succeeded, sample failed, words
    never ran."""
    clean, sample, words = (tmp_path / f"{rule}.log" for rule in ("clean", "sample", "words"))
    clean.write_text("clean kk: 0.00 pairs [00:00]\rclean kk: 1.49k pairs [00:05]\n")
    sample.write_text(f"2026-01-31 11:59:59,000 INFO xlsent: reading\n{ERROR}\n")
    group = SimpleNamespace(log=[str(clean), str(sample), str(words)])
    assert failures.report([group]) == [
        f"{sample}:",
        "    ERROR xlsent: data/kk.gz: the gzip stream ends early",
    ]


def test_without_an_error_line_the_tail_of_the_log_written_last(tmp_path):
    """A bug's traceback ends with the exception; the earlier job's log is older."""
    older, newer = tmp_path / "clean.log", tmp_path / "sample.log"
    older.write_text("clean kk: 1.49k pairs [00:05]\n")
    frame = '  File "x.py", line 1, in f\n    f()\n'
    newer.write_text(f"Traceback (most recent call last):\n{frame * 9}KeyError: 'x'\n\n")
    os.utime(older, (0, 0))
    group = SimpleNamespace(log=[str(newer), str(older)])
    assert failures.report([group], tail=3) == [
        f"{newer}:",
        '      File "x.py", line 1, in f',
        "        f()",
        "    KeyError: 'x'",
    ]


def test_a_job_without_a_log_says_nothing(tmp_path):
    assert (
        failures.report([SimpleNamespace(log=[]), SimpleNamespace(log=[str(tmp_path / "x")])]) == []
    )
