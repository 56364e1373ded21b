"""The TR trainer on a small real corpus: it learns, it resumes exactly, it exports."""

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

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformer
from support import tiny_shape
from transformers import AutoModel

from xlsent.io import sha256_file
from xlsent.models.encoder import TextEncoder
from xlsent.train.checkpoints import TrainingError
from xlsent.train.data import load_pairs
from xlsent.train.loop import Preempted, Trainer
from xlsent.train.settings import ModelSpec, TrainSettings, identity

SHAPE = tiny_shape()
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
    batch = trainer.batch(trainer.sampler.take(16))
    before = trainer.objective(batch)[0]
    before.backward()
    trainer.optimizer.step()
    trainer.optimizer.zero_grad()
    with torch.no_grad():
        after = trainer.objective(batch)[0]
    assert after < before


def test_accumulation_splits_the_effective_batch(small_subwords, small_tokenizer, tmp_path):
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path)
    assert trainer.accumulation == 2
    trainer.train_step()
    assert trainer.sampler.position == 32  # two micro-batches of 16 for one optimizer step
    with pytest.raises(ValueError, match=r"multiple of train.micro_batch_size × GPUs \(16 × 1\)"):
        _trainer(small_subwords, small_tokenizer, tmp_path, batch_size=30)


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

    sentences = ["Germany", "Enter a valid email address.", "Deutschland", "Central Time", "a"]
    st_vectors = SentenceTransformer(str(out), device="cpu").encode(sentences)
    # Batches of two of similar length, written back in the input's order.
    ours = TextEncoder.load(out, max_length=16, batch_size=2)(sentences)
    assert np.allclose(st_vectors, ours, atol=1e-5)
    alone = TextEncoder.load(out, max_length=16, batch_size=1)
    assert np.allclose(np.concatenate([alone([s]) for s in sentences]), ours, atol=1e-5)
    model = AutoModel.from_pretrained(out)
    assert model.config.hidden_size == 32
    # The exported weights are the best checkpoint's, not the last step's.
    best_state = torch.load(tmp_path / "ckpt" / f"best-{best['step']}.pt")["model"]
    for name, tensor in model.state_dict().items():
        if name in best_state:
            assert torch.equal(tensor, best_state[name]), name


def test_the_exported_record_says_what_the_training_ran_on(
    small_subwords, small_tokenizer, tmp_path
):
    """bf16 asked for on a CPU computes in fp32 (autocast acts on CUDA only), and the records
    say what ran: each job's (attempts.json) and the exported run.json's `trained_on`, which
    the encode job passes on to the tables' rows (issue 48: one device per table)."""
    checkpoints = tmp_path / "ckpt"
    trainer = _trainer(small_subwords, small_tokenizer, checkpoints, max_steps=4, precision="bf16")
    trainer.run()
    out = tmp_path / "model"
    trainer.export(out, {"settings": SETTINGS})
    ran_on = {"device": "cpu", "precision": "fp32", "dev_precision": "fp32", "processes": 1}
    assert json.loads((out / "run.json").read_text())["trained_on"] == [ran_on]
    (job,) = json.loads((checkpoints / "attempts.json").read_text())["attempts"]
    assert job.items() >= ran_on.items()


def test_dev_selection_is_a_seeded_random_subset_of_both_directions(
    small_subwords, small_tokenizer, tmp_path
):
    """The dev files keep the order of their source corpora: the subset that selects the
    checkpoint is drawn at random (the same for every run), not the first rows, and P@1 is
    averaged over both directions."""
    dev = small_subwords["kk"]["dev"]
    ids = pq.read_table(dev, columns=["xx_ids"]).column("xx_ids").to_pylist()
    subset = load_pairs({"kk": dev}, max_length=64, max_pairs_per_lang=10)
    again = load_pairs({"kk": dev}, max_length=64, max_pairs_per_lang=10)
    rows = [subset.xx.take(np.array([i])).values.tolist() for i in range(10)]
    assert rows == [again.xx.take(np.array([i])).values.tolist() for i in range(10)]
    positions = [ids.index(row) for row in rows]
    assert positions == sorted(positions) and positions != list(range(10))

    trainer = _trainer(small_subwords, small_tokenizer, tmp_path, dev_max_pairs=30)
    result = trainer.evaluate()
    for lang, score in result["dev"].items():
        both = result["dev_directions"][lang]
        assert score == pytest.approx((both["xx2en"] + both["en2xx"]) / 2, abs=0.01)
    assert {len(pairs) for pairs in trainer.dev_data.values()} == {30}


