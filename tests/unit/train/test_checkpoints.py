"""A training run's checkpoints (`xlsent.train.checkpoints`): a run killed at any point, by any
signal, resumes to the weights and the export of an uninterrupted one; a checkpoint belongs
to its run's settings and the content of its inputs; a broken one is set aside for the one
before it, or the run starts over and says so; each job's time is kept; a checkpoint that
runs out of room is named like every other output. On the trainer tests' small real corpus
(the loop itself: tests/unit/train/test_loop.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file, save_file
from support import file_size_limit, scratch_trainer, tiny_shape, train_settings
from transformers import AutoModel

from xlsent.io import OutputError, sha256_file
from xlsent.train.checkpoints import TrainingError, save
from xlsent.train.loop import Trainer
from xlsent.train.settings import ModelSpec, TrainSettings, identity

SHAPE = tiny_shape()
SETTINGS = train_settings()


def _trainer(small_subwords, small_tokenizer, checkpoints: Path, **overrides) -> Trainer:
    return scratch_trainer(small_subwords, small_tokenizer, checkpoints, {**SETTINGS, **overrides})


def _train_cli(small_subwords, small_tokenizer, checkpoints: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "xlsent.cli",
        "train",
        "--settings",
        json.dumps(SETTINGS),
        "--model",
        json.dumps({"init": "scratch", **SHAPE}),
        "--tokenizer",
        str(small_tokenizer),
        "--train",
        *(f"{lang}={p['train']}" for lang, p in small_subwords.items()),
        "--dev",
        *(f"{lang}={p['dev']}" for lang, p in small_subwords.items()),
        "--checkpoints",
        str(checkpoints),
        "--threads",
        "1",
        "--out",
        str(out),
        "--log",
        str(out.with_suffix(".log")),  # not written: stderr stays with the test
    ]


def _wait_for_checkpoint(proc: subprocess.Popen, path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, "training ended before writing a checkpoint"
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_killed_training_resumes_exactly(small_subwords, small_tokenizer, tmp_path, sig):
    """A run killed mid-way and restarted ends with the same weights as an uninterrupted one.
    SIGINT (Ctrl-C) stops it as SIGTERM does: the report had a bare KeyboardInterrupt, the
    steps since the last checkpoint lost."""
    torch.set_num_threads(1)
    straight = _trainer(small_subwords, small_tokenizer, tmp_path / "straight")
    straight.run()

    checkpoints = tmp_path / "interrupted"
    cmd = _train_cli(small_subwords, small_tokenizer, checkpoints, tmp_path / "model")
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    _wait_for_checkpoint(proc, checkpoints / "last.pt")
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode != 0, "the job must not look finished"
    assert not (tmp_path / "model").exists()
    stopped_at = torch.load(checkpoints / "last.pt", weights_only=False)["step"]
    if sig != signal.SIGKILL:  # it saved its state on the way out, and says so
        assert f"{sig.name}: saving a checkpoint after this step, then stopping" in stderr
        assert stderr.rstrip().endswith(
            f"stopped by a signal at step {stopped_at}: the same command resumes the training "
            f"at step {stopped_at} ({checkpoints}/last.pt)"
        )
        assert "KeyboardInterrupt" not in stderr
    assert 0 < stopped_at < SETTINGS["max_steps"]

    resumed = _trainer(small_subwords, small_tokenizer, checkpoints)
    assert resumed.resume() and resumed.step == stopped_at
    resumed.run()
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    assert resumed.best == straight.best
    assert [e["step"] for e in resumed.history] == [e["step"] for e in straight.history]


def _fake_scores(trainer: Trainer, scores: dict[int, float]) -> None:
    """Dev P@1 by step, so that which evaluation sets a new best is known in advance."""
    trainer.evaluate = lambda precision: {"dev_p1": scores[trainer.step], "dev": {}}


class Killed(Exception):
    pass


def _killed_at(trainer: Trainer, step: int) -> None:
    """Make `trainer` die as a killed process would as it starts step `step` + 1: nothing
    after that point runs (no evaluation, no checkpoint)."""
    train_step = trainer.train_step

    def dying() -> dict:
        if trainer.step == step:
            raise Killed
        return train_step()

    trainer.train_step = dying


# Evaluations every 2 steps, checkpoints every 4: a new best at step 6 falls between the
# checkpoints of steps 4 and 8.
SCORES = {2: 10.0, 4: 20.0, 6: 30.0, 8: 25.0}


def test_a_kill_between_a_new_best_and_the_next_checkpoint_exports_the_right_weights(
    small_subwords, small_tokenizer, tmp_path
):
    """The report: killed after the evaluation of step 6 set a new best and before the
    checkpoint of step 8. The resumed run starts from step 4's checkpoint, whose record
    names step 4 as the best: step 4's weights must still be there, and the export must be
    the uninterrupted run's."""
    kwargs = dict(max_steps=8, eval_every=2, checkpoint_every=4)
    straight = _trainer(small_subwords, small_tokenizer, tmp_path / "straight", **kwargs)
    _fake_scores(straight, SCORES)
    straight.run()
    straight.export(tmp_path / "straight-model", {})

    killed = _trainer(small_subwords, small_tokenizer, tmp_path / "killed", **kwargs)
    _fake_scores(killed, SCORES)
    _killed_at(killed, 7)
    with pytest.raises(Killed):
        killed.run()
    assert torch.load(tmp_path / "killed/last.pt", weights_only=False)["step"] == 4
    assert sorted(p.name for p in (tmp_path / "killed").glob("best-*.pt")) == [
        "best-4.pt",
        "best-6.pt",
    ]
    resumed = _trainer(small_subwords, small_tokenizer, tmp_path / "killed", **kwargs)
    # On a GPU the replayed evaluation may not beat step 4 again: say it does not.
    _fake_scores(resumed, {**SCORES, 6: 15.0, 8: 12.0})
    assert resumed.resume() and resumed.best["step"] == 4
    assert [p.name for p in (tmp_path / "killed").glob("best-*.pt")] == ["best-4.pt"]
    resumed.run()
    assert resumed.best["step"] == 4
    resumed.export(tmp_path / "resumed-model", {})
    step4 = torch.load(tmp_path / "killed/best-4.pt")["model"]
    exported = AutoModel.from_pretrained(tmp_path / "resumed-model").state_dict()
    assert all(torch.equal(exported[name], step4[name]) for name in exported if name in step4)
    assert json.loads((tmp_path / "resumed-model/best.json").read_text())["step"] == 4

    # And with the replay as the first run (as on a CPU): the uninterrupted run's weights.
    again = _trainer(small_subwords, small_tokenizer, tmp_path / "again", **kwargs)
    _fake_scores(again, SCORES)
    _killed_at(again, 7)
    with pytest.raises(Killed):
        again.run()
    replay = _trainer(small_subwords, small_tokenizer, tmp_path / "again", **kwargs)
    _fake_scores(replay, SCORES)
    assert replay.resume()
    replay.run()
    replay.export(tmp_path / "replay-model", {})
    for name in ("model.safetensors", "best.json"):
        assert (tmp_path / "replay-model" / name).read_bytes() == (
            tmp_path / "straight-model" / name
        ).read_bytes()


