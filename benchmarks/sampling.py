"""Throughput and peak memory of the corpus stage: `clean`, then `sample`, on a large input.

Builds a plain Moses en-kk corpus of `--lines` lines from the real l10n corpus beside the
checkout (../shared/data/l10n): its 50K pairs repeated, each line with its line number glued
to its end, so that pairs stay distinct without gaining a word (cleaning then drops about the
same share as on the real corpus). Then runs each step with the workflow's default settings in
a fresh interpreter and reports its pairs per second (pairs in / seconds inside the step, not
counting imports) and its peak RSS, beside that of an interpreter that only imports them.

    .venv/bin/python benchmarks/sampling.py --lines 5000000

Prints a table and writes benchmarks/out/sampling.json (git-ignored).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars
import pyarrow

ROOT = Path(__file__).resolve().parents[1]
L10N = ROOT.parent / "shared" / "data" / "l10n"

# The peak RSS of one child, read by a launcher: a direct child of this process would report at
# least this process's own RSS (Linux: exec keeps the old address space's high-water mark).
LAUNCHER = (
    "import resource, subprocess, sys; "
    "subprocess.run([sys.executable, '-c', sys.argv[1]], check=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)
# Each step times itself and prints its statistics as one JSON line.
STEP = """
import json, time
from xlsent.corpus import local
from xlsent.corpus.clean import clean
from xlsent.corpus.sample import sample
start = time.perf_counter()
stats = {call}
print(json.dumps({{"seconds": time.perf_counter() - start, "stats": stats}}))
"""


def run(code: str) -> tuple[dict | None, int]:
    """Run `code` in a fresh interpreter; its last JSON line (if any) and its peak RSS in bytes."""
    out = subprocess.run(  # stderr passes through: progress bars, and errors if any
        [sys.executable, "-c", LAUNCHER, code], stdout=subprocess.PIPE, text=True, check=True
    ).stdout.splitlines()
    rss = int(out[-1]) * (1024 if sys.platform.startswith("linux") else 1)  # KiB on Linux
    return (json.loads(out[-2]) if len(out) > 1 else None), rss


def build(directory: Path, lang: str, lines: int) -> int:
    """Write `lines` lines of Moses en-`lang` into `directory`; return the bytes written."""
    pair = "-".join(sorted(("en", lang)))
    size = 0
    for side in ("en", lang):
        with gzip.open(L10N / f"l10n.{pair}.{side}.gz", "rt", encoding="utf-8") as f:
            base = f.read().removesuffix("\n").split("\n")
        with open(directory / f"bench.{pair}.{side}", "w", encoding="utf-8") as out:
            for start in range(0, lines, 100_000):
                stop = min(start + 100_000, lines)
                out.write("".join(f"{base[i % len(base)]}{i}\n" for i in range(start, stop)))
        size += (directory / f"bench.{pair}.{side}").stat().st_size
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5_000_000, help="pairs in the input")
    parser.add_argument("--lang", default="kk", help="the l10n language to repeat")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "sampling.json")
    args = parser.parse_args()
    if not L10N.is_dir():
        sys.exit(f"needs the shared l10n corpus at {L10N}")

    with tempfile.TemporaryDirectory(prefix="xlsent-bench-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        input_bytes = build(work, args.lang, args.lines)
        build_s = time.perf_counter() - started
        _, baseline = run("import xlsent.corpus.clean, xlsent.corpus.sample, xlsent.corpus.local")
        steps = {}
        calls = {
            "clean": f"clean(local.discover({str(work)!r}, {args.lang!r}), {args.lang!r}, "
            f"{str(work / 'clean.parquet')!r})",
            "sample": f"sample({str(work / 'clean.parquet')!r}, {args.lang!r}, "
            f"{str(work / 'train.parquet')!r}, {str(work / 'dev.parquet')!r})",
        }
        for name, call in calls.items():
            result, rss = run(STEP.format(call=call))
            stats = result["stats"]
            pairs_in = stats["read"] if name == "clean" else stats["available"]
            pairs_out = stats["kept"] if name == "clean" else stats["train"] + stats["dev"]
            steps[name] = {
                "pairs_in": pairs_in,
                "pairs_out": pairs_out,
                "seconds": round(result["seconds"], 2),
                "pairs_per_s": round(pairs_in / result["seconds"]),
                "peak_rss_mib": round(rss / 2**20),
            }

    mib = 2**20
    print(f"input: {args.lines:,} pairs of en-{args.lang}, {input_bytes / mib:,.0f} MiB of Moses")
    print(
        f"(built in {build_s:.1f} s); import-only interpreter: {baseline / mib:,.0f} MiB peak RSS"
    )
    print(
        f"{'step':<8}{'pairs in':>12}{'pairs out':>12}{'seconds':>9}{'pairs/s':>12}{'peak RSS':>12}"
    )
    for name, s in steps.items():
        print(
            f"{name:<8}{s['pairs_in']:>12,}{s['pairs_out']:>12,}{s['seconds']:>9.1f}"
            f"{s['pairs_per_s']:>12,}{s['peak_rss_mib']:>8,} MiB"
        )
    record = {
        "lines": args.lines,
        "lang": args.lang,
        "input_mib": round(input_bytes / mib),
        "build_seconds": round(build_s, 1),
        "baseline_peak_rss_mib": round(baseline / mib),
        "steps": steps,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "polars": polars.__version__,
            "pyarrow": pyarrow.__version__,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
