"""Bitext mining at BUCC's scale: exact against approximate kNN, time, memory and recall.

BUCC 2018's de-en training split has about 400K sentences a side. This mines `--n` × `--n`
synthetic unit vectors at the model's dimension (`--dim`, 768: xlm-roberta-base) with
`xlsent.evaluate.mining` as the workflow does (k = 4 both ways, ratio margin, max
retrieval), once per index of `--indexes` (flat: exact; ivf, hnsw: approximate, with the
schema's default parameters unless `--set` changes them), each in a fresh interpreter whose
peak RSS is read, beside that of an interpreter that only loads the vectors. For each it
reports:

- seconds of the kNN search both ways (index building included) and of the margin scoring
  and retrieval;
- recall@4 of the x→y search against exact search, on `--recall-queries` random queries
  (exact search of all n queries is what `flat` costs);
- F1 at the best threshold of the planted pairs (`--pairs` of them): what the index's
  misses cost the mining itself.

The vectors are not uniform on the sphere (on which nearest neighbours are all alike and
approximate indexes look worse than on real embeddings): each is a random topic centre (of
`--topics`) plus noise (`--spread`: two sentences of a topic have cosine ≈ 0.3), and a
planted pair's English side is its foreign side plus noise (`--noise`: cosine ≈ 0.85); the
other sentences of both sides are drawn from the same topics.

Exact search costs 2·n²·d multiply-adds (at 400K and 768 dimensions, about an hour and a
half on 2 cores), so `--flat-queries Q` times it on Q queries each way against all n keys,
in a fresh interpreter that holds both sides' vectors as the full search does (its peak RSS
is the full search's, but for the n × k results), and reports the seconds scaled by n / Q
(exact search is linear in the queries), marked as such; its recall is 1 by definition and
its F1 is not measured.

    flock /tmp/xlsent-cpu.lock .venv/bin/python benchmarks/mining.py --n 50000
    flock /tmp/xlsent-cpu.lock .venv/bin/python benchmarks/mining.py --n 400000 --flat-queries 16384

Prints a table and writes mining.json: `results` (per index: knn_s, select_s, recall, f1,
peak_rss_gib; an extrapolated flat search only knn_s, recall and peak_rss_gib).
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path

import harness
import numpy as np

LOAD = """
import json, time
import numpy as np
x = np.load({x!r})
y = np.load({y!r})
"""
# One mining run: the kNN both ways, then margins and retrieval, each timed; then recall@k of
# the x→y neighbours on the sampled queries, and F1 of the planted pairs (not timed).
MINE = (
    LOAD
    + """
import faiss
from xlsent.evaluate import mining
settings = mining.MiningSettings(**{settings})
start = time.perf_counter()
x, y = mining.unit_rows(x, "x"), mining.unit_rows(y, "y")
found = mining.neighbours(x, y, settings)
knn_s = time.perf_counter() - start
start = time.perf_counter()
candidates = mining.candidates(found, settings)
select_s = time.perf_counter() - start
queries = np.load({queries!r})
exact = np.load({exact!r})
got = found.x2y_ind[queries]
recall = float(np.mean([len(set(a) & set(e)) / len(e) for a, e in zip(got, exact)]))
correct = (candidates.src == candidates.trg) & (candidates.src < {pairs})
best = mining.best_threshold(candidates.score, correct, {pairs})
print(json.dumps({{"knn_s": knn_s, "select_s": select_s, "recall": recall, "f1": best.f1,
                  "precision": best.precision, "recall_pairs": best.recall,
                  "candidates": len(candidates)}}))
"""
)
# Exact search of the first q queries each way, timed, against all keys: `--flat-queries`.
FLAT_SAMPLE = (
    LOAD
    + """