def test_a_record_whose_best_weights_are_gone_stops_the_export(
    small_subwords, small_tokenizer, tmp_path
):
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4)
    trainer.run()
    (tmp_path / f"best-{trainer.best['step']}.pt").unlink()
    with pytest.raises(TrainingError, match=r"records the best dev P@1 at step 4, but its"):
        trainer.export(tmp_path / "model", {})
    resumed = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4)
    with pytest.raises(TrainingError, match=r"delete .* to train this run afresh"):
        resumed.resume()


def test_checkpoint_of_other_settings_is_not_resumed(small_subwords, small_tokenizer, tmp_path):
    first = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4)
    first.run()
    assert (tmp_path / "last.pt").exists()
    other = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4, lr=5e-4)
    assert not other.resume()
    assert other.step == 0


def test_a_setting_that_changes_no_number_keeps_the_checkpoint(
    small_subwords, small_tokenizer, tmp_path
):
    """How often a run logs and saves, and what it reports its speed against, change no
    weight: the checkpoint is resumed. The device and the precision can: it is not."""
    first = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4)
    first.run()
    reporting = dict(log_every=1, checkpoint_every=3, peak_tflops=100.0, tensorboard=True)
    kept = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4, **reporting)
    assert kept.resume() and kept.step == 4
    for changed in ({"precision": "fp32"}, {"device": "auto"}):
        assert identity(TrainSettings(**{**SETTINGS, **changed})) != identity(
            TrainSettings(**SETTINGS)
        )


