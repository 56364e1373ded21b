"""What the end of a run says of its jobs (`xlsent.failures.end_of_run`): a training's log
that found its checkpoint broken, and a language's clean_stats.json; each read as the jobs
write them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xlsent.corpus.bitext import moses_files
from xlsent.corpus.clean import clean
from xlsent.failures.end_of_run import dropped, report, restart
from xlsent.io import write_json

# A training job's log as `xlsent train` writes it (xlsent.cli's format), lines cut to what
# the notice reads.
LAST = "results/checkpoints/tr/seed42/last.pt"
BROKEN = (
    f"2026-01-31 12:00:00,000 WARNING xlsent.train.checkpoints: {LAST} does not load "
    "(PytorchStreamReader failed reading zip archive: failed finding central directory): the "
    f"file is truncated or corrupt; moved it to {LAST}.unreadable"
)


def _log(path: Path, *lines: str) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def test_a_training_that_resumed_from_the_checkpoint_before_its_last_says_where(tmp_path):
    previous = "results/checkpoints/tr/seed42/previous.pt"
    log = _log(
        tmp_path / "seed42.log",
        BROKEN,
        "2026-01-31 12:00:00,001 WARNING xlsent.train.checkpoints: resuming from the checkpoint "
        f"before it, {previous}",
        f"2026-01-31 12:00:01,000 INFO xlsent.train.loop: resumed from {previous} at step 8",
    )
    assert restart(log) == (
        f"  {log}: {LAST} did not load (PytorchStreamReader failed reading zip archive: failed "
        f"finding central directory): the training resumed from {previous} at step 8; the cost "
        "table counts the time of the jobs before"
    )


def test_a_training_that_started_over_says_so_and_one_that_resumed_says_nothing(tmp_path):
    over = _log(
        tmp_path / "over.log",
        BROKEN,
        "2026-01-31 12:00:00,001 WARNING xlsent.train.checkpoints: no checkpoint of "
        "results/checkpoints/tr/seed42 loads: training starts over at step 0",
    )
    assert restart(over).endswith(
        "), nor any checkpoint before it: the training started over at step 0; the cost table "
        "counts the time of the jobs before"
    )
    resumed = _log(
        tmp_path / "resumed.log",
        f"2026-01-31 12:00:01,000 INFO xlsent.train.loop: resumed from {LAST} at step 8",
    )
    assert restart(resumed) is None
    assert restart(tmp_path / "missing.log") is None


def test_a_languages_drops_name_the_file_of_lines_that_are_not_utf8(tmp_path):
    """clean_stats.json as the clean job writes it, from files with bad bytes on either side."""
    en = [b"Open the file in the editor", b"Show all \xff the hidden files", b"Save the file now"]
    kk = ["Файлды редакторда қазір ашыңыз", "Барлық жасырын файлдарды көрсету"]
    xx = [line.encode() for line in kk] + [b"\xc3"]
    paths = [tmp_path / "l10n.en-kk.en", tmp_path / "l10n.en-kk.kk"]
    for path, lines in zip(paths, (en, xx), strict=True):
        path.write_bytes(b"".join(line + b"\n" for line in lines))
    stats = clean([moses_files("l10n", *paths)], "kk", tmp_path / "clean.parquet")
    write_json(tmp_path / "clean_stats.json", stats)
    assert dropped(tmp_path / "clean_stats.json") == (
        f"  kk: kept 1 of 3 pairs; dropped 2 not valid UTF-8 ({paths[0]} line 2; {paths[1]} line 3)"
    )


def test_drops_beyond_the_examples_kept_are_marked_and_no_drop_is_no_list(tmp_path):
    stats = {
        "lang": "fr",
        "read": 1000,
        "kept": 900,
        "dropped": {"invalid_utf8": 7, "empty": 0, "too_short": 93},
        "examples": {"invalid_utf8": [f"corpus/a.fr:{n}" for n in (1, 2, 3, 4, 5)]},
    }
    write_json(tmp_path / "fr.json", stats)
    assert dropped(tmp_path / "fr.json") == (
        "  fr: kept 900 of 1000 pairs; dropped 7 not valid UTF-8 (corpus/a.fr line 1, 2, 3, 4, "
        "5, ...), 93 too_short"
    )
    write_json(tmp_path / "de.json", {**stats, "lang": "de", "kept": 1000, "dropped": {}})
    assert dropped(tmp_path / "de.json") == "  de: kept 1000 of 1000 pairs"


@dataclass(frozen=True)
class _Rule:
    name: str


@dataclass(frozen=True)
class _Job:
    rule: _Rule
    log: tuple[str, ...] = ()
    output: tuple[str, ...] = ()
    members: tuple = field(default=())

    def is_group(self) -> bool:
        return bool(self.members)

    def __iter__(self):
        return iter(self.members)


class _Dag:
    def __init__(self, jobs: list, finished: list):
        self.jobs, self._finished = jobs, finished

    def finished(self, job) -> bool:
        return job in self._finished


def test_the_report_reads_the_jobs_that_ran_and_failed_in_a_group_too(tmp_path):
    log = str(
        _log(
            tmp_path / "train.log",
            BROKEN,
            "… no checkpoint of x loads: training starts over at step 0",
        )
    )
    stats = tmp_path / "clean_stats.json"
    write_json(stats, {"lang": "kk", "read": 2, "kept": 2, "dropped": {}, "examples": {}})
    clean_job = _Job(_Rule("clean"), output=(str(tmp_path / "clean.parquet"), str(stats)))
    old_clean = _Job(_Rule("clean"), output=(str(stats),))  # planned, not run: not reported
    train = _Job(_Rule("train"), log=(log,))
    dag = _Dag([clean_job, old_clean, train], finished=[clean_job])
    assert report(dag, [_Job(_Rule("group"), members=(train,))]) == [
        "Trainings that could not resume from their latest checkpoint:",
        restart(Path(log)),
        "Pairs each language's cleaning dropped (its clean_stats.json):",
        "  kk: kept 2 of 2 pairs",
    ]
    assert report(_Dag([old_clean], []), []) == []