from xlsent.evaluate import mining
settings = mining.MiningSettings(knn="flat")
x, y = mining.unit_rows(x, "x"), mining.unit_rows(y, "y")
start = time.perf_counter()
mining.knn(x[:{q}], y, settings, desc="x→y kNN")
mining.knn(y[:{q}], x, settings, desc="y→x kNN")
print(json.dumps({{"sample_knn_s": time.perf_counter() - start}}))
"""
)


def synthesize(
    directory: Path,
    n: int,
    dim: int,
    pairs: int,
    topics: int,
    spread: float,
    noise: float,
    seed: int,
) -> tuple[Path, Path]:
    """Write x and y (n × dim float32 each) as .npy; rows < `pairs` of y translate x's.

    A sentence is a topic centre (standard normal) plus `spread` × standard normal noise:
    two sentences of a topic have cosine about 1 / (1 + spread²), of two topics about 0. A
    translation adds `noise` × standard normal: cosine about 1 / √(1 + noise² / (1 + spread²)).
    """
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dim)).astype(np.float32)
    paths = (directory / "x.npy", directory / "y.npy")
    x = np.lib.format.open_memmap(paths[0], mode="w+", dtype=np.float32, shape=(n, dim))
    y = np.lib.format.open_memmap(paths[1], mode="w+", dtype=np.float32, shape=(n, dim))
    step = 50_000
    for side in (x, y):
        for start in range(0, n, step):
            rows = min(step, n - start)
            own = spread * rng.standard_normal((rows, dim), dtype=np.float32)
            side[start : start + rows] = centres[rng.integers(topics, size=rows)] + own
    for start in range(0, pairs, step):  # the planted translations
        stop = min(start + step, pairs)
        y[start:stop] = x[start:stop] + noise * rng.standard_normal((stop - start, dim))
    x.flush()
    y.flush()
    del x, y
    return paths


def exact_neighbours(x_path: Path, y_path: Path, queries: np.ndarray, k: int) -> np.ndarray:
    """The exact k nearest rows of y (cosine) of the sampled rows of x."""
    import faiss

    x = np.load(x_path, mmap_mode="r")[queries].astype(np.float32)
    y = np.load(y_path)
    faiss.normalize_L2(x)
    faiss.normalize_L2(y)
    return faiss.knn(x, y, k, metric=faiss.METRIC_INNER_PRODUCT)[1]


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--n", type=int, default=400_000, help="sentences per side")
    parser.add_argument("--dim", type=int, default=768, help="vector dimension")
    parser.add_argument("--pairs", type=int, help="planted pairs (default 3%% of n, as BUCC)")
    parser.add_argument("--topics", type=int, default=1000, help="topic centres")
    parser.add_argument(
        "--spread", type=float, default=1.5, help="sentence noise (topic cosine 1/(1+s²))"
    )
    parser.add_argument(
        "--noise", type=float, default=1.1, help="translation noise (cosine ~0.85 at 1.1)"
    )
    parser.add_argument("--indexes", nargs="+", default=["flat", "ivf", "hnsw"])
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="evaluate.bucc.mining settings other than the schema's, e.g. ivf_nprobe=16",
    )
    parser.add_argument("--recall-queries", type=int, default=2000)
    parser.add_argument(
        "--flat-queries",
        type=int,
        metavar="Q",
        help="time exact search on Q queries each way and scale it to n (instead of all n)",
    )
    parser.add_argument("--seed", type=int, default=0)
    smoke = {"n": 2000, "dim": 32, "topics": 20, "recall_queries": 200, "flat_queries": 500}
    args = harness.parse(parser, smoke)
    pairs = args.pairs if args.pairs is not None else round(0.03 * args.n)

    from xlsent.evaluate.mining import MiningSettings

    overrides = {key: json.loads(value) for key, _, value in (s.partition("=") for s in args.set)}
    results = {}
    with tempfile.TemporaryDirectory(prefix="xlsent-mining-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        x_path, y_path = synthesize(
            work, args.n, args.dim, pairs, args.topics, args.spread, args.noise, args.seed
        )
        rng = np.random.default_rng(args.seed + 1)
        queries = np.sort(rng.choice(args.n, size=min(args.recall_queries, args.n), replace=False))
        k = MiningSettings().k
        np.save(work / "queries.npy", queries)
        np.save(work / "exact.npy", exact_neighbours(x_path, y_path, queries, k))
        setup_s = time.perf_counter() - started
        _, baseline = harness.run_child(LOAD.format(x=str(x_path), y=str(y_path)))
        for index in args.indexes:
            settings = {"knn": index, **overrides}
            if index == "flat" and args.flat_queries and args.flat_queries < args.n:
                result, rss = harness.run_child(
                    FLAT_SAMPLE.format(x=str(x_path), y=str(y_path), q=args.flat_queries)
                )
                results[index] = {
                    "knn_s": result["sample_knn_s"] * args.n / args.flat_queries,
                    "extrapolated_from_queries": args.flat_queries,
                    "recall": 1.0,
                    "settings": {"knn": "flat"},
                    "peak_rss_gib": rss / 2**30,
                }
                continue
            code = MINE.format(
                x=str(x_path),
                y=str(y_path),
                settings=settings,
                queries=str(work / "queries.npy"),
                exact=str(work / "exact.npy"),
                pairs=pairs,
            )
            result, rss = harness.run_child(code)
            results[index] = {
                **result,
                "settings": {
                    key: value
                    for key, value in MiningSettings(**settings).__dict__.items()
                    if key == "knn" or key.startswith(index) or key in ("k", "search_batch_size")
                },
                "peak_rss_gib": rss / 2**30,
            }

    gib = 2**30
    vectors = 2 * args.n * args.dim * 4 / gib
    print(
        f"{args.n:,} × {args.n:,} sentences, dim {args.dim}, {pairs:,} planted pairs, "
        f"{args.topics} topics (spread {args.spread}, translation noise {args.noise}); "
        f"{os.cpu_count()} CPUs; synthesis and exact recall reference "
        f"{setup_s:.0f} s"
    )
    print(
        f"both sides' float32 vectors: {vectors:.2f} GiB; an interpreter that loads them: "
        f"{baseline / gib:.2f} GiB peak RSS"
    )
    rows, notes = [], []
    for index, r in results.items():
        scaled = "extrapolated_from_queries" in r
        rows.append(
            [
                index + "*" * scaled,
                f"{r['knn_s']:.1f}",
                "–" if scaled else f"{r['select_s']:.1f}",
                f"{r['peak_rss_gib']:.2f} G",
                f"{r['recall']:.4f}",
                "–" if scaled else f"{r['f1']:.1f}",
            ]
        )
        if scaled:
            q = r["extrapolated_from_queries"]
            notes.append(
                f"* exact search of {q:,} queries each way against all {args.n:,} keys, its "
                f"seconds × {args.n / q:.1f}; recall 1 by definition, F1 not measured"
            )
    print(harness.table(["index", "kNN s", "margin s", "peak RSS", "recall@4", "F1"], rows))
    print("\n".join(notes))
    record = {
        "n": args.n,
        "dim": args.dim,
        "pairs": pairs,
        "topics": args.topics,
        "spread": args.spread,
        "noise": args.noise,
        "recall_queries": len(queries),
        "cpus": os.cpu_count(),
        "machine": platform.platform(),
        "baseline_rss_gib": baseline / gib,
        "results": results,
    }
    harness.write_json(args.out_dir, __file__, record)


if __name__ == "__main__":
    main()