def test_frozen_word_embeddings_stay_while_the_rest_learns(
    small_subwords, small_tokenizer, tmp_path
):
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path, freeze_word_embeddings=True)
    embeddings = trainer.model.get_input_embeddings().weight
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.train_step()
    optimised = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert id(embeddings) not in optimised
    assert torch.equal(embeddings, before["embeddings.word_embeddings.weight"])
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])]
    assert "encoder.layer.0.attention.self.query.weight" in changed


def test_zero_steps_export_the_starting_model_with_its_dev_score(
    small_subwords, small_tokenizer, tmp_path
):
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path / "ckpt", max_steps=0)
    start = {name: t.clone() for name, t in trainer.model.state_dict().items()}
    best = trainer.run(tmp_path / "train_log.jsonl")
    assert best["step"] == 0 and 0 <= best["dev_p1"] <= 100
    assert best["dev_p1"] == trainer.evaluate()["dev_p1"]
    out = tmp_path / "model"
    trainer.export(out, {"settings": SETTINGS})
    assert json.loads((out / "best.json").read_text())["step"] == 0
    (logged,) = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert (logged["step"], logged["dev_p1"]) == (0, best["dev_p1"])
    for name, tensor in AutoModel.from_pretrained(out).state_dict().items():
        assert torch.equal(tensor, start[name]), name


def test_a_tr_log_line_has_the_keys_it_had_and_no_awp_diagnostics(
    small_subwords, small_tokenizer, tmp_path
):
    """AWP's diagnostics (`awp_term_ce`, `awp_links_per_sentence`) are logged by runs with
    AWP only (tests/unit/test_objectives.py: WACSE's log lines); TR's lines are unchanged."""
    trainer = _trainer(
        small_subwords,
        small_tokenizer,
        tmp_path / "ckpt",
        max_steps=2,
        log_every=1,
        eval_every=2,
        checkpoint_every=2,
    )
    log_path = tmp_path / "train_log.jsonl"
    trainer.run(log_path)
    lines = [json.loads(line) for line in log_path.read_text().splitlines()]
    logged = [entry for entry in lines if "loss" in entry]
    assert [entry["step"] for entry in logged] == [1, 2]
    for entry in logged:
        assert list(entry)[:5] == ["step", "loss", "loss_tr", "lr", "grad_norm"]
        assert "awp_term_ce" not in entry and "awp_links_per_sentence" not in entry


def test_the_mlp_pooler_trains_tr_and_stays_out_of_the_export(
    small_subwords, small_tokenizer, tmp_path
):
    """`pooler: mlp` (DAP's scripts: `--pooler_type cls --mlp_only_train`): TR trains through
    a fresh dense + tanh over CLS; the exported directory holds no trace of it: its weights
    are the encoder's with the starting model's (unused) pooler, and the vectors it gives in
    transformers and sentence-transformers are CLS's own."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    trainer = _trainer(
        small_subwords, small_tokenizer, tmp_path / "ckpt", pooler="mlp", max_steps=2, eval_every=2
    )
    mlp = trainer.objective.mlp
    start_mlp = mlp.dense.weight.detach().clone()
    start_pooler = {k: v.clone() for k, v in trainer.model.pooler.state_dict().items()}
    assert trainer.run()["step"] == 2
    assert not torch.equal(mlp.dense.weight, start_mlp)  # TR's gradient went through it
    out = tmp_path / "model"
    trainer.export(out, {})

    saved = load_file(out / "model.safetensors")
    assert {k for k in saved if not k.startswith(("embeddings.", "encoder."))} == {
        "pooler.dense.weight",
        "pooler.dense.bias",
    }
    for name, value in start_pooler.items():
        assert torch.equal(saved[f"pooler.{name}"], value), name
        assert not torch.equal(value, mlp.get_parameter(name))
    sentences = ["Germany", "Enter a valid email address.", "Deutschland"]
    model = AutoModel.from_pretrained(out).eval()
    encoded = AutoTokenizer.from_pretrained(out)(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        cls = model(**encoded).last_hidden_state[:, 0]
        through_mlp = mlp(cls)
    st_vectors = SentenceTransformer(str(out), device="cpu").encode(sentences)
    assert np.allclose(st_vectors, cls.numpy(), atol=1e-5)
    assert np.allclose(TextEncoder.load(out, max_length=16)(sentences), st_vectors, atol=1e-5)
    assert not np.allclose(st_vectors, through_mlp.numpy(), atol=1e-2)


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
    records its predecessors' for the table (tests/unit/test_tables.py adds them up)."""
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
