"""A training's live records: train_log.jsonl and, with `train.tensorboard`, TensorBoard's
event files holding the same numbers (the optional `tensorboard` package is in the `test`
extra; its absence is made by hiding it from the import)."""

from __future__ import annotations

import json
import sys

import pytest
from support import scratch_trainer, train_settings

from xlsent.train.loop import Trainer
from xlsent.train.records import TrainRecords, scalars


def test_a_records_numbers_are_its_scalars_nested_ones_by_path():
    record = {
        "step": 40,
        "dev_p1": 91.5,
        "dev": {"de": 93.0, "kk": 90.0},
        "dev_directions": {"kk": {"xx2en": 89.0, "en2xx": 91.0}},
        "dev_without": ["sw"],
        "best": True,
        "mfu": None,
    }
    assert dict(scalars(record)) == {
        "dev_p1": 91.5,
        "dev/de": 93.0,
        "dev/kk": 90.0,
        "dev_directions/kk/xx2en": 89.0,
        "dev_directions/kk/en2xx": 91.0,
    }


def test_the_live_log_restarts_from_the_history_and_appends(tmp_path):
    log = tmp_path / "train_log.jsonl"
    log.write_text('{"step": 1}\n{"step": 2}\n{"step": 3}\n')  # step 3: after the checkpoint
    records = TrainRecords(log, None, [{"step": 1}, {"step": 2}], step=2)
    records.write({"step": 3, "loss": 0.5})
    records.close()
    assert [json.loads(line) for line in log.read_text().splitlines()] == [
        {"step": 1},
        {"step": 2},
        {"step": 3, "loss": 0.5},
    ]


def _trainer(small_subwords, small_tokenizer, checkpoints, **overrides) -> Trainer:
    settings = train_settings(
        lr=5e-5,  # TrainSettings' default
        batch_size=16,
        max_steps=2,
        eval_every=2,
        checkpoint_every=2,
        log_every=1,
        dev_max_pairs=50,
        tensorboard=True,
    )
    return scratch_trainer(small_subwords, small_tokenizer, checkpoints, {**settings, **overrides})


def test_tensorboard_holds_the_logs_numbers(small_subwords, small_tokenizer, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    trainer = _trainer(small_subwords, small_tokenizer, tmp_path)
    trainer.run(tmp_path / "train_log.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "train_log.jsonl").read_text().splitlines()]
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    for tag in ("loss", "tokens_per_s", "model_tflops", "dev_p1", "dev/de", "dev/kk"):
        logged = [(line["step"], v) for line in lines for t, v in scalars(line) if t == tag]
        seen = [(event.step, event.value) for event in events.Scalars(tag)]
        assert [step for step, _ in seen] == [step for step, _ in logged], tag
        # (TensorBoard stores float32.)
        assert [v for _, v in seen] == pytest.approx([v for _, v in logged], rel=1e-6), tag


def test_tensorboard_asked_for_without_its_package_says_how_to_install_it(
    small_subwords, small_tokenizer, tmp_path, monkeypatch
):
    # None in sys.modules makes the import fail as a missing package does, imported before
    # or not.
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path)
    with pytest.raises(ImportError, match=r"pip install 'xlsent\[tensorboard\]'"):
        trainer.run(tmp_path / "train_log.jsonl")
