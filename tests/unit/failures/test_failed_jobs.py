"""xlsent.failures.failed_jobs: what the console shows of a failed job's logs (the workflow's
side is tests/workflow/test_console_errors.py)."""

from __future__ import annotations

import os
from types import SimpleNamespace

from xlsent.failures import failed_jobs

ERROR = "2026-01-31 12:00:00,000 ERROR xlsent: data/kk.gz: the gzip stream ends early"


def test_a_group_shows_the_error_line_of_its_failed_job_only(tmp_path):
    """A cluster group (clean -> sample -> words): clean succeeded, sample failed, words
    never ran."""
    clean, sample, words = (tmp_path / f"{rule}.log" for rule in ("clean", "sample", "words"))
    clean.write_text("clean kk: 0.00 pairs [00:00]\rclean kk: 1.49k pairs [00:05]\n")
    sample.write_text(f"2026-01-31 11:59:59,000 INFO xlsent: reading\n{ERROR}\n")
    group = SimpleNamespace(log=[str(clean), str(sample), str(words)])
    assert failed_jobs.report([group]) == [
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
    assert failed_jobs.report([group], tail=3) == [
        f"{newer}:",
        '      File "x.py", line 1, in f',
        "        f()",
        "    KeyError: 'x'",
    ]


def test_a_job_without_a_log_says_nothing(tmp_path):
    assert (
        failed_jobs.report([SimpleNamespace(log=[]), SimpleNamespace(log=[str(tmp_path / "x")])])
        == []
    )


def _training_log(path, *lines: str):
    stamp = "2026-01-31 12:00:00,000 INFO xlsent.train.loop: "
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{stamp}{line}\n" for line in lines))
    return path


def _snakemake_log(path, command: str, status: int):
    """Snakemake's log of the run, as it records a failed local job."""
    path.write_text(
        'RuleException:\nCalledProcessError in file "/x/workflow/rules/train.smk", line 70:\n'
        f"Command 'set -euo pipefail;  {command}' returned non-zero exit status {status}.\n"
    )
    return path


def test_a_training_job_killed_by_a_signal_says_what_and_where_it_resumes(tmp_path):
    """The report: the console said "exit status 137" and nothing else."""
    log = _training_log(
        tmp_path / "logs/train/tr/seed42.log",
        "resumed from results/checkpoints/tr/seed42/last.pt at step 40",
        '{"step": 60, "loss": 1.2}',
        "checkpoint at step 80: results/checkpoints/tr/seed42/last.pt",
        '{"step": 100, "loss": 1.1}',
    )
    command = f"xlsent train --settings '{{}}' --out results/models/tr/seed42 --log {log} 2>> {log}"
    said = failed_jobs.report(
        [SimpleNamespace(log=[str(log)])], [_snakemake_log(tmp_path / "sm.log", command, 137)]
    )
    assert said[0] == f"{log}:"
    assert said[-1] == (
        "    Exit status 137 is 128 + SIGKILL: the job was killed (out of memory, a time limit, "
        "or `kill -9`). The same command resumes its training at step 80 "
        "(results/checkpoints/tr/seed42/last.pt)."
    )


def test_a_job_killed_before_its_first_checkpoint_or_not_training(tmp_path):
    log = _training_log(tmp_path / "train.log", "monolingual sentences per language: {}")
    train = f"xlsent train --out m --log {log} 2>> {log}"
    said = failed_jobs.report(
        [SimpleNamespace(log=[str(log)])], [_snakemake_log(tmp_path / "a", train, 137)]
    )
    assert said[-1].endswith("It saved no checkpoint: the same command starts its training over.")
    clean = tmp_path / "clean.log"
    clean.write_text("clean kk: 1.49k pairs [00:05]\n")
    command = f"xlsent clean --lang kk --out x 2> {clean}"
    said = failed_jobs.report(
        [SimpleNamespace(log=[str(clean)])], [_snakemake_log(tmp_path / "b", command, 143)]
    )
    assert said == [
        f"{clean}:",
        "    clean kk: 1.49k pairs [00:05]",
        "    Exit status 143 is 128 + SIGTERM: the job was terminated (a time limit, a shutdown, "
        "or `kill`). The same command runs it again.",
    ]


def test_an_ordinary_exit_status_or_another_jobs_adds_nothing(tmp_path):
    log = tmp_path / "sample.log"
    log.write_text(f"{ERROR}\n")
    other = tmp_path / "other.log"
    logs = [
        _snakemake_log(tmp_path / "a", f"xlsent sample --out x 2> {log}", 2),
        _snakemake_log(tmp_path / "b", f"xlsent sample --out x 2> {other}", 137),
    ]
    assert failed_jobs.report([SimpleNamespace(log=[str(log)])], logs) == [
        f"{log}:",
        "    ERROR xlsent: data/kk.gz: the gzip stream ends early",
    ]
