"""Every training reports its speed: the GPUs' peaks, the MFU arithmetic, and the trainer's
log lines carrying real tokens/s, model TFLOP/s and MFU (null on a CPU unless given a peak)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support import scratch_trainer, tiny_shape, train_settings

from xlsent.train.loop import Trainer
from xlsent.train.speed import FIELDS, Throughput, known_gpu, mfu, peak_tflops

SETTINGS = train_settings(
    lr=5e-5,  # TrainSettings' default
    max_steps=2,
    eval_every=2,
    checkpoint_every=2,
    log_every=1,
    dev_max_pairs=50,
)


@pytest.mark.parametrize(
    ("name", "bf16", "fp32"),
    [
        ("NVIDIA H100 80GB HBM3", 989.4, 67.0),  # the SXM5 board's name
        ("NVIDIA H100 PCIe", 756.5, 51.0),
        ("NVIDIA H100 NVL", 835.5, 60.0),
        ("NVIDIA H200", 989.4, 67.0),
        ("NVIDIA A100-SXM4-80GB", 312.0, 19.5),
        ("NVIDIA A100 80GB PCIe", 312.0, 19.5),
        ("NVIDIA L40S", 362.05, 91.6),
        ("NVIDIA L4", 121.0, 30.3),
        ("NVIDIA A10", 125.0, 31.2),
        ("Tesla V100-SXM2-32GB", None, 15.7),  # no bf16 tensor cores
        ("NVIDIA GeForce RTX 4090", 165.2, 82.6),
    ],
)
def test_known_gpus_are_matched_on_their_cuda_names(name, bf16, fp32):
    gpu = known_gpu(name)
    assert (gpu.bf16, gpu.fp32) == (bf16, fp32)


@pytest.mark.parametrize(
    ("name", "tf32"),
    [  # the datasheets' dense TF32 figures (half their "with sparsity" ones)
        ("NVIDIA H100 80GB HBM3", 494.5),
        ("NVIDIA A100-SXM4-80GB", 156.0),
        ("NVIDIA L40S", 183.0),
        ("NVIDIA L4", 60.0),
        ("NVIDIA A10", 62.5),
        ("Tesla V100-SXM2-32GB", None),  # no TF32 tensor cores
    ],
)
def test_the_tf32_peak_is_the_datasheets(name, tf32):
    """`precision: tf32`'s MFU divides by the TF32 tensor-core peak, not fp32's."""
    assert known_gpu(name).tf32 == (None if tf32 is None else pytest.approx(tf32, rel=0.02))


def test_a_gpu_not_in_the_table_and_a_cpu_have_no_peak_unless_one_is_given():
    assert known_gpu("NVIDIA A10G") is None  # not the A10: AWS's clocks
    assert known_gpu("AMD Instinct MI300X") is None
    cpu = torch.device("cpu")
    assert peak_tflops(cpu, "bf16", None) is None
    assert peak_tflops(cpu, "fp32", 1.5) == 1.5  # train.peak_tflops wins everywhere


def test_mfu_is_the_achieved_flops_over_the_peak():
    # 2.4e15 FLOPs in 8 s: 300 TFLOP/s; against an H100 SXM's 989.4: 30.3 %.
    assert mfu(2.4e15, 8.0, 989.4) == pytest.approx(300 / 989.4)
    assert mfu(2.4e15, 8.0, None) is None


def test_the_throughput_of_the_steps_since_the_last_line():
    """Two steps of 1,024 pairs, 40,000 and 20,000 real tokens (every process's), 1.2e14
    and 0.8e14 FLOPs on this device, in 0.5 s and 0.3 s: 2,560 pairs/s, 75,000 tokens/s,
    250 TFLOP/s, MFU 0.25 against a peak of 1,000; then a fresh count."""
    speed = Throughput(1000.0)
    speed.add(1024, 40_000, 1.2e14, 0.5)
    speed.add(1024, 20_000, 0.8e14, 0.3)
    fields = speed.fields()
    assert tuple(fields) == FIELDS
    assert fields == {
        "pairs_per_s": 2560.0,
        "tokens_per_s": 75_000.0,
        "model_tflops": 250.0,
        "mfu": 0.25,
    }
    speed.add(10, 100, 1e12, 1.0)
    assert speed.fields()["pairs_per_s"] == 10.0


def _trainer(small_subwords, small_tokenizer, checkpoints: Path, **overrides) -> Trainer:
    return scratch_trainer(small_subwords, small_tokenizer, checkpoints, {**SETTINGS, **overrides})


def test_a_step_counts_its_real_tokens_and_its_model_flops(
    small_subwords, small_tokenizer, tmp_path
):
    """Two micro-batches of 16 pairs, TR over the batch of 32 by gradient caching: the
    pass without a graph is a third of the encoder's, and the similarities are 32 × 32."""
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path)
    built, collator = [], trainer.objective.collator

    def recorded(*args):
        built.append(collator(*args))
        return built[-1]

    trainer.objective.collator = recorded
    record = trainer.train_step()
    assert record["tokens"] == sum(int(batch.mask.sum()) for batch in built)
    assert record["tokens"] < sum(batch.mask.numel() for batch in built)  # padding left out
    flops = record["flops"]
    assert flops.keys() == {"encoder", "tr_cache", "tr"}
    assert flops["tr_cache"] == pytest.approx(flops["encoder"] / 3)
    assert flops["tr"] == 6 * tiny_shape()["hidden_size"] * 32 * 32


def test_each_log_line_carries_the_speed_and_mfu_only_with_a_peak(
    small_subwords, small_tokenizer, tmp_path
):
    trainer = _trainer(small_subwords, small_tokenizer, tmp_path / "cpu")
    trainer.run(tmp_path / "cpu.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "cpu.jsonl").read_text().splitlines()]
    speed = [line for line in lines if "loss" in line]
    assert [line["step"] for line in speed] == [1, 2]
    for line in speed:
        assert line["pairs_per_s"] > 0 and line["tokens_per_s"] > line["pairs_per_s"]
        assert line["model_tflops"] > 0
        assert line["mfu"] is None  # a CPU: no known peak
    given = _trainer(small_subwords, small_tokenizer, tmp_path / "given", peak_tflops=0.001)
    given.run(tmp_path / "given.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "given.jsonl").read_text().splitlines()]
    for line in (line for line in lines if "loss" in line):
        # (Both rounded in the log: 4 significant digits, 4 decimals.)
        assert line["mfu"] == pytest.approx(line["model_tflops"] / 0.001, rel=1e-3, abs=1e-4)
