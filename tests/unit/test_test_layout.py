"""The unit tests are where a reader looks: tests/unit/ mirrors src/xlsent/.

- Every directory below tests/unit/ is a package of src/xlsent/ at the same path
  (tests/unit/corpus/readers/ for src/xlsent/corpus/readers/).
- In such a directory, every `test_<name>.py` names a module of that package (`<name>.py`),
  or the package itself (its `__init__.py`, or the package as a whole:
  tests/unit/losses/test_losses.py).
- In tests/unit/ itself, every `test_<name>.py` names a top-level module of src/xlsent/
  (tests/unit/test_layout.py for src/xlsent/layout.py), or is one of the few that test no
  module (`ELSEWHERE`).

A package's own tests go into its directory, never beside it: corpus/readers/test_readers.py,
not corpus/test_readers.py (paths below tests/unit/). So the tests of tables/bucc.py are in
tables/test_bucc.py and those of evaluate/bucc.py in evaluate/test_bucc.py; a test file named
after no module, or one left beside the package it tests, fails here.

"""

from __future__ import annotations

from pathlib import Path

from support import ROOT

UNIT = ROOT / "tests" / "unit"
PACKAGE = ROOT / "src" / "xlsent"

# Top-level test files that test something other than a module of src/xlsent/.
ELSEWHERE = {
    "test_benchmarks.py": "the scripts of benchmarks/",
    "test_align_benchmark_estimation.py": "benchmarks/align.py --workflow-estimation",
    "test_envs.py": "the conda environments, envs/*.yaml",
    "test_test_layout.py": "this layout",
    "test_durations.py": "tests/durations.py, the tests' times of a run",
}


def _test_directories() -> list[Path]:
    return sorted(path for path in UNIT.rglob("*") if path.is_dir() and path.name != "__pycache__")


def _misplaced(path: Path) -> str | None:
    """Why the test file `path` (below tests/unit/) is not where its name says, or None."""
    relative = path.relative_to(UNIT)
    name = path.stem.removeprefix("test_")
    package = PACKAGE.joinpath(*relative.parent.parts)
    if (package / name / "__init__.py").is_file():
        return f"tests the package {name}: move it into {(relative.parent / name).as_posix()}/"
    if relative.parent == Path("."):
        if path.name in ELSEWHERE or (PACKAGE / f"{name}.py").is_file():
            return None
        return f"names no top-level module of src/xlsent/ (src/xlsent/{name}.py)"
    if (package / f"{name}.py").is_file() or name == package.name:
        return None
    return f"names no module of {package.relative_to(ROOT)}/ ({name}.py)"


def test_every_test_directory_mirrors_a_package():
    strays = [
        path.relative_to(ROOT).as_posix()
        for path in _test_directories()
        if not (PACKAGE / path.relative_to(UNIT) / "__init__.py").is_file()
    ]
    assert not strays, f"directories of tests/unit/ that mirror no package of src/xlsent/: {strays}"


def test_every_test_file_names_a_module_of_its_directorys_package():
    misplaced = {
        path.relative_to(ROOT).as_posix(): why
        for path in sorted(UNIT.rglob("test_*.py"))
        if (why := _misplaced(path)) is not None
    }
    assert not misplaced


def test_a_misplaced_test_file_is_found():
    """The rule on files that break it: a package's test beside its package, a module's test
    in another package's directory, a name that is no module."""
    assert _misplaced(UNIT / "test_bucc.py") is not None  # no top-level bucc.py
    assert _misplaced(UNIT / "test_tables.py") == "tests the package tables: move it into tables/"
    assert _misplaced(UNIT / "corpus" / "test_readers.py") == (
        "tests the package readers: move it into corpus/readers/"
    )
    assert _misplaced(UNIT / "train" / "test_bucc.py") is not None
    assert _misplaced(UNIT / "tables" / "test_tables_dev.py") is not None
    assert _misplaced(UNIT / "tables" / "test_bucc.py") is None
    assert _misplaced(UNIT / "evaluate" / "test_bucc.py") is None
    assert _misplaced(UNIT / "corpus" / "readers" / "test_opus.py") is None
    assert _misplaced(UNIT / "corpus" / "readers" / "test_readers.py") is None  # the package
    assert _misplaced(UNIT / "test_layout.py") is None
