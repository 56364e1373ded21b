"""Memory of the training pool per process, read into each process (before) or memory-mapped
and shared by a node's processes (after): RSS and PSS of 1 and 2 processes holding the pool.

Builds subword files of `--pairs` synthetic pairs over `--langs` languages, as the subwords
rule writes them (`xlsent.tokenize.SUBWORDS_SCHEMA`, zstd): random ids of XLM-R's vocabulary,
a pair's English length drawn lognormal (median 16 subwords, σ 0.6: mean 19) and its
translation's that times a lognormal ratio (σ 0.25), so that a pair is long alike on both
sides. The pool is truncated to `--max-length` (the schema's `train.max_length`).

First a fresh interpreter writes the mapped pool (`xlsent.train.mapped_pool`, as a training's
first process does): its time, and its peak RSS less what the loading processes below held
once they had imported the same modules, the writer's working set
(`xlsent.train.memory.BUILD_BYTES`). Then, for each loader (`in_memory`:
`xlsent.train.data.load_pairs`, what every process did before; `mapped`: `mapped_pairs` on the
pool written) and 1 and 2 processes, each process imports, loads the pool and reads all of it
(as an epoch's batches do; a map's pages are only read in when touched), and this script
reads each one's RSS and PSS from /proc/PID/smaps_rollup once all have loaded, and before
they loaded: the difference is the pool's. PSS divides a shared page between the processes
that map it, so the sum of the processes' PSS is what the node holds. What the second
process adds is the 2-process sum less the 1-process one, as a share of the pool's bytes:
the goal is at most 0.2 for `mapped`.

    .venv/bin/python benchmarks/train_memory.py --pairs 2000000

Prints a table and writes train_memory.json: `pool_mib` (the pool's files), `model_pool_mib`
(`xlsent.train.memory.pool_bytes`, before truncation), `parquet_mib`, `build` (seconds,
peak_rss_mib, import_rss_mib, working_set_mib), `runs` (per loader, per number of processes:
`processes`, each with rss_mib, pss_mib, pool_rss_mib, pool_pss_mib and load_s, and
pool_pss_mib_total) and `second_process_share` (per loader).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from xlsent.tokenize import SUBWORDS_SCHEMA
from xlsent.train.memory import pool_bytes
from xlsent.train.settings import TrainSettings

MIB = 2**20
VOCABULARY = 250_002  # XLM-R's
ROW_GROUP = 100_000  # pairs per row group written, as the subwords rule's batches
LOADERS = ("in_memory", "mapped")
# One thread each, as one process of a node's several would have.
ONE_THREAD = {"POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1", "ARROW_NUM_THREADS": "1"}

IMPORTS = """
import json, sys, time
from pathlib import Path
import numpy as np
from xlsent.train.data import load_pairs
from xlsent.train.distributed import World
from xlsent.train.mapped_pool import mapped_pairs
args = json.loads({args!r})
paths = {{lang: Path(p) for lang, p in args["paths"].items()}}
"""
# The rest of a child's code, after IMPORTS (formatted with the child's arguments).
BUILD = """
start = time.perf_counter()
mapped_pairs(paths, args["max_length"], Path(args["checkpoints"]), World())
print(json.dumps({"seconds": time.perf_counter() - start}))
"""
# A loading process: ready once imported, loads on the first line it reads and reads the
# whole pool, says so, and exits on the second line (the others still hold the map meanwhile).
LOAD = """
print("ready", flush=True)
sys.stdin.readline()
start = time.perf_counter()
if args["loader"] == "mapped":
    pairs = mapped_pairs(paths, args["max_length"], Path(args["checkpoints"]), World())
else:
    pairs = load_pairs(paths, args["max_length"])
