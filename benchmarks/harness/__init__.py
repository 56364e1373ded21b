"""What the scripts of benchmarks/ share: their interface, their JSON, a child's peak memory.

Every script runs as `python benchmarks/NAME.py [OPTIONS] [--smoke] [--out-dir DIR]`, prints
a table and writes DIR/NAME.json (default benchmarks/out/, git-ignored). `--smoke` replaces
the defaults of its sizes with tiny ones (seconds on 2 cores; options given on the command
line still win), so that tests/unit/test_benchmarks.py can run each script end to end and
no script rots between the measurements that docs/results.md quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "out"
SHARED = ROOT.parent / "shared" / "data"


def parser(doc: str) -> argparse.ArgumentParser:
    """A script's parser, described by its docstring's first paragraph, with `--smoke` and
    `--out-dir`."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes (seconds): a check that it runs"
    )
    parser.add_argument(
        "--out-dir", type=Path, default=OUT, help="where NAME.json goes (default benchmarks/out)"
    )
    return parser


def parse(parser: argparse.ArgumentParser, smoke: dict[str, Any]) -> argparse.Namespace:
    """The command line; with `--smoke`, `smoke` replaces the defaults it names."""
    known = vars(parser.parse_args([]))
    unknown = smoke.keys() - known.keys()
    if unknown:  # a typo would silently leave a full-size default in the smoke run
        raise ValueError(f"smoke settings for no option: {sorted(unknown)}")
    if parser.parse_known_args()[0].smoke:
        parser.set_defaults(**smoke)
    return parser.parse_args()


def write_json(out_dir: Path, script: str, record: dict[str, Any]) -> Path:
    """Write `record` as out_dir/NAME.json, NAME the stem of `script` (a script's __file__)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{Path(script).stem}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")
    return path


# The peak RSS of one child, read by a launcher: a direct child of the benchmark would report at
# least the benchmark's own RSS (Linux: exec keeps the old address space's high-water mark).
# With argv[2] "1" the launcher pins itself (and so the child) to one CPU where the system
# lets it.
_LAUNCHER = (
    "import os, resource, subprocess, sys; "
    "sys.argv[2] == '1' and hasattr(os, 'sched_setaffinity') and "
    "os.sched_setaffinity(0, {max(os.sched_getaffinity(0))}); "
    "subprocess.run([sys.executable, '-c', sys.argv[1]], check=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def run_child(
    code: str, *, one_cpu: bool = False, env: dict[str, str] | None = None
) -> tuple[dict | None, int]:
    """Run `code` in a fresh interpreter; its last stdout line parsed as JSON (None if it
    printed nothing) and its peak RSS in bytes. Its stderr passes through: progress bars,
    and errors if any."""
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, code, "1" if one_cpu else "0"],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    ).stdout.splitlines()
    rss = int(out[-1]) * (1024 if sys.platform.startswith("linux") else 1)  # KiB on Linux
    return (json.loads(out[-2]) if len(out) > 1 else None), rss


def table(header: list[str], rows: list[list[str]]) -> str:
    """An aligned text table of cells: the first column to the left, the others to the right,
    a line of dashes under the header."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([cells[0].ljust(widths[0]), *rest])

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows)])
