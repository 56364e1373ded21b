"""The slowest tests of a `make test` run, from the JUnit XML it writes (logs/tests.xml).

    .venv/bin/python tests/durations.py logs/tests.xml [--top 20]
    .venv/bin/python tests/durations.py BEFORE.xml AFTER.xml [--top 20] [--cpu]

One file: its slowest tests (setup, call and teardown together, as pytest's JUnit report
times a test) and the total. Two files: the slowest of either, side by side, a test missing
from one run shown as `–` (removed, merged or new). `--cpu`: the tests' CPU seconds
(tests/conftest.py records them) in place of their wall times: on a machine whose cores the
suite keeps full, what a test costs the others.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

from support import CPU_PROPERTY


def durations(path: Path, cpu: bool = False) -> dict[str, float]:
    """{module::test: seconds} of a pytest JUnit XML report: wall seconds, or with `cpu` the
    CPU seconds of its `cpu_seconds` property (0 where a test has none). A test's name loses
    the `@group` that pytest-xdist's `--dist loadgroup` appends (tests/conftest.py), so that
    a run with workers and one without name the same test alike."""
    out: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        name = case.get("name", "").rsplit("@", 1)[0]
        if cpu:
            spent = case.find(f"properties/property[@name='{CPU_PROPERTY}']")
            seconds = float(spent.get("value")) if spent is not None else 0.0
        else:
            seconds = float(case.get("time", 0))
        out[f"{module}::{name}"] = seconds
    return out


def table(runs: list[dict[str, float]], names: list[str], top: int) -> list[str]:
    """Markdown rows of the `top` slowest tests of any run, then each run's total."""
    slowest = sorted(
        {test for run in runs for test in run}, key=lambda t: -max(r.get(t, 0) for r in runs)
    )
    lines = ["| test | " + " | ".join(names) + " |", "|---|" + "---:|" * len(runs)]
    for test in slowest[:top]:
        cells = [f"{run[test]:.0f}" if test in run else "–" for run in runs]
        lines.append(f"| `{test}` | " + " | ".join(cells) + " |")
    totals = [f"{sum(run.values()):.0f} ({len(run)} tests)" for run in runs]
    lines.append("| total | " + " | ".join(totals) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="JUnit XML files (1 or 2)")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--cpu", action="store_true", help="CPU seconds, not wall seconds")
    args = parser.parse_args()
    runs = [durations(path, args.cpu) for path in args.reports]
    unit = "CPU-s" if args.cpu else "s"
    names = [f"{path.name} ({unit})" for path in args.reports]
    print("\n".join(table(runs, names, args.top)))


if __name__ == "__main__":
    main()
