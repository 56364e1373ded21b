"""Training throughput of the TR dual encoder: pairs/s, tokens/s and model FLOPs utilisation.

Two shapes:
- `demo`: the demo config's scratch encoder trained by the real `Trainer` on the real demo
  corpus (CLDR names + Django messages, subword lengths as they are), on this machine's CPU;
- `xlmr-base`: the xlm-roberta-base shape (built from its config: no download) at sequence
  length 32, a synthetic full-length batch per step; meant for a GPU (bf16 autocast), where
  it also reports MFU against the device's dense bf16 peak (`--peak-tflops`).

FLOPs per step follow the usual count for a transformer encoder trained with backprop:
6 · (non-embedding parameters) · tokens + 12 · layers · hidden · seq · tokens (attention).

    .venv/bin/python benchmarks/train.py --shape demo --steps 30
    python benchmarks/train.py --shape xlmr-base --device cuda --batch 256 --peak-tflops 989

Prints a table and writes benchmarks/out/train-{shape}.json (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import torch
import yaml

from xlsent.losses.tr import translation_ranking_loss
from xlsent.models import encoder

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out"


def flops_per_step(config, tokens: int, seq: int) -> float:
    """Forward + backward FLOPs of one step over `tokens` tokens in sequences of `seq`."""
    h, layers = config.hidden_size, config.num_hidden_layers
    per_layer = 4 * h * h + 2 * h * config.intermediate_size  # attention projections + MLP
    return 6 * layers * per_layer * tokens + 12 * layers * h * seq * tokens


def demo_trainer(workdir: Path, batch: int):
    """The real trainer on the real demo corpus, with the demo config's model and settings."""
    from xlsent.config import validate
    from xlsent.corpus import demo
    from xlsent.corpus.clean import CleanConfig, clean
    from xlsent.corpus.sample import SampleConfig, sample
    from xlsent.models.tokenizer import train_sentencepiece
    from xlsent.tokenize import subwords
    from xlsent.train.loop import ModelSpec, Trainer, TrainSettings

    config = validate(
        yaml.safe_load((ROOT / "resources/demo/config.yaml").read_text()),
        ROOT / "workflow/schemas/config.schema.yaml",
    )
    langs = ["de", "kk", "te", "zh"]
    splits = {}
    for lang in langs:
        clean(demo.bitexts(lang, 0.2), lang, workdir / f"{lang}.clean.parquet", CleanConfig(1))
        sample(
            workdir / f"{lang}.clean.parquet",
            lang,
            workdir / f"{lang}.train.parquet",
            workdir / f"{lang}.dev.parquet",
            SampleConfig(dev_pairs=50),
        )
        splits[lang] = workdir / f"{lang}.train.parquet"
    model = config["models"]["tiny"]
    train_sentencepiece(splits, workdir / "tok", model["vocab_size"])
    for lang in langs:
        for split in ("train", "dev"):
            subwords(
                workdir / f"{lang}.{split}.parquet",
                workdir / "tok",
                workdir / f"{lang}.{split}.ids",
            )
    shape = {k: model[k] for k in encoder.SCRATCH_DEFAULTS}
    settings = {k: v for k, v in config["train"].items() if k not in ("threads", "gpus")}
    settings.update(seed=0, batch_size=batch, micro_batch_size=batch, device="cpu")
    return Trainer(
        TrainSettings(**settings),
        ModelSpec("scratch", workdir / "tok", shape=shape),
        {lang: workdir / f"{lang}.train.ids" for lang in langs},
        {lang: workdir / f"{lang}.dev.ids" for lang in langs},
        workdir / "ckpt",
    )


def bench_demo(steps: int, batch: int, threads: int) -> dict:
    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = demo_trainer(Path(tmp), batch)
        for _ in range(3):  # warm-up: allocator, first kernels
            trainer.train_step()
        tokens, start = 0, time.perf_counter()
        for _ in range(steps):
            tokens += trainer.train_step()["tokens"]
        seconds = time.perf_counter() - start
        config = trainer.model.config
    seq = trainer.settings.max_length
    return {
        "shape": "demo",
        "device": f"cpu x{threads} ({platform.processor() or platform.machine()})",
        "batch_pairs": batch,
        "steps": steps,
        "s_per_step": seconds / steps,
        "pairs_per_s": steps * batch / seconds,
        "tokens_per_s": tokens / seconds,
        "achieved_tflops": flops_per_step(config, tokens / steps, seq) * steps / seconds / 1e12,
    }


def bench_xlmr(steps: int, batch: int, seq: int, device: str, peak_tflops: float | None) -> dict:
    from transformers import XLMRobertaConfig, XLMRobertaModel

    config = XLMRobertaConfig(vocab_size=250002, max_position_embeddings=514)  # base shape
    model = XLMRobertaModel(config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    ids = torch.randint(5, config.vocab_size, (2 * batch, seq), device=device)
    mask = torch.ones_like(ids)
    autocast = device.startswith("cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            vectors = encoder.cls_vectors(model, ids, mask)
        xx, en = vectors.split(batch)
        translation_ranking_loss(xx, en).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    if autocast:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if autocast:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    tokens = 2 * batch * seq * steps
    tflops = flops_per_step(config, 2 * batch * seq, seq) * steps / seconds / 1e12
    name = torch.cuda.get_device_name() if autocast else "cpu"
    return {
        "shape": "xlmr-base",
        "device": name,
        "batch_pairs": batch,
        "seq": seq,
        "steps": steps,
        "s_per_step": seconds / steps,
        "ms_per_pair": 1000 * seconds / (steps * batch),
        "pairs_per_s": steps * batch / seconds,
        "tokens_per_s": tokens / seconds,
        "achieved_tflops": tflops,
        "mfu": tflops / peak_tflops if peak_tflops else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=["demo", "xlmr-base"], default="demo")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=None, help="pairs per step")
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--peak-tflops", type=float, help="dense bf16 peak of the device (MFU)")
    args = parser.parse_args()
    if args.shape == "demo":
        result = bench_demo(args.steps, args.batch or 128, args.threads)
    else:
        result = bench_xlmr(args.steps, args.batch or 256, args.seq, args.device, args.peak_tflops)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"train-{args.shape}.json").write_text(json.dumps(result, indent=2) + "\n")
    width = max(map(len, result))
    for key, value in result.items():
        shown = f"{value:,.4g}" if isinstance(value, float) else value
        print(f"{key:<{width}}  {shown}")


if __name__ == "__main__":
    main()
