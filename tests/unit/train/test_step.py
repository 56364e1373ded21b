"""One optimizer step (xlsent.train.step): its losses read from the device once per step
give the record that a read per loss part and micro-batch gave, to the bit, and its passes
compute in the precision `train.precision` names (`tf32`: the TF32 switches on for the
forward and backward passes and nothing else)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support import tiny_shape

from xlsent.train import cached_tr, step
from xlsent.train.flops import StepFlops
from xlsent.train.loop import Trainer
from xlsent.train.settings import ModelSpec, TrainSettings

SHAPE = tiny_shape(layers=2)  # dropout on: the replayed masks must be the same in both
MICRO = 8
N_MICRO = 3  # not a power of two: a mean taken in float32 on the device would differ


def _trainer(tmp_path: Path, train: dict, dev: dict, tokenizer: Path, **settings) -> Trainer:
    return Trainer(
        TrainSettings(
            **{
                "seed": 3,
                "max_length": 24,
                "batch_size": N_MICRO * MICRO,
                "micro_batch_size": MICRO,
                "max_steps": 4,
                "device": "cpu",
                "dev_max_pairs": 20,
                **settings,
            }
        ),
        ModelSpec("scratch", tokenizer, shape=SHAPE),
        train,
        dev,
        tmp_path,
    )


def _read_per_micro_batch(objective, batches: list, n_micro: int) -> dict:
    """The step as it read its losses until this change (5e84662's `accumulate`, on one
    process on the CPU): `.item()` for each loss part of each micro-batch, and the cached TR
    loss with `float` as soon as it was computed; and AWP's diagnostics likewise, read each
    micro-batch, summed and divided at the end."""
    s = objective.settings
    device = torch.device("cpu")
    cached = "tr" in objective.weights and s.negatives == "batch" and n_micro > 1
    parts_total: dict[str, float] = {}
    tr_grads = [None] * n_micro
    states = []
    flops = StepFlops(objective, cached, 1)
    batches = list(map(flops.count, batches))
    if cached:
        vectors = []
        with torch.no_grad():
            for batch in batches:
                states.append(cached_tr.RandomState.capture(device))
                vectors.append(objective.embed(batch))
        grads, loss = cached_tr.batch_gradients(
            vectors, objective.weights["tr"], s.temperature, s.direction, 1
        )
        parts_total["tr"] = float(loss)
        tr_grads = [g * n_micro for g in grads]
    tokens = 0
    sums: dict[str, list[float]] = {}
    for micro, batch in enumerate(batches):
        if states:
            states[micro].restore(device)
        loss, parts = objective(batch, tr_grads[micro])
        (loss / n_micro).backward()
        for name, value in parts.items():
            parts_total[name] = parts_total.get(name, 0.0) + value.item() / n_micro
        for name, value in objective.diagnostics.items():
            numerator, denominator = value.tolist() if torch.is_tensor(value) else value
            total = sums.setdefault(name, [0.0, 0.0])
            total[0] += numerator
            total[1] += denominator
        tokens += batch.tokens
    record = {
        "loss": sum(objective.weights[name] * value for name, value in parts_total.items()),
        "parts": parts_total,
        "tokens": tokens,
        "flops": flops.total(),
    }
    if sums:
        record["diagnostics"] = {name: n / d for name, (n, d) in sums.items()}
    return record


def _grads(trainer: Trainer) -> dict[str, torch.Tensor]:
    out = {n: p.grad.clone() for n, p in trainer.objective.named_parameters() if p.grad is not None}
    trainer.objective.zero_grad(set_to_none=True)
    return out


@pytest.mark.parametrize(
    ("method", "negatives"),
    [("tr", "batch"), ("tr", "micro_batch"), ("wacse", "batch"), ("wacse", "micro_batch")],
)
def test_one_read_per_step_records_what_a_read_per_micro_batch_did(
    small_subwords, small_word_spans, small_tokenizer, tmp_path, method, negatives
):
    """TR cached over the step (its loss the whole batch's) or per micro-batch, and WACSE's
    three parts (TR, AWP, WTR) summed over three micro-batches: the same record, floats equal
    to the bit, and the same gradients."""
    train = (
        small_word_spans
        if method == "wacse"
        else {lang: p["train"] for lang, p in small_subwords.items()}
    )
    dev = {lang: p["dev"] for lang, p in small_subwords.items()}
    trainer = _trainer(tmp_path, train, dev, small_tokenizer, method=method, negatives=negatives)
    trainer.objective.train()
    indices = [trainer.sampler.take(MICRO) for _ in range(N_MICRO)]
    batches = [trainer.batch(index, micro) for micro, index in enumerate(indices)]
    start = torch.get_rng_state()
    record = step.accumulate(trainer.objective, iter(batches), N_MICRO)
    grads = _grads(trainer)
    torch.set_rng_state(start)
    before = _read_per_micro_batch(trainer.objective, batches, N_MICRO)
    assert record == before
    assert set(record["parts"]) == ({"tr", "awp", "wtr"} if method == "wacse" else {"tr"})
    assert record["parts"]["tr"] > 0
    if method == "wacse":
        # The step's links per sentence, counted on its pairs: 2 × links over 2N sentences.
        links = sum(int(trainer.words.links.lengths[index].sum()) for index in indices)
        expected = 2 * links / (2 * N_MICRO * MICRO)
        diagnostics = record["diagnostics"]
        assert diagnostics["awp_links_per_sentence"] == pytest.approx(expected, rel=1e-12)
        assert diagnostics["awp_term_ce"] > 0
    else:
        assert "diagnostics" not in record  # TR's record, and its log line, as they were
    for name, grad in _grads(trainer).items():
        assert torch.equal(grads[name], grad), name


@pytest.mark.parametrize("precision", ["tf32", "fp32", "bf16"])
def test_the_tf32_switch_is_on_for_the_steps_passes_alone(
    small_subwords, small_tokenizer, tmp_path, precision
):
    """`precision: tf32` turns the TF32 switches on for a step's forward and backward passes
    (seen from inside the encoder's forward and a weight's gradient hook), and only there:
    off again after the step and for dev P@1, and never on under fp32 or bf16. On a CPU the
    switches change no product: the tf32 step's weights are the fp32 step's."""
    train = {lang: p["train"] for lang, p in small_subwords.items()}
    dev = {lang: p["dev"] for lang, p in small_subwords.items()}
    trainer = _trainer(tmp_path / precision, train, dev, small_tokenizer, precision=precision)
    weight = trainer.model.encoder.layer[0].attention.self.query.weight
    seen: dict[str, list[bool]] = {"forward": [], "backward": []}

    def switches() -> bool:
        flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        return flags == (True, True)

    trainer.model.register_forward_pre_hook(lambda *_: seen["forward"].append(switches()))
    weight.register_hook(lambda grad: seen["backward"].append(switches()))
    assert not torch.backends.cuda.matmul.allow_tf32  # PyTorch's default
    trainer.train_step()
    assert seen["forward"] and seen["backward"]
    assert set(seen["forward"]) == set(seen["backward"]) == {precision == "tf32"}
    assert not torch.backends.cuda.matmul.allow_tf32
    seen["forward"].clear()
    trainer.evaluate()
    assert seen["forward"] and not any(seen["forward"])

    if precision == "tf32":
        fp32 = _trainer(tmp_path / "fp32", train, dev, small_tokenizer, precision="fp32")
        fp32.train_step()
        for name, value in fp32.model.state_dict().items():
            assert torch.equal(value, trainer.model.state_dict()[name]), name
