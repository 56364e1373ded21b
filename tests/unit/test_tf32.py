"""TF32 (xlsent.tf32): the switches on inside `tf32_matmuls(True)` and as they were after it,
an error included; WSPAlign's `precision: tf32` runs the model with them on, and only then.
Training's `precision: tf32` is tested with the step (tests/unit/train/test_step.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
from support import tiny_qa_model
from transformers import AutoTokenizer

from xlsent.align.links import SentencePair
from xlsent.align.wspalign import WSPAlignConfig, WSPAligner
from xlsent.tf32 import tf32_matmuls
from xlsent.tokenize import word_tokenizer


def _switches() -> tuple[bool, bool]:
    return torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32


def test_the_switches_are_on_inside_and_restored_after_even_on_an_error():
    before = _switches()
    assert before[0] is False  # PyTorch's default for matmuls
    with tf32_matmuls(True):
        assert _switches() == (True, True)
        with tf32_matmuls(False):  # off: left as they are
            assert _switches() == (True, True)
    assert _switches() == before
    with pytest.raises(KeyError), tf32_matmuls(True):
        raise KeyError
    assert _switches() == before


def test_wspalign_runs_its_model_with_the_switches_on_under_tf32_only(
    small_tokenizer: Path, small_corpus
):
    """The switches as they were under fp32 and bf16. On a CPU they change no product:
    tf32's links are fp32's."""
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    model = tiny_qa_model(tokenizer, layers=2)

    seen: list[tuple[bool, bool]] = []
    model.register_forward_pre_hook(lambda *_: seen.append(_switches()))
    table = pq.read_table(small_corpus["de"]["dev"], columns=["en", "xx"]).slice(0, 10)
    rows = list(zip(*table.to_pydict().values(), strict=True))
    en = word_tokenizer("en")([e for e, _ in rows])
    de = word_tokenizer("de")([x for _, x in rows])
    pairs = [SentencePair(e, x, ew, xw) for (e, x), ew, xw in zip(rows, en, de, strict=True)]
    links, before = {}, _switches()  # cuDNN's is on by default (convolutions), cuBLAS's off
    for precision in ("tf32", "fp32", "bf16"):
        seen.clear()
        cfg = WSPAlignConfig(precision=precision, combine="union", threshold=0.0, device="cpu")
        links[precision] = [a.links for a in WSPAligner(model, tokenizer, cfg).align(pairs)]
        assert seen and set(seen) == {(True, True) if precision == "tf32" else before}
        assert _switches() == before
    assert links["tf32"] == links["fp32"] and any(links["fp32"])