arrays = [pairs.xx.values, pairs.xx.offsets, pairs.en.values, pairs.en.offsets, pairs.lang]
touched = sum(int(array.sum(dtype=np.int64)) for array in arrays)
print(json.dumps({"load_s": time.perf_counter() - start, "checksum": touched}), flush=True)
sys.stdin.readline()
"""


def write_subwords(directory: Path, pairs: int, langs: int, seed: int = 0) -> dict[str, Path]:
    """`pairs` synthetic pairs split evenly over `langs` languages, one subwords file each."""
    rng = np.random.default_rng(seed)
    paths = {}
    for index in range(langs):
        lang = f"l{index:02d}"
        paths[lang] = directory / f"{lang}.parquet"
        rows = pairs // langs + (index < pairs % langs)
        with pq.ParquetWriter(paths[lang], SUBWORDS_SCHEMA, compression="zstd") as writer:
            for start in range(0, rows, ROW_GROUP):
                n = min(ROW_GROUP, rows - start)
                en = np.clip(rng.lognormal(np.log(16), 0.6, n), 1, 250).astype(np.int32)
                xx = np.clip(en * rng.lognormal(0, 0.25, n), 1, 250).astype(np.int32)
                columns = {"id": pa.array(np.arange(start, start + n))}
                for side, lengths in (("en_ids", en), ("xx_ids", xx)):
                    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
                    ids = rng.integers(3, VOCABULARY, int(offsets[-1]), dtype=np.int32)
                    columns[side] = pa.ListArray.from_arrays(offsets, ids)
                writer.write_table(pa.table(columns, schema=SUBWORDS_SCHEMA))
    return paths


def memory(pid: int) -> tuple[int, int]:
    """RSS and PSS of process `pid` in bytes (/proc/PID/smaps_rollup, Linux)."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Pss"):
            fields[name] = int(rest.split()[0]) * 1024
    return fields["Rss"], fields["Pss"]


def _send(proc: subprocess.Popen, line: str) -> None:
    proc.stdin.write(f"{line}\n")
    proc.stdin.flush()