def test_a_key_added_at_its_default_is_left_out_of_the_identity():
    """A version that adds a setting at the default that keeps the old behaviour resumes the
    checkpoints written before it: the identity leaves such a key out."""
    plain = identity(TrainSettings(**SETTINGS))
    assert not {"head_lr", "freeze_encoder", "peak_tflops", "tensorboard"} & set(plain)
    assert identity(TrainSettings(**SETTINGS, head_lr=1e-3))["head_lr"] == 1e-3


def test_a_checkpoint_written_before_identities_is_resumed(
    small_subwords, small_tokenizer, tmp_path
):
    """Checkpoints written until 2026-11-29 carry the digest of every settings field then
    known, with the model entry, the files and the processes (computed here as that code
    did): the run resumes from them."""
    first = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4)
    first.run()
    state = torch.load(tmp_path / "last.pt", weights_only=False)
    fields = dataclasses.asdict(first.settings)
    fields = {key: value for key, value in fields.items() if key in LANDED_FIELDS}
    inputs = [*first_inputs(small_subwords)]
    files = {str(p): sha256_file(p) for p in inputs}
    files |= {str(p): sha256_file(p) for p in small_tokenizer.rglob("*") if p.is_file()}
    blob = [fields, dataclasses.asdict(first.model_spec), files, 1]
    state["fingerprint"] = hashlib.sha256(
        json.dumps(blob, sort_keys=True, default=str).encode()
    ).hexdigest()
    torch.save(state, tmp_path / "last.pt")
    resumed = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4)
    assert resumed.resume() and resumed.step == 4


# The fields of TrainSettings when checkpoints hashed them all (a5f6ece, 2026-11-28).
LANDED_FIELDS = (
    *("seed", "method", "max_length", "lr", "head_lr", "weight_decay", "warmup_steps"),
    *("max_grad_norm", "batch_size", "micro_batch_size", "max_steps"),
    *("freeze_word_embeddings", "freeze_encoder", "eval_every", "checkpoint_every"),
    *("log_every", "temperature", "direction", "negatives", "dev_max_pairs", "device"),
    *("precision", "pooler", "length_groups", "language_embeddings", "wacse_weights"),
    *("awp_samples", "wtr_temperature", "rtl_weight", "rtl_layers", "rtl_vocabulary"),
    *("mlm_probability", "language_sampling", "tlm_weight", "tlm_input"),
)


def first_inputs(small_subwords) -> list[Path]:
    """The trainer's inputs in its order: the training files, then the dev files."""
    return [
        *(p["train"] for p in small_subwords.values()),
        *(p["dev"] for p in small_subwords.values()),
    ]


