"""The same command gives the same bytes: each encoder method trained twice at once, on two
threads each (four threads on the machine's cores, a busy machine), exports the same weights;
and the kernel that did not, WTR's backward on two threads, now adds in a fixed order.

On a CPU the thread count and the machine's load must not change a result: the trainers run
PyTorch's deterministic algorithms there (`xlsent.train.reproducible`). Word-vector runs are
the exception by design (Hogwild on more than one thread; `bisent2vec.threads: 1` is
reproducible: tests/unit/bisent2vec/test_bisent2vec.py).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support import tiny_shape, train_settings

from xlsent.losses.wtr import word_translation_ranking_loss
from xlsent.train.objectives import word_vectors
from xlsent.train.reproducible import fixed_reduction_order

pytestmark = pytest.mark.slow

SETTINGS = train_settings(
    batch_size=64,
    micro_batch_size=64,
    max_steps=8,
    eval_every=8,
    checkpoint_every=8,
    dev_max_pairs=50,
)
# Each method's own settings beside SETTINGS (tr-tlm: TLM on the joined pairs; dap: a
# one-layer RTL head; wacse: all three of eq. 11's losses).
METHODS = {
    "tr": {},
    "wacse": {"wacse_weights": [0.8, 0.1, 0.1]},
    "dap": {"rtl_layers": 1},
    "mlm": {},
    "tr-tlm": {},
}
SHAPE = tiny_shape(layers=2, hidden_size=64, intermediate_size=128)


def _train(method: str, train: dict[str, Path], dev: dict[str, Path], tokenizer: Path, out: Path):
    """`xlsent train` of `method` as a process of its own on two threads."""
    command = [
        *(sys.executable, "-m", "xlsent.cli", "train"),
        *("--settings", json.dumps({**SETTINGS, "method": method, **METHODS[method]})),
        *("--model", json.dumps({"init": "scratch", **SHAPE})),
        *("--tokenizer", str(tokenizer)),
        *("--train", *(f"{lang}={path}" for lang, path in train.items())),
        *("--dev", *(f"{lang}={path}" for lang, path in dev.items())),
        *("--checkpoints", str(out.with_name(f"{out.name}.checkpoints"))),
        *("--threads", "2", "--out", str(out), "--log", str(out.with_suffix(".log"))),
    ]
    return subprocess.Popen(command, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("method", list(METHODS))
def test_two_runs_at_once_on_two_threads_export_the_same_bytes(
    method, small_subwords, small_word_spans, small_tokenizer, tmp_path
):
    train = (
        small_word_spans
        if method == "wacse"
        else {lang: p["train"] for lang, p in small_subwords.items()}
    )
    dev = {lang: p["dev"] for lang, p in small_subwords.items()}
    runs = [_train(method, train, dev, small_tokenizer, tmp_path / name) for name in ("a", "b")]
    for proc in runs:
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-3000:]
    weights = [(tmp_path / name / "model.safetensors").read_bytes() for name in ("a", "b")]
    assert weights[0] == weights[1], f"{method}: two runs of the same command differ"


@pytest.fixture
def two_threads():
    """Two intra-op threads, and PyTorch's global settings as they were afterwards."""
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(deterministic)
    torch.utils.deterministic.fill_uninitialized_memory = fill


def test_wtrs_backward_on_two_threads_adds_in_a_fixed_order(two_threads):
    """WTR gathers each link's word vectors (`words[pair]`), whose backward adds into the rows
    of a pair's words: on two threads in a varying order (without the trainers' setting, 200
    repetitions of this backward gave 200 different gradients), in a fixed one with it."""
    fixed_reduction_order(torch.device("cpu"))
    generator = torch.Generator().manual_seed(0)
    n, words, tokens, d, links = 128, 12, 24, 64, 600
    hidden = torch.randn(2 * n, tokens, d, generator=generator)
    pool = torch.rand(2 * n, words, tokens, generator=generator)
    valid = torch.rand(2 * n, words, generator=generator) > 0.2
    link = torch.stack(
        [torch.randint(0, high, (links,), generator=generator) for high in (n, words, words)], -1
    )
    gradients = set()
    for _ in range(20):
        states = hidden.clone().requires_grad_()
        vectors = word_vectors(states, pool)
        loss = word_translation_ranking_loss(vectors[:n], valid[:n], vectors[n:], valid[n:], link)
        loss.backward()
        gradients.add(hashlib.sha256(states.grad.numpy().tobytes()).hexdigest())
    assert len(gradients) == 1
