"""tests/durations.py: a JUnit report's wall and CPU seconds per test, and its table."""

from __future__ import annotations

from durations import durations, table

# Two tests of one module as pytest-xdist's `--dist loadgroup` names them (`@group`), the
# first with the CPU seconds tests/conftest.py records, the second without.
REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="2">
<testcase classname="tests.workflow.test_demo" name="test_tables@runs" time="120.5">
<properties><property name="cpu_seconds" value="88.25" /></properties>
</testcase>
<testcase classname="tests.unit.test_cli" name="test_help[train]@unit/test_cli" time="0.4" />
</testsuite></testsuites>
"""


def test_wall_and_cpu_seconds_by_test_without_the_group(tmp_path):
    report = tmp_path / "tests.xml"
    report.write_text(REPORT)
    demo, cli = (
        "tests/workflow/test_demo.py::test_tables",
        "tests/unit/test_cli.py::test_help[train]",
    )
    assert durations(report) == {demo: 120.5, cli: 0.4}
    assert durations(report, cpu=True) == {demo: 88.25, cli: 0.0}


def test_the_table_ranks_by_either_run_and_marks_a_missing_test(tmp_path):
    before = {"a": 10.0, "b": 3.0}
    after = {"a": 4.0, "c": 7.0}
    lines = table([before, after], ["before (s)", "after (s)"], top=2)
    assert lines[2:] == [
        "| `a` | 10 | 4 |",
        "| `c` | – | 7 |",
        "| total | 13 (2 tests) | 11 (2 tests) |",
    ]