def test_a_checkpoint_follows_the_content_of_its_inputs_not_their_times(
    small_subwords, small_tokenizer, tmp_path
):
    """A touched input (`snakemake --touch`, a copy without its times) keeps a run's
    checkpoint; an input of other bytes, or a starting model trained again, does not."""
    base = _trainer(small_subwords, small_tokenizer, tmp_path / "base", max_steps=4)
    base.run()
    start = tmp_path / "start"
    base.export(start, {"settings": SETTINGS})
    data = {}
    for lang, files in small_subwords.items():
        data[lang] = {split: tmp_path / lang / f"{split}.parquet" for split in ("train", "dev")}
        data[lang]["train"].parent.mkdir()
        for split, path in data[lang].items():
            shutil.copyfile(files[split], path)

    def fine_tune() -> Trainer:
        return Trainer(
            TrainSettings(**{**SETTINGS, "max_steps": 4}),
            ModelSpec("pretrained", small_tokenizer, pretrained_dir=start),
            {lang: p["train"] for lang, p in data.items()},
            {lang: p["dev"] for lang, p in data.items()},
            tmp_path / "ckpt",
        )

    fine_tune().run()
    train_file = next(iter(data.values()))["train"]
    (weights,) = start.glob("*.safetensors")
    for path in (train_file, weights):
        later = path.stat().st_mtime_ns + 10**12
        os.utime(path, ns=(later, later))
    assert fine_tune().resume()

    pq.write_table(pq.read_table(train_file).slice(1), train_file)
    assert not fine_tune().resume()

    fine_tune().run()
    state = load_file(weights)
    name = next(iter(state))
    save_file({**state, name: state[name] + 0.01}, weights)
    assert not fine_tune().resume()


def _killed_after_step_12(small_subwords, small_tokenizer, checkpoints: Path) -> None:
    """A run killed as it starts step 13: checkpoints of steps 8 (previous.pt) and 12."""
    killed = _trainer(small_subwords, small_tokenizer, checkpoints)
    _killed_at(killed, 12)
    with pytest.raises(Killed):
        killed.run()
    assert torch.load(checkpoints / "previous.pt", weights_only=False)["step"] == 8


def _same_weights(trainer: Trainer, reference: Trainer) -> bool:
    ours, theirs = trainer.model.state_dict(), reference.model.state_dict()
    return all(torch.equal(tensor, theirs[name]) for name, tensor in ours.items())


