"""Cached translation ranking: every query sees the whole batch's negatives on one process.

The parameter gradients of a cached step over 4 micro-batches must be those of one backward
through the whole batch's objective (TR over all 32 pairs, with its additive margin and each
pair's hard negatives where the run has them, plus the micro-batches' word-level losses),
computed with the same dropout masks, in fp32 with dropout on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from support import tiny_shape

from xlsent.hard_negatives.mine import negatives_schema
from xlsent.losses.tr import negative_slots, translation_ranking_loss
from xlsent.train.cached_tr import RandomState, batch_gradients
from xlsent.train.loop import Trainer
from xlsent.train.settings import ModelSpec, TrainSettings

SHAPE = tiny_shape(layers=2)  # XLM-R's dropout (0.1 on hidden states and attention) is on
BATCH, MICRO = 32, 8


def _trainer(
    method: str,
    small_subwords,
    small_word_spans,
    small_tokenizer,
    tmp_path,
    negatives: dict[str, Path] | None = None,
    **settings,
) -> Trainer:
    train = (
        small_word_spans
        if method == "wacse"
        else {lang: p["train"] for lang, p in small_subwords.items()}
    )
    return Trainer(
        TrainSettings(
            seed=3,
            method=method,
            max_length=24,
            batch_size=BATCH,
            micro_batch_size=MICRO,
            max_steps=10,
            precision="fp32",
            device="cpu",
            dev_max_pairs=20,
            **settings,
        ),
        ModelSpec("scratch", small_tokenizer, shape=SHAPE),
        train,
        {lang: p["dev"] for lang, p in small_subwords.items()},
        tmp_path / method,
        negatives,
    )


@pytest.fixture(scope="module")
def mined_files(small_subwords, tmp_path_factory) -> dict[str, Path]:
    """Hard-negative files of the training pairs as the stage writes them, 3 a pair, the
    third slot empty for every third pair (the rows are arbitrary: what is tested here is
    that the cached step ranks them as the whole batch's loss does)."""
    root = tmp_path_factory.mktemp("mined")
    out = {}
    for lang, paths in small_subwords.items():
        ids = pq.read_table(paths["train"], columns=["id"]).column("id").to_numpy()
        n = len(ids)
        i = np.arange(n)
        rows = np.stack([(i + 1) % n, (i + 7) % n, np.where(i % 3 == 0, -1, (i + 3) % n)], 1)
        table = pa.table(
            {
                "id": ids,
                "negatives": pa.FixedSizeListArray.from_arrays(
                    pa.array(rows.ravel(), pa.int32()), 3
                ),
                "scores": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.zeros(3 * n), pa.float32()), 3
                ),
                "positive": np.zeros(n, np.float32),
            },
            schema=negatives_schema(3),
        )
        out[lang] = root / f"{lang}.parquet"
        pq.write_table(table, out[lang])
    return out


