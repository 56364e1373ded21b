"""The trainer (`xlsent.train.loop`) on a small real corpus: it learns, it stops on SIGTERM
with a checkpoint, it exports; an `mlm` run's exported encoder and MLM head are what a run
starting from it (`init_from`) gets. Its checkpoints and resuming:
tests/unit/train/test_checkpoints.py."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from sentence_transformers import SentenceTransformer
from support import scratch_trainer, tiny_shape, train_settings
from transformers import AutoModel

from xlsent.models.encoder import TextEncoder
from xlsent.models.mlm_head import HEAD_FILE, mlm_head
from xlsent.train.data import (
    load_pairs,
)
from xlsent.train.loop import Preempted, Trainer
from xlsent.train.settings import ModelSpec, TrainSettings

SHAPE = tiny_shape()
SETTINGS = train_settings()


def _trainer(small_subwords, small_tokenizer, checkpoints: Path, **overrides) -> Trainer:
    return scratch_trainer(small_subwords, small_tokenizer, checkpoints, {**SETTINGS, **overrides})


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
    AWP only (tests/unit/train/test_objectives.py: WACSE's log lines); TR's lines are unchanged."""
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


# -- pretraining runs, and what a run starting from one gets -------------------------------

LM_SETTINGS = train_settings(
    seed=3,
    lr=2e-3,
    batch_size=16,
    max_steps=12,
    eval_every=6,
    checkpoint_every=6,
    log_every=6,
    dev_max_pairs=50,
)


def _lm_trainer(subwords, tokenizer, checkpoints, spec: ModelSpec, **overrides) -> Trainer:
    return Trainer(
        TrainSettings(**{**LM_SETTINGS, **overrides}),
        spec,
        {lang: p["train"] for lang, p in subwords.items()},
        {lang: p["dev"] for lang, p in subwords.items()},
        checkpoints,
    )


@pytest.mark.parametrize("method", ["mlm", "tlm", "tr-tlm"])
def test_language_modelling_lowers_its_loss(small_subwords, small_tokenizer, tmp_path, method):
    torch.manual_seed(0)
    scratch = ModelSpec("scratch", small_tokenizer, shape=SHAPE)
    trainer = _lm_trainer(small_subwords, small_tokenizer, tmp_path, scratch, method=method)
    trainer.objective.eval()
    batch = trainer.batch(trainer.sampler.take(32))
    assert batch.lm is not None and len(batch.lm.targets) > 0
    assert (batch.ids is not None) == (method == "tr-tlm")
    name = "mlm" if method == "mlm" else "tlm"
    _, parts = trainer.objective(batch)
    assert set(parts) == ({"tr", "tlm"} if method == "tr-tlm" else {name})
    for _ in range(5):
        trainer.optimizer.zero_grad()
        trainer.objective(batch)[0].backward()
        trainer.optimizer.step()
    with torch.no_grad():
        _, parts_after = trainer.objective(batch)
    assert parts_after[name] < parts[name]


def test_mlm_draws_sentences_and_keeps_the_pivot_in_check(
    small_subwords, small_tokenizer, tmp_path
):
    scratch = ModelSpec("scratch", small_tokenizer, shape=SHAPE)
    trainer = _lm_trainer(small_subwords, small_tokenizer, tmp_path, scratch, method="mlm")
    pool = trainer.train_data
    assert pool.langs[-1] == "en"
    train = load_pairs({lang: p["train"] for lang, p in small_subwords.items()}, 16)
    assert pool.counts()[:-1].tolist() == np.bincount(train.lang).tolist()
    # A micro-batch draws 2 × micro_batch_size sentences (as many as a pair batch encodes).
    trainer.train_step()
    assert trainer.sampler.draws == 1
    assert sum(trainer.sampler.positions) == 32


def test_an_mlm_run_exports_the_head_that_a_run_starting_from_it_predicts_with(
    small_subwords, small_tokenizer, tmp_path
):
    torch.set_num_threads(1)
    scratch = ModelSpec("scratch", small_tokenizer, shape=SHAPE)
    pretraining = _lm_trainer(
        small_subwords, small_tokenizer, tmp_path / "mlm", scratch, method="mlm"
    )
    best = pretraining.run()
    # A pretraining run keeps its last step, whatever its dev P@1 did.
    assert best["step"] == LM_SETTINGS["max_steps"]
    out = tmp_path / "model"
    pretraining.export(out, {"settings": {}})
    assert (out / HEAD_FILE).is_file()

    # A run starting from it (a tr-tlm run here; wacse's AWP and DAP's RTL build their head
    # the same way): the encoder's weights and the MLM head are the pretrained ones, the
    # head's decoder tied to the new encoder's embeddings.
    spec = ModelSpec("pretrained", small_tokenizer, pretrained_dir=out)
    tuned = _lm_trainer(small_subwords, small_tokenizer, tmp_path / "tr", spec, method="tr-tlm")
    for name, value in pretraining.model.state_dict().items():
        torch.testing.assert_close(tuned.model.state_dict()[name], value.cpu())
    for name, value in pretraining.objective.mlm.state_dict().items():
        torch.testing.assert_close(tuned.objective.mlm.state_dict()[name], value)
    embeddings = tuned.model.get_input_embeddings().weight
    assert tuned.objective.mlm.decoder.weight is embeddings

    # A head file that does not fit is an error naming it, not a silently fresh head.
    torch.save({"dense.weight": torch.zeros(2, 2)}, out / HEAD_FILE)
    with pytest.raises(ValueError, match=HEAD_FILE):
        mlm_head(tuned.model.config, tuned.model.get_input_embeddings(), out)


def test_a_frozen_encoder_leaves_the_heads_alone_to_train(
    small_subwords, small_tokenizer, tmp_path
):
    """`freeze_encoder`: an mlm run's steps move its MLM head (dense, LayerNorm, output bias)
    and nothing of the encoder, the head's decoder (the word embeddings) included; a method
    without a head is refused before it trains."""
    scratch = ModelSpec("scratch", small_tokenizer, shape=SHAPE)
    frozen = {"method": "mlm", "freeze_encoder": True, "head_lr": 1e-2}
    trainer = _lm_trainer(small_subwords, small_tokenizer, tmp_path / "mlm", scratch, **frozen)
    encoder = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    head = {n: p.detach().clone() for n, p in trainer.objective.mlm.named_parameters()}
    optimised = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert not optimised & {id(p) for p in trainer.model.parameters()}
    trainer.run(tmp_path / "train_log.jsonl")
    # The log gives the heads' rate beside the encoder's, on the same schedule.
    logged = [json.loads(line) for line in (tmp_path / "train_log.jsonl").read_text().splitlines()]
    rates = [(r["lr"], r["head_lr"]) for r in logged if "loss" in r]
    assert len(rates) == 2 and all(head_lr == pytest.approx(5 * lr) for lr, head_lr in rates)
    for name, value in trainer.model.named_parameters():
        assert torch.equal(value, encoder[name]), name
    moved = {n for n, p in trainer.objective.mlm.named_parameters() if not torch.equal(p, head[n])}
    assert moved == set(head) - {"decoder.weight"}
    assert "dense.weight" in moved

    with pytest.raises(ValueError, match=r"train\.freeze_encoder: method 'tr' trains no head"):
        _lm_trainer(small_subwords, small_tokenizer, tmp_path / "tr", scratch, freeze_encoder=True)
