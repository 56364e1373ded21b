"""`train.compile`: the encoder's training passes through torch.compile give the losses and
weights of the uncompiled run to rounding (dropout on, TR cached over two micro-batches, so
the compiled pass without a graph and the one with a graph replay the same masks), leave
the checkpoint's names and dev P@1's encoder as they are. Slow: inductor compiles the tiny
encoder's two graphs in about a minute on 2 CPU cores."""

from __future__ import annotations

import pytest
import torch
from support import tiny_shape

from xlsent.train.loop import Trainer
from xlsent.train.settings import ModelSpec, TrainSettings

pytestmark = pytest.mark.slow


def _trainer(small_subwords, small_tokenizer, checkpoints, **settings) -> Trainer:
    return Trainer(
        TrainSettings(
            seed=3,
            max_length=16,
            lr=1e-3,
            batch_size=32,
            micro_batch_size=16,
            max_steps=3,
            eval_every=3,
            checkpoint_every=3,
            log_every=1,
            dev_max_pairs=20,
            precision="fp32",
            device="cpu",
            **settings,
        ),
        ModelSpec("scratch", small_tokenizer, shape=tiny_shape(layers=2)),
        {lang: p["train"] for lang, p in small_subwords.items()},
        {lang: p["dev"] for lang, p in small_subwords.items()},
        checkpoints,
    )


def test_a_compiled_run_trains_as_the_uncompiled_one_to_rounding(
    small_subwords, small_tokenizer, tmp_path
):
    torch.set_num_threads(1)
    plain = _trainer(small_subwords, small_tokenizer, tmp_path / "plain")
    plain.run()  # before the other is built: each draws from the seed its building sets
    compiled = _trainer(small_subwords, small_tokenizer, tmp_path / "compiled", compile=True)
    compiled.run()
    assert plain.objective._compiled is None and compiled.objective._compiled is not None
    losses = [[e["loss"] for e in t.history if "loss" in e] for t in (plain, compiled)]
    assert len(losses[0]) == 3
    assert losses[1] == pytest.approx(losses[0], abs=1e-5)
    ours, theirs = compiled.objective.state_dict(), plain.objective.state_dict()
    assert list(ours) == list(theirs)
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value, rtol=1e-4, atol=1e-5, msg=name)
    assert compiled.best["dev_p1"] == plain.best["dev_p1"]
