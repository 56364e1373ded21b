"""The console's word on a planned training that has a checkpoint: resumes, or starts over
and why, read from the record beside `last.pt` (no torch)."""

from __future__ import annotations

import zipfile

from xlsent.train.resume_notes import Note, remove_record, resume_note, write_record
from xlsent.train.settings import TrainSettings, identity


def _checkpoint(directory) -> None:
    """A `last.pt` as torch writes one: a zip archive."""
    with zipfile.ZipFile(directory / "last.pt", "w") as archive:
        archive.writestr("archive/data.pkl", b"state")


def test_the_same_settings_resume_at_the_checkpoints_step(tmp_path):
    settings = identity(TrainSettings(seed=1, lr=1e-3, wacse_weights=(0.8, 0.1, 0.1)))
    write_record(tmp_path, 500, settings, processes=2)
    _checkpoint(tmp_path)
    assert resume_note(tmp_path, settings, 2) == Note(
        f"resumes its training at step 500 ({tmp_path}/last.pt)", starts_over=False
    )
    # What cannot change a number is no part of it.
    later = identity(TrainSettings(seed=1, lr=1e-3, log_every=7, peak_tflops=989.0))
    assert resume_note(tmp_path, later, 2).starts_over is False


def test_other_settings_start_over_naming_each_change(tmp_path):
    write_record(tmp_path, 500, identity(TrainSettings(seed=1, lr=1e-3)), processes=1)
    _checkpoint(tmp_path)
    changed = identity(TrainSettings(seed=1, lr=2e-3, head_lr=1e-2))
    assert resume_note(tmp_path, changed, 2) == Note(
        f"its checkpoint at step 500 ({tmp_path}/last.pt) was trained with other settings "
        "(lr: 0.001 → 0.002, head_lr: (none) → 0.01, processes: 1 → 2): the training starts "
        "over",
        starts_over=True,
    )


def test_a_checkpoint_cut_short_is_said_so(tmp_path):
    settings = identity(TrainSettings(seed=1))
    write_record(tmp_path, 500, settings, processes=1)
    _checkpoint(tmp_path)
    data = (tmp_path / "last.pt").read_bytes()
    (tmp_path / "last.pt").write_bytes(data[: len(data) // 2])
    assert resume_note(tmp_path, settings, 1) == Note(
        f"its checkpoint {tmp_path}/last.pt does not read back (cut short?): the training "
        "resumes from the one before it if that loads, or starts over",
        starts_over=True,
    )


def test_no_record_no_note(tmp_path):
    assert resume_note(tmp_path, {}, 1) is None
    write_record(tmp_path, 3, {}, 1)
    remove_record(tmp_path)
    assert resume_note(tmp_path, {}, 1) is None
    (tmp_path / "last.json").write_text("{")  # cut short
    assert resume_note(tmp_path, {}, 1) is None


def test_status_says_it_for_the_planned_trainings(tmp_path):
    """`xlsent status`: against the settings a job's reason shows (they changed), else
    against the checkpoint's own."""
    from xlsent.status import Job, planned_jobs, training_notes

    checkpoints = tmp_path / "results/checkpoints/tr/seed42"
    checkpoints.mkdir(parents=True)
    write_record(checkpoints, 40, identity(TrainSettings(seed=42, lr=1e-3)), processes=1)
    _checkpoint(checkpoints)
    before = '{"seed": 42, "lr": 0.001, "gpus": 0}'
    now = '{"init": "scratch"}\', \'{"seed": 42, "lr": 0.002, "gpus": 2}'
    dry_run = (
        "rule train:\n    output: results/models/tr/seed42\n"
        "    wildcards: run=tr, seed=42\n"
        f"    reason: Params have changed since last execution: before: '{before}' "
        f"now: '{now}'\n"
    )
    (changed,) = planned_jobs(dry_run)
    killed = Job("train", "run=tr, seed=42", ["results/models/tr/seed42"], ["Incomplete"])
    untrained = Job("train", "run=wacse, seed=0", [], ["Missing output files"])
    last = "results/checkpoints/tr/seed42/last.pt"
    assert training_notes([changed, killed, untrained], tmp_path) == [
        f"training tr (seed 42): its checkpoint at step 40 ({last}) was trained with other "
        "settings (lr: 0.001 → 0.002, processes: 1 → 2): the training starts over",
        f"training tr (seed 42): resumes its training at step 40 ({last})",
    ]