def _grads(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {
        name: p.grad.clone()
        for name, p in module.named_parameters()
        if p.requires_grad and p.grad is not None
    }


def _whole_batch_reference(trainer: Trainer, indices: list[np.ndarray]) -> dict:
    """One graph over the whole batch: TR over all pairs, the word-level losses of each
    micro-batch averaged, one backward. The dropout masks are drawn as the cached step
    draws them: the micro-batches' encoder passes one after another from the step's random
    state, each micro-batch's masked (AWP) pass from the state its encoder pass left."""
    objective, s = trainer.objective, trainer.settings
    objective.train()
    batches = [trainer.batch(index, micro) for micro, index in enumerate(indices)]
    hidden, after, slots = [], [], []
    for batch in batches:
        hidden.append(objective.encode(batch.ids, batch.mask, batch.types))
        if batch.hard is not None:  # the micro-batch's negatives: their own pass, after it
            h = batch.hard
            rows = objective.sentence_vectors(objective.encode(h.ids, h.mask, h.types), h.mask)
            slots.append(negative_slots(rows, h.index))
        after.append(RandomState.capture(trainer.device))
    vectors = [
        objective.sentence_vectors(h, batch.mask) for h, batch in zip(hidden, batches, strict=True)
    ]
    xx = torch.cat([v[: len(v) // 2] for v in vectors])
    en = torch.cat([v[len(v) // 2 :] for v in vectors])
    hard = torch.cat([vectors for vectors, _ in slots]) if slots else None
    present = torch.cat([mask for _, mask in slots]) if slots else None
    loss = objective.weights["tr"] * translation_ranking_loss(
        xx,
        en,
        s.temperature,
        s.direction,
        margin=s.tr_margin,
        negatives=hard,
        negatives_mask=present,
    )
    for batch, states, state in zip(batches, hidden, after, strict=True):
        words = 0.0
        if objective.weights.get("wtr"):
            words = words + objective.weights["wtr"] * objective._wtr(batch, states)
        if objective.mlm is not None:
            state.restore(trainer.device)
            words = words + objective.weights["awp"] * objective._awp(batch, states)
        loss = loss + words / len(batches)
    loss.backward()
    return _grads(objective)


@pytest.mark.parametrize(
    ("method", "settings"),
    [
        ("tr", {}),
        ("wacse", {}),
        ("tr", {"tr_margin": 0.3, "direction": "both"}),
        ("tr", {"tr_margin": 0.3, "hard_negatives": 3}),
        ("wacse", {"hard_negatives": 2}),
    ],
)
def test_cached_gradients_are_the_whole_batchs(
    method, settings, small_subwords, small_word_spans, small_tokenizer, mined_files, tmp_path
):
    torch.set_num_threads(1)
    negatives = mined_files if settings.get("hard_negatives") else None
    cached, reference = (
        _trainer(
            method,
            small_subwords,
            small_word_spans,
            small_tokenizer,
            tmp_path / name,
            negatives,
            **settings,
        )
        for name in ("cached", "reference")
    )
    reference.objective.load_state_dict(cached.objective.state_dict())
    assert cached.accumulation == 4
    indices = [cached.sampler.take(MICRO) for _ in range(4)]

    start = RandomState.capture(cached.device)
    torch.manual_seed(1234)
    state = RandomState.capture(cached.device)
    cached.sampler = _Replay(indices)
    cached.accumulate()
    state.restore(reference.device)
    expected = _whole_batch_reference(reference, indices)
    start.restore(cached.device)

    got = _grads(cached.objective)
    assert set(got) == set(expected)
    for name, grad in expected.items():
        torch.testing.assert_close(got[name], grad, rtol=1e-5, atol=1e-5, msg=name)
    # Dropout was on: the same batch encoded twice from different states differs.
    batch = cached.batch(indices[0])
    assert not torch.equal(cached.objective.embed(batch), cached.objective.embed(batch))


class _Replay:
    """A sampler that hands out given micro-batches (the trainer takes one per call)."""

    def __init__(self, indices: list[np.ndarray]):
        self._indices = list(indices)

    def take(self, n: int) -> np.ndarray:
        return self._indices.pop(0)


def test_a_restored_random_state_draws_the_same_dropout(small_subwords, small_tokenizer, tmp_path):
    trainer = _trainer("tr", small_subwords, {}, small_tokenizer, tmp_path)
    trainer.objective.train()
    batch = trainer.batch(np.arange(MICRO))
    state = RandomState.capture(trainer.device)
    with torch.no_grad():
        first = trainer.objective.embed(batch)
    state.restore(trainer.device)
    second = trainer.objective.embed(batch)  # with a graph, as the cached step's second pass
    assert torch.equal(first, second)


def test_batch_gradients_split_the_whole_batchs_gradient_by_micro_batch():
    """Step 2 alone, by hand: the gradient of TR over 6 pairs in micro-batches of 2, 3, 1
    is that of one TR over the 6, cut at the micro-batches' rows (xx rows, then en rows)."""
    gen = torch.Generator().manual_seed(0)
    xx, en = torch.randn(6, 4, generator=gen), torch.randn(6, 4, generator=gen)
    cuts = [(0, 2), (2, 5), (5, 6)]
    vectors = [torch.cat([xx[a:b], en[a:b]]) for a, b in cuts]
    grads, loss = batch_gradients(vectors, weight=0.8, temperature=0.05, direction="both")
    x, e = xx.clone().requires_grad_(), en.clone().requires_grad_()
    whole = translation_ranking_loss(x, e, 0.05, "both")
    (0.8 * whole).backward()
    assert loss.item() == pytest.approx(float(whole.detach()))
    for (a, b), grad in zip(cuts, grads, strict=True):
        torch.testing.assert_close(grad, torch.cat([x.grad[a:b], e.grad[a:b]]))


def test_batch_gradients_with_a_margin_and_hard_negatives_split_the_whole_batchs_gradient():
    """Step 2 by hand with LaBSE's margin and hard negatives: micro-batches of 2 and 3 pairs,
    k = 2, each micro-batch's negative rows after its pairs (3 rows each; pair 1 of the first
    and pair 0 of the second with empty slots). The gradients are those of one TR over the 5
    pairs, each query's negatives gathered by hand, cut at the micro-batches' rows."""
    gen = torch.Generator().manual_seed(0)
    xx, en = torch.randn(5, 4, generator=gen), torch.randn(5, 4, generator=gen)
    rows = torch.randn(6, 4, generator=gen)
    index = [torch.tensor([[0, 1], [2, -1]]), torch.tensor([[-1, -1], [0, 1], [2, -1]])]
    vectors = [torch.cat([xx[:2], en[:2], rows[:3]]), torch.cat([xx[2:], en[2:], rows[3:]])]
    grads, loss = batch_gradients(vectors, 0.8, 0.05, "both", margin=0.3, hard_index=index)
    x, e, r = (t.clone().requires_grad_() for t in (xx, en, rows))
    zero = torch.zeros(4)
    hard = torch.stack(
        [
            torch.stack([r[0], r[1]]),
            torch.stack([r[2], zero]),
            torch.stack([zero, zero]),
            torch.stack([r[3], r[4]]),
            torch.stack([r[5], zero]),
        ]
    )
    mask = torch.tensor([[1, 1], [1, 0], [0, 0], [1, 1], [1, 0]]).bool()
    whole = translation_ranking_loss(
        x, e, 0.05, "both", margin=0.3, negatives=hard, negatives_mask=mask
    )
    (0.8 * whole).backward()
    assert loss.item() == pytest.approx(float(whole.detach()))
    torch.testing.assert_close(grads[0], torch.cat([x.grad[:2], e.grad[:2], r.grad[:3]]))
    torch.testing.assert_close(grads[1], torch.cat([x.grad[2:], e.grad[2:], r.grad[3:]]))


def test_micro_batch_negatives_are_kept_as_a_setting(
    small_subwords, small_word_spans, small_tokenizer, tmp_path: Path
):
    """`negatives: micro_batch` trains as before: TR within each micro-batch, no second pass."""
    trainer = _trainer("tr", small_subwords, small_word_spans, small_tokenizer, tmp_path)
    settings = trainer.settings
    micro = Trainer(
        TrainSettings(**{**settings.__dict__, "negatives": "micro_batch"}),
        trainer.model_spec,
        {lang: p["train"] for lang, p in small_subwords.items()},
        {lang: p["dev"] for lang, p in small_subwords.items()},
        tmp_path / "micro",
    )
    micro.objective.load_state_dict(trainer.objective.state_dict())
    calls = []
    micro.objective.embed = lambda batch: calls.append(batch)  # the cached pass's entry
    record = micro.accumulate()
    assert calls == [] and record["parts"]["tr"] > 0
