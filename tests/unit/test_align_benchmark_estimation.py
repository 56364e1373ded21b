"""`benchmarks/align.py --workflow-estimation` runs at its tiny setting: the workflow's eflomal
on the gold sets, estimated with the capped pool alone and topped up beyond the cap
(tests/unit/test_benchmarks.py runs the script's other mode)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, SHARED


@pytest.mark.slow
@pytest.mark.shared
def test_the_workflow_estimation_smoke_run_writes_its_rows(tmp_path: Path) -> None:
    missing = [p for p in ("l10n", "gold-align", "tatoeba/v1") if not (SHARED / p).is_dir()]
    if missing:
        pytest.skip(f"needs {missing} in {SHARED}")
    script = [sys.executable, "benchmarks/align.py", "--smoke", "--workflow-estimation"]
    proc = subprocess.run(
        [*script, "--out-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert "| pair | estimation |" in proc.stdout
    record = json.loads((tmp_path / "align_estimation.json").read_text())
    assert not (tmp_path / "align.json").exists()
    rows = record["rows"]
    # Two languages × two estimations × two parts (test half, whole set), one seed.
    assert len(rows) == 8
    assert all(math.isfinite(r["aer"]) and 0 <= r["aer"] <= 1 for r in rows)
    minimum = record["settings"]["align.eflomal"]["min_estimation_pairs"]
    for lang, sizes in record["corpus"].items():
        assert sizes["train"] == record["settings"]["corpus"]["max_pairs"]
        assert sizes["beyond_cap"] > 0
        mine = [r for r in rows if r["pair"] == f"{lang}-en"]
        capped = {r["estimation_pairs"] for r in mine if r["estimation"] == "capped"}
        topped = {r["estimation_pairs"] for r in mine if r["estimation"] == "beyond_cap"}
        beyond = {r["estimation_pairs_beyond_cap"] for r in mine if r["estimation"] == "beyond_cap"}
        assert capped == {sizes["train"]}
        # The gold shard's own pairs and the borrowed ones reach the minimum.
        assert topped == {minimum - 8}  # the smoke run's 8 gold pairs
        assert beyond == {minimum - 8 - sizes["train"]}
