"""The same command gives the same bytes: each encoder method trained twice at once, on two
threads each (four threads on the machine's cores, a busy machine), exports the same weights.

On a CPU the thread count and the machine's load must not change a result: the trainers run
their reductions in a fixed order whatever the load (`xlsent.cli` fixes the math libraries'
threading, docs/methods.md "Reproducibility"). Word-vector runs are the exception by design
(Hogwild on more than one thread; `bisent2vec.threads: 1` is reproducible: test_bisent2vec).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import tiny_shape

pytestmark = pytest.mark.slow

SETTINGS = dict(
    seed=7,
    max_length=16,
    lr=1e-3,
    batch_size=32,
    micro_batch_size=16,
    max_steps=8,
    eval_every=8,
    checkpoint_every=8,
    log_every=4,
    dev_max_pairs=50,
    device="cpu",
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


def _train(method: str, train: dict[str, Path], dev: dict[str, Path], tokenizer: Path, out: Path):
    """`xlsent train` of `method` as a process of its own on two threads."""
    command = [
        *(sys.executable, "-m", "xlsent.cli", "train"),
        *("--settings", json.dumps({**SETTINGS, "method": method, **METHODS[method]})),
        *("--model", json.dumps({"init": "scratch", **tiny_shape(layers=2)})),
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
