"""Throughput and peak memory of the corpus stage: `clean`, then `sample`, on a large input.

Builds a plain Moses en-kk corpus of `--lines` lines from the real l10n corpus beside the
checkout (../shared/data/l10n): its 50K pairs repeated, each line with its line number glued
to its end, so that pairs stay distinct without gaining a word (cleaning then drops about the
same share as on the real corpus). Then runs each step with the workflow's default settings in
a fresh interpreter pinned to one CPU (polars with one thread) and reports its pairs per second
(pairs in / seconds inside the step, not counting imports) and its peak RSS, beside that of an
interpreter that only imports them.

`--baseline REV` also runs the `clean` of a git revision (its `src/xlsent/corpus/*.py`,
exported with `git show` into a temporary package; everything else is the working tree's) on
the same input, and checks that both wrote the same rows and statistics:

    .venv/bin/python benchmarks/sampling.py --lines 2000000 --baseline HEAD
    .venv/bin/python benchmarks/sampling.py --lines 20000000

Cleaning's memory does not grow with the corpus (see `xlsent.corpus.clean`): the 20M-line
run shows it. Prints a table and writes benchmarks/out/sampling.json (git-ignored).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars
import pyarrow

ROOT = Path(__file__).resolve().parents[1]
L10N = ROOT.parent / "shared" / "data" / "l10n"
BASELINE = "xlsent_baseline"  # the package a revision's corpus modules are exported as

# The peak RSS of one child, read by a launcher: a direct child of this process would report at
# least this process's own RSS (Linux: exec keeps the old address space's high-water mark). The
# launcher pins itself (and so the child) to one CPU where the system lets it.
LAUNCHER = (
    "import os, resource, subprocess, sys; "
    "hasattr(os, 'sched_setaffinity') and os.sched_setaffinity(0, {max(os.sched_getaffinity(0))}); "
    "subprocess.run([sys.executable, '-c', sys.argv[1]], check=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)
# Each step times itself and prints its statistics as one JSON line.
STEP = """
import json, sys, time
{path}
from {package} import local
from {package}.clean import clean
from xlsent.corpus.sample import sample
start = time.perf_counter()
stats = {call}
print(json.dumps({{"seconds": time.perf_counter() - start, "stats": stats}}))
"""


def run(code: str) -> tuple[dict | None, int]:
    """Run `code` in a fresh interpreter; its last JSON line (if any) and its peak RSS in bytes."""
    env = {**os.environ, "POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run(  # stderr passes through: progress bars, and errors if any
        [sys.executable, "-c", LAUNCHER, code],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
        env=env,
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


def export(rev: str, directory: Path) -> str:
    """Write the corpus modules of git revision `rev` into `directory` as the package BASELINE,
    their imports of one another rewritten to it; return the revision's short hash."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout

    short = git("rev-parse", "--short", rev).strip()
    listed = git("ls-tree", "--name-only", rev, "src/xlsent/corpus/").split()
    paths = [p for p in listed if p.endswith(".py")]
    names = "|".join(Path(p).stem for p in paths if Path(p).stem != "__init__")
    package = directory / BASELINE
    package.mkdir()
    for path in paths:
        text = git("show", f"{rev}:{path}")
        text = re.sub(rf"\bxlsent\.corpus(?=\.(?:{names})\b| import)", BASELINE, text)
        (package / Path(path).name).write_text(text)
    return short


