import os
import subprocess
import sys

import polars as pl
from support import clean_kk_args


def _xlsent(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xlsent.cli", *args], capture_output=True, text=True
    )


def _clean_kk(directory) -> subprocess.CompletedProcess:
    """The clean job of kk over the local corpus files of `directory`, writing beside them."""
    return _xlsent(*clean_kk_args(directory, directory))


def test_bad_input_is_one_actionable_line_not_a_traceback(tmp_path):
    proc = _clean_kk(tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{tmp_path} has no corpus for kk" in proc.stderr
    assert "Tanzil.en-kk.kk" in proc.stderr  # the naming it expected
    assert not (tmp_path / "clean.parquet").exists()


def test_mismatched_moses_files_name_both_files(tmp_path):
    (tmp_path / "Tanzil.en-kk.en").write_text("One two three four\nFive six seven eight\n")
    (tmp_path / "Tanzil.en-kk.kk").write_text("Бір екі үш төрт\n")
    proc = _clean_kk(tmp_path)
    assert proc.returncode == 2
    assert f"{tmp_path}/Tanzil.en-kk.kk ends after 1 lines but {tmp_path}/Tanzil.en-kk.en" in (
        proc.stderr
    )
    # Nothing written, no temporary file left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Tanzil.en-kk.en", "Tanzil.en-kk.kk"]


def test_jobs_let_waiting_openmp_threads_sleep_unless_the_user_says_otherwise():
    script = "import os, xlsent.cli; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    for given, expected in ((None, "PASSIVE"), ("ACTIVE", "ACTIVE")):
        run_env = env if given is None else {**env, "OMP_WAIT_POLICY": given}
        out = subprocess.run(
            [sys.executable, "-c", script], env=run_env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == expected


def test_a_process_without_pandas_converts_to_arrow_and_says_pandas_is_absent():
    """What imported pandas in every job (a table of Python lists, a numpy array to Arrow
    and back) does not after `without_pandas`, and libraries asking for pandas find none."""
    script = """
import importlib.util, sys
import numpy as np, pyarrow as pa
from xlsent.cli import without_pandas
without_pandas()
table = pa.table({"a": [1, 2], "b": pa.array(np.arange(2))})
assert table.column("a").to_numpy().tolist() == [1, 2]
assert sys.modules["pandas"] is None and importlib.util.find_spec("pandas") is None
try:
    import pandas
except ModuleNotFoundError:
    print("absent")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["absent"]


def test_a_job_runs_without_importing_pandas(tmp_path):
    """The demo's clean job of kk, its imports timed: it writes its corpus, and pandas (which
    its pyarrow calls imported before) is never loaded."""
    settings = '{"max_length_ratio": 3.0, "min_tokens": 1, "style": "words"}'
    out = tmp_path / "clean.parquet"
    proc = subprocess.run(
        [
            *(sys.executable, "-X", "importtime", "-m", "xlsent.cli", "clean", "--lang", "kk"),
            *("--source", "demo", "--heldout-fraction", "0.2", "--settings", settings),
            *("--out", str(out), "--stats", str(tmp_path / "stats.json")),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert pl.read_parquet(out).height > 1000
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "pyarrow" in imported and "pandas" in imported  # tried once, by pyarrow
    assert "pandas.core.frame" not in imported  # never loaded
