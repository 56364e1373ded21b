"""The TR trainer on a small real corpus: it learns, it resumes exactly, it exports."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel

from xlsent.models.encoder import TextEncoder
from xlsent.train.loop import ModelSpec, Preempted, Trainer, TrainSettings

SHAPE = {
    "hidden_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 64,
}
SETTINGS = dict(
    seed=7,
    max_length=16,
    lr=1e-3,
    batch_size=32,
    micro_batch_size=16,
    max_steps=24,
    eval_every=8,
    checkpoint_every=4,
    log_every=4,
    dev_max_pairs=100,
    device="cpu",
)


def _trainer(small_subwords, small_tokenizer, checkpoints: Path, **overrides) -> Trainer:
    return Trainer(
        TrainSettings(**{**SETTINGS, **overrides}),
        ModelSpec("scratch", small_tokenizer, shape=SHAPE),
        {lang: p["train"] for lang, p in small_subwords.items()},
        {lang: p["dev"] for lang, p in small_subwords.items()},
        checkpoints,
    )


def test_one_step_lowers_the_loss_of_a_fixed_batch(small_subwords, small_tokenizer, tmp_path):
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path)
    trainer.objective.eval()  # no dropout: the two losses differ by the update only
    batch = trainer.sampler.take(16)
    before = trainer.loss(batch)[0]
    before.backward()
    trainer.optimizer.step()
    trainer.optimizer.zero_grad()
    with torch.no_grad():
        after = trainer.loss(batch)[0]
    assert after < before


def test_accumulation_splits_the_effective_batch(small_subwords, small_tokenizer, tmp_path):
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path)
    assert trainer.accumulation == 2
    trainer.train_step()
    assert trainer.sampler.position == 32  # two micro-batches of 16 for one optimizer step
    with pytest.raises(ValueError, match="multiple"):
        TrainSettings(seed=0, batch_size=30, micro_batch_size=16)


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
    ]


def _wait_for_checkpoint(proc: subprocess.Popen, path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, "training ended before writing a checkpoint"
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_training_resumes_exactly(small_subwords, small_tokenizer, tmp_path, sig):
    """A run killed mid-way and restarted ends with the same weights as an uninterrupted one."""
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
    if sig == signal.SIGTERM:
        assert "stopped by a signal" in stderr  # it saved its state on the way out
    stopped_at = torch.load(checkpoints / "last.pt", weights_only=False)["step"]
    assert 0 < stopped_at < SETTINGS["max_steps"]

    resumed = _trainer(small_subwords, small_tokenizer, checkpoints)
    assert resumed.resume() and resumed.step == stopped_at
    resumed.run()
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    assert resumed.best == straight.best
    assert [e["step"] for e in resumed.history] == [e["step"] for e in straight.history]


def test_best_weights_newer_than_the_checkpoint_are_dropped(
    small_subwords, small_tokenizer, tmp_path
):
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4)
    trainer.run()  # checkpoint at step 4; best weights at the step-4 evaluation
    best = torch.load(tmp_path / "best.pt")
    torch.save({**best, "step": 8}, tmp_path / "best.pt")  # as if from a killed later step
    resumed = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4)
    assert resumed.resume()
    assert not (tmp_path / "best.pt").exists()


def test_checkpoint_of_other_settings_is_not_resumed(small_subwords, small_tokenizer, tmp_path):
    first = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4)
    first.run()
    assert (tmp_path / "last.pt").exists()
    other = _trainer(small_subwords, small_tokenizer, tmp_path, max_steps=4, lr=5e-4)
    assert not other.resume()
    assert other.step == 0


def test_sigterm_inside_the_loop_saves_and_raises(small_subwords, small_tokenizer, tmp_path):
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path)
    trainer._request_stop(signal.SIGTERM, None)
    with pytest.raises(Preempted):
        trainer.run()
    assert torch.load(tmp_path / "last.pt", weights_only=False)["step"] == 1


def test_export_loads_in_transformers_and_sentence_transformers(
    small_subwords, small_tokenizer, tmp_path
):
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path / "ckpt", max_steps=8)
    best = trainer.run()
    out = tmp_path / "model"
    trainer.export(out, {"settings": SETTINGS})
    records = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    evals = [r for r in records if "dev_p1" in r]
    assert best["dev_p1"] == max(r["dev_p1"] for r in evals)
    assert json.loads((out / "best.json").read_text())["step"] == best["step"]
    assert json.loads((out / "run.json").read_text())["settings"]["seed"] == 7

    sentences = ["Germany", "Deutschland", "Enter a valid email address."]
    st_vectors = SentenceTransformer(str(out), device="cpu").encode(sentences)
    ours = TextEncoder.load(out, max_length=16)(sentences)
    assert np.allclose(st_vectors, ours, atol=1e-5)
    model = AutoModel.from_pretrained(out)
    assert model.config.hidden_size == 32
    # The exported weights are the best checkpoint's, not the last step's.
    best_state = torch.load(tmp_path / "ckpt" / "best.pt")["model"]
    for name, tensor in model.state_dict().items():
        if name in best_state:
            assert torch.equal(tensor, best_state[name]), name