def same_rows(a: Path, b: Path, chunk: int = 1_000_000) -> bool:
    """Whether two Parquet files hold the same rows in the same order (read a chunk at a time)."""
    left, right = polars.scan_parquet(a), polars.scan_parquet(b)
    rows = left.select(polars.len()).collect().item()
    if rows != right.select(polars.len()).collect().item():
        return False
    return all(
        left.slice(start, chunk).collect().equals(right.slice(start, chunk).collect())
        for start in range(0, rows, chunk)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5_000_000, help="pairs in the input")
    parser.add_argument("--lang", default="kk", help="the l10n language to repeat")
    parser.add_argument("--baseline", metavar="REV", help="also run this revision's clean")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "sampling.json")
    args = parser.parse_args()
    if not L10N.is_dir():
        sys.exit(f"needs the shared l10n corpus at {L10N}")

    with tempfile.TemporaryDirectory(prefix="xlsent-bench-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        input_bytes = build(work, args.lang, args.lines)
        build_s = time.perf_counter() - started
        _, baseline_rss = run(
            "import xlsent.corpus.clean, xlsent.corpus.sample, xlsent.corpus.readers.local"
        )
        clean_call = (
            f"clean(local.discover({str(work)!r}, {args.lang!r}), {args.lang!r}, {{out!r}})"
        )
        runs = {  # name: (package, its directory, call)
            "clean": ("xlsent.corpus", "", clean_call.format(out=str(work / "clean.parquet"))),
        }
        baseline_rev = None
        if args.baseline:
            baseline_rev = export(args.baseline, work)
            runs = {
                f"clean @{baseline_rev}": (
                    BASELINE,
                    str(work),
                    clean_call.format(out=str(work / "clean-baseline.parquet")),
                ),
                **runs,
            }
        runs["sample"] = (
            "xlsent.corpus",
            "",
            f"sample({str(work / 'clean.parquet')!r}, {args.lang!r}, "
            f"{str(work / 'train.parquet')!r}, {str(work / 'dev.parquet')!r})",
        )
        steps, stats = {}, {}
        for name, (package, path, call) in runs.items():
            path = f"sys.path.insert(0, {path!r})" if path else ""
            result, rss = run(STEP.format(path=path, package=package, call=call))
            stats[name] = result["stats"]
            is_clean = name.startswith("clean")
            pairs_in = stats[name]["read"] if is_clean else stats[name]["available"]
            pairs_out = (
                stats[name]["kept"] if is_clean else stats[name]["train"] + stats[name]["dev"]
            )
            steps[name] = {
                "pairs_in": pairs_in,
                "pairs_out": pairs_out,
                "seconds": round(result["seconds"], 2),
                "pairs_per_s": round(pairs_in / result["seconds"]),
                "peak_rss_mib": round(rss / 2**20),
            }
        same = None
        if baseline_rev:
            baseline_stats = stats[f"clean @{baseline_rev}"]
            same = same_rows(work / "clean-baseline.parquet", work / "clean.parquet") and (
                json.dumps(baseline_stats) == json.dumps(stats["clean"])
            )

    mib = 2**20
    print(f"input: {args.lines:,} pairs of en-{args.lang}, {input_bytes / mib:,.0f} MiB of Moses")
    print(
        f"(built in {build_s:.1f} s); import-only interpreter: {baseline_rss / mib:,.0f} MiB "
        "peak RSS; each step on one CPU"
    )
    width = max(len(name) for name in steps) + 2
    print(
        f"{'step':<{width}}{'pairs in':>12}{'pairs out':>12}{'seconds':>9}{'pairs/s':>12}"
        f"{'peak RSS':>12}"
    )
    for name, s in steps.items():
        print(
            f"{name:<{width}}{s['pairs_in']:>12,}{s['pairs_out']:>12,}{s['seconds']:>9.1f}"
            f"{s['pairs_per_s']:>12,}{s['peak_rss_mib']:>8,} MiB"
        )
    if same is not None:
        print(f"clean @{baseline_rev} and the working tree's: same rows and statistics: {same}")
    record = {
        "lines": args.lines,
        "lang": args.lang,
        "input_mib": round(input_bytes / mib),
        "build_seconds": round(build_s, 1),
        "baseline_peak_rss_mib": round(baseline_rss / mib),
        "one_cpu": hasattr(os, "sched_setaffinity"),
        "steps": steps,
        "baseline": baseline_rev,
        "same_as_baseline": same,
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