def load(args: dict) -> tuple[dict[str, dict], int]:
    """Two processes loading the pool with `args["loader"]`: the first alone while the second
    only imported (the 1-process run), then both (the 2-process run). Per run, each loaded
    process's memory, less what it held before it loaded, and its loading time; and the
    checksum of the pool they read."""
    code = IMPORTS.format(args=json.dumps(args)) + LOAD
    env = {**os.environ, **ONE_THREAD}
    stdio = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True, "env": env}
    procs = [subprocess.Popen([sys.executable, "-c", code], **stdio) for _ in range(2)]
    try:
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit("a loading process did not start")
        before = [memory(proc.pid) for proc in procs]
        loaded, after = [], {}
        for n, proc in enumerate(procs, start=1):
            _send(proc, "load")
            loaded.append(json.loads(proc.stdout.readline()))
            after[str(n)] = [memory(p.pid) for p in procs[:n]]
        for proc in procs:
            _send(proc, "exit")
    finally:
        for proc in procs:
            if proc.wait(timeout=600) != 0:
                raise SystemExit(f"a loading process exited with {proc.returncode}")
    if loaded[0]["checksum"] != loaded[1]["checksum"]:
        raise SystemExit("the processes read different pools")
    runs = {}
    for n, memories in after.items():
        rows = [
            {
                "rss_mib": rss / MIB,
                "pss_mib": pss / MIB,
                "pool_rss_mib": (rss - rss0) / MIB,
                "pool_pss_mib": (pss - pss0) / MIB,
                "load_s": result["load_s"],
            }
            for (rss, pss), (rss0, pss0), result in zip(
                memories, before[: len(memories)], loaded[: len(memories)], strict=True
            )
        ]
        total = sum(row["pool_pss_mib"] for row in rows)
        runs[n] = {"processes": rows, "pool_pss_mib_total": total}
    return runs, loaded[0]["checksum"]


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--pairs", type=int, default=2_000_000, help="pairs in the pool")
    parser.add_argument("--langs", type=int, default=4, help="languages they are split over")
    parser.add_argument(
        "--max-length",
        type=int,
        default=TrainSettings.max_length,
        help="subwords per sentence with the two special tokens (train.max_length)",
    )
    args = harness.parse(parser, smoke={"pairs": 20_000, "langs": 2})

    with tempfile.TemporaryDirectory(prefix="xlsent-bench-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        paths = write_subwords(work, args.pairs, args.langs)
        write_s = time.perf_counter() - started
        parquet = sum(path.stat().st_size for path in paths.values())
        shared = {
            "paths": {lang: str(path) for lang, path in paths.items()},
            "max_length": args.max_length,
            "checkpoints": str(work / "checkpoints"),
        }
        imports = IMPORTS.format(args=json.dumps(shared))
        built, build_rss = harness.run_child(imports + BUILD, env=ONE_THREAD)
        pool = sum(p.stat().st_size for p in (work / "checkpoints" / "pool").glob("*.bin"))
        runs, checksums = {}, set()
        for loader in LOADERS:
            runs[loader], checksum = load({**shared, "loader": loader})
            checksums.add(checksum)
        model_pool = pool_bytes(paths.values(), "tr")
    if len(checksums) != 1:
        raise SystemExit("the loaders read different pools")
    share = {
        loader: (by_n["2"]["pool_pss_mib_total"] - by_n["1"]["pool_pss_mib_total"]) * MIB / pool
        for loader, by_n in runs.items()
    }
    # What an interpreter holds once it imported, before it loads: the least of the loading
    # processes' (the writer's peak less it is what writing the pool took).
    imported = min(
        p["rss_mib"] - p["pool_rss_mib"] for r in runs.values() for p in r["2"]["processes"]
    )
    build = {
        "seconds": built["seconds"],
        "peak_rss_mib": build_rss / MIB,
        "import_rss_mib": imported,
        "working_set_mib": build_rss / MIB - imported,
    }

    print(
        f"pool: {args.pairs:,} synthetic pairs over {args.langs} languages, max_length "
        f"{args.max_length}: {parquet / MIB:,.1f} MiB of Parquet (written in {write_s:.1f} s), "
        f"{pool / MIB:,.1f} MiB mapped ({pool / args.pairs:.0f} B a pair; the model before "
        f"truncation: {model_pool / MIB:,.1f} MiB)"
    )
    print(
        f"writing the mapped pool: {build['seconds']:.1f} s, peak RSS "
        f"{build['peak_rss_mib']:,.0f} MiB against {build['import_rss_mib']:,.0f} MiB of an "
        f"interpreter that only imported: {build['working_set_mib']:,.0f} MiB to write it"
    )
    rows = [
        [
            loader,
            n,
            f"{i}",
            f"{p['rss_mib']:,.0f}",
            f"{p['pss_mib']:,.0f}",
            f"{p['pool_rss_mib']:,.0f}",
            f"{p['pool_pss_mib']:,.0f}",
            f"{p['load_s']:.2f}",
        ]
        for loader, by_n in runs.items()
        for n, run in by_n.items()
        for i, p in enumerate(run["processes"])
    ]
    header = ["loader", "processes", "process", "RSS MiB", "PSS MiB", "pool RSS", "pool PSS"]
    print(harness.table([*header, "load s"], rows))
    for loader, by_n in runs.items():
        total = {n: run["pool_pss_mib_total"] for n, run in by_n.items()}
        print(
            f"{loader}: the node holds {total['1']:,.0f} MiB of pool with 1 process, "
            f"{total['2']:,.0f} with 2: the second adds {share[loader]:.0%} of the pool"
        )
    record = {
        "pairs": args.pairs,
        "langs": args.langs,
        "max_length": args.max_length,
        "parquet_mib": parquet / MIB,
        "pool_mib": pool / MIB,
        "model_pool_mib": model_pool / MIB,
        "build": build,
        "runs": runs,
        "second_process_share": share,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "pyarrow": pa.__version__,
        },
    }
    harness.write_json(args.out_dir, __file__, record)


if __name__ == "__main__":
    main()
