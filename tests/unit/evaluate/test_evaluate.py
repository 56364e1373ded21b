"""Evaluation gives the same numbers on every device: it encodes in fp32 unless
`evaluate.precision` asks for bf16, and bf16 is honoured where asked (on a CPU too: torch's
CPU autocast rounds the same products to bf16), in the encode jobs and in dev P@1 alike."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import yaml
from support import ROOT, tiny_shape

from xlsent.config.runs import LEFT_OUT_AT_DEFAULT, encoding_settings
from xlsent.evaluate import EncodingSettings
from xlsent.models import encoder
from xlsent.models.dualpivot import DualPivotEncoder, DualPivotHead, HeadConfig
from xlsent.models.encoder import TextEncoder
from xlsent.models.sentence import DEFAULT_PRECISION
from xlsent.train.loop import Trainer
from xlsent.train.settings import ModelSpec, TrainSettings

SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
TEXTS = ["Deutschland", "Die Datei wurde nicht gefunden.", "Kasachstan", "Passwort ändern"]


def test_fp32_is_the_default_everywhere_and_left_out_of_a_jobs_settings():
    schema = SCHEMA["properties"]["evaluate"]["properties"]["precision"]
    assert schema["default"] == DEFAULT_PRECISION == "fp32"
    assert LEFT_OUT_AT_DEFAULT["evaluate"] == {"precision": DEFAULT_PRECISION}
    assert EncodingSettings(max_length=8, batch_size=2, device="cpu").precision == "fp32"
    # A job's --encoding (the encode rule's params) holds it only where it is not the default,
    # so that no vectors encoded before the setting existed are encoded again.
    config = {
        "evaluate": {"max_length": 8, "batch_size": 2, "device": "auto", "precision": "fp32"},
        "runs": {"tr": {"method": "tr", "train": {}}},
        "train": {"max_length": 8},
    }
    assert "precision" not in encoding_settings(config, "tr")
    config["evaluate"]["precision"] = "bf16"
    assert encoding_settings(config, "tr")["precision"] == "bf16"
    with pytest.raises(ValueError, match=r"evaluate\.precision is 'fp16'"):
        EncodingSettings(max_length=8, batch_size=2, device="cpu", precision="fp16")


@pytest.fixture(scope="module")
def model(small_tokenizer):
    return encoder.build("scratch", small_tokenizer, None, 16, tiny_shape(layers=2))


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = (x / np.linalg.norm(x, axis=1, keepdims=True) for x in (a, b))
    return (a * b).sum(1)


def test_the_text_encoder_encodes_in_fp32_unless_asked_for_bf16(model, small_tokenizer):
    def encode(**precision) -> np.ndarray:
        return TextEncoder(model, small_tokenizer, 16, 2, "cpu", **precision)(TEXTS, "de")

    default, fp32, bf16 = encode(), encode(precision="fp32"), encode(precision="bf16")
    assert np.array_equal(default, fp32)
    assert not np.array_equal(bf16, fp32)  # bf16's rounding, in the third significant digit
    assert _cosines(bf16, fp32).min() > 0.99


def test_a_dual_pivot_encoder_runs_its_frozen_encoder_at_the_precision_asked(
    model, small_tokenizer
):
    head = DualPivotHead(HeadConfig(states=3, hidden=32)).eval()

    def encode(precision: str) -> np.ndarray:
        pivot = DualPivotEncoder(model, head, small_tokenizer, 16, 2, "cpu", "", precision)
        return pivot(TEXTS, "de")

    fp32, bf16 = encode("fp32"), encode("bf16")
    assert not np.array_equal(bf16, fp32)
    assert _cosines(bf16, fp32).min() > 0.99


def test_dev_p1_encodes_at_the_evaluations_precision(small_subwords, small_tokenizer, tmp_path):
    """The trainer's dev vectors: fp32 by default whatever training computes in (its
    `precision` bf16 autocasts on CUDA only), bf16 where asked."""
    settings = TrainSettings(
        seed=7, max_length=16, batch_size=16, micro_batch_size=16, device="cpu"
    )
    trainer = Trainer(
        settings,
        ModelSpec("scratch", small_tokenizer, shape=tiny_shape()),
        {lang: p["train"] for lang, p in small_subwords.items()},
        {lang: p["dev"] for lang, p in small_subwords.items()},
        tmp_path,
    )
    trainer.objective.eval()
    rows = trainer.dev_data["de"].xx
    with torch.inference_mode():  # as `evaluate` calls it
        fp32, bf16 = trainer._encode(rows, "de", "fp32"), trainer._encode(rows, "de", "bf16")
    assert not np.array_equal(bf16, fp32)
    assert _cosines(bf16, fp32).min() > 0.99
    default = trainer.evaluate()
    assert default == trainer.evaluate("fp32")
    assert dataclasses.fields(EncodingSettings)[-1].default == DEFAULT_PRECISION