def test_a_truncated_checkpoint_is_set_aside_and_training_resumes_from_the_one_before(
    small_subwords, small_tokenizer, tmp_path, caplog
):
    """The report: torch's "PytorchStreamReader failed reading zip archive", no path, and no
    rerun got past it until the file was deleted by hand. A copy cut last.pt short."""
    straight = _trainer(small_subwords, small_tokenizer, tmp_path / "straight")
    straight.run()
    checkpoints = tmp_path / "cut"
    _killed_after_step_12(small_subwords, small_tokenizer, checkpoints)
    data = (checkpoints / "last.pt").read_bytes()
    (checkpoints / "last.pt").write_bytes(data[: len(data) // 2])

    resumed = _trainer(small_subwords, small_tokenizer, checkpoints)
    with caplog.at_level("WARNING"):
        assert resumed.resume() and resumed.step == 8
    assert caplog.messages == [
        f"{checkpoints}/last.pt does not load (PytorchStreamReader failed reading zip archive: "
        "failed finding central directory): the file is truncated or corrupt; moved it to "
        f"{checkpoints}/last.pt.unreadable",
        f"resuming from the checkpoint before it, {checkpoints}/previous.pt",
    ]
    assert (checkpoints / "last.pt.unreadable").read_bytes() == data[: len(data) // 2]
    resumed.run()
    assert _same_weights(resumed, straight) and resumed.best == straight.best
    # The killed job's time to step 12 is counted, though the checkpoint that held it broke
    # (the report: the cost table lost it).
    earlier = json.loads((checkpoints / "earlier_attempts.json").read_text())
    assert [attempt["steps"] for attempt in earlier] == [[0, 12]]


def test_with_no_checkpoint_that_loads_training_starts_over_and_says_so(
    small_subwords, small_tokenizer, tmp_path, caplog
):
    checkpoints = tmp_path / "cut"
    _killed_after_step_12(small_subwords, small_tokenizer, checkpoints)
    for name in ("last.pt", "previous.pt"):
        (checkpoints / name).write_bytes((checkpoints / name).read_bytes()[:1000])
    resumed = _trainer(small_subwords, small_tokenizer, checkpoints)
    with caplog.at_level("WARNING"):
        assert not resumed.resume()
    assert caplog.messages[-1] == (
        f"no checkpoint of {checkpoints} loads: training starts over at step 0"
    )
    assert sorted(p.name for p in checkpoints.glob("*.unreadable")) == [
        "last.pt.unreadable",
        "previous.pt.unreadable",
    ]
    resumed.run()
    straight = _trainer(small_subwords, small_tokenizer, tmp_path / "straight")
    straight.run()
    assert _same_weights(resumed, straight)
    earlier = json.loads((checkpoints / "earlier_attempts.json").read_text())
    assert [attempt["steps"] for attempt in earlier] == [[0, 12]]  # lost work, spent time


def test_the_export_keeps_the_last_checkpoint_and_its_best_weights_only(
    small_subwords, small_tokenizer, tmp_path
):
    """While it trains a run keeps the checkpoint before the last (and the best weights
    either names); once exported, a rerun needs the last one alone."""
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=12)
    _fake_scores(trainer, {4: 10.0, 8: 20.0, 12: 15.0})
    trainer.run()
    assert sorted(p.name for p in tmp_path.glob("*.pt")) == ["best-8.pt", "last.pt", "previous.pt"]
    trainer.export(tmp_path / "model", {})
    assert sorted(p.name for p in tmp_path.glob("*.pt")) == ["best-8.pt", "last.pt"]


def test_each_jobs_time_is_kept_in_the_checkpoint_and_the_earlier_ones_recorded(
    small_subwords, small_tokenizer, tmp_path
):
    """The cost table took the resumed job's time for the run's (its benchmark file): each
    job's time to its last checkpoint goes into the checkpoint, and the job that resumes
    records its predecessors' for the table (tests/unit/tables/test_cost.py adds them up)."""
    _killed_after_step_12(small_subwords, small_tokenizer, tmp_path)
    first = torch.load(tmp_path / "last.pt", weights_only=False)["attempts"]
    assert [attempt["steps"] for attempt in first] == [[0, 12]]
    assert first[0]["seconds"] > 0 and first[0]["cpu_seconds"] > 0
    resumed = _trainer(small_subwords, small_tokenizer, tmp_path)
    resumed.run()
    assert json.loads((tmp_path / "earlier_attempts.json").read_text()) == first
    final = torch.load(tmp_path / "last.pt", weights_only=False)["attempts"]
    assert final[0] == first[0] and final[1]["steps"] == [12, 24]
    # The export records every job to its end, beside the checkpoint: the cost table's row
    # when Snakemake wrote no benchmark file for the exporting job.
    resumed.export(tmp_path / "model", {})
    record = json.loads((tmp_path / "attempts.json").read_text())
    assert (record["exported"], record["step"]) == (True, 24)
    assert record["attempts"][0] == first[0] and record["attempts"][1]["steps"] == [12, 24]
    assert record["attempts"][1]["seconds"] >= final[1]["seconds"]


def test_a_training_checkpoint_that_runs_out_of_room_names_the_checkpoint(tmp_path: Path) -> None:
    """torch.save reports a failed write as a RuntimeError about a zip position; the trainer's
    checkpoints surface the OSError under it, named like every other output."""
    last = tmp_path / "last.pt"
    with pytest.raises(OutputError) as err, file_size_limit(64 * 1024):
        save({"model": {"w": torch.zeros(100_000)}}, last)
    assert err.value.path == last
    assert str(err.value).startswith(f"cannot write {last}: file too large")
    assert list(tmp_path.iterdir()) == []
