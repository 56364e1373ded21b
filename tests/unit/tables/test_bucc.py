"""The mining table (`xlsent.tables.bucc`): BUCC's F1 averaged over seeds and languages."""

from __future__ import annotations

import polars as pl
import pytest

from xlsent.evaluate.results import load_results, write_results
from xlsent.tables.bucc import bucc_table, write_bucc_table


def test_mining_table_averages_seeds_and_languages(tmp_path):
    def results(run, seed, f1s):
        rows = []
        for lang, (p, r, f1, oracle) in f1s.items():
            for d, m, v in (
                ("test", "precision", p),
                ("test", "recall", r),
                ("test", "f1", f1),
                ("test", "threshold", 1.1),
                ("test_oracle", "f1", oracle),
                ("test_pivot", "f1", f1 - 1),
                ("dev", "f1", 99.0),
            ):
                rows.append({"lang": lang, "direction": d, "metric": m, "value": v, "n": 10})
        path = tmp_path / f"{run}.{seed}.parquet"
        write_results(rows, "bucc", run, seed, path)
        return path

    frames = [
        results("tr", 42, {"ru": (80, 60, 70, 72), "de": (90, 70, 80, 82)}),
        results("tr", 0, {"ru": (70, 50, 60, 64), "de": (90, 90, 90, 90)}),
        results("dap", 42, {"de": (95, 85, 90, 91)}),
    ]
    table = bucc_table(frames)
    assert table.columns == [
        "run",
        "seeds",
        "de_p",
        "de_r",
        "de_f1",
        "de_f1_oracle",
        "de_f1_pivot",
        "ru_p",
        "ru_r",
        "ru_f1",
        "ru_f1_oracle",
        "ru_f1_pivot",
        "avg_f1",
        "avg_f1_oracle",
        "avg_f1_pivot",
        *("train_device", "train_precision", "eval_device", "eval_precision"),
    ]
    tr = table.row(0, named=True)
    # tr: de F1 (80 + 90) / 2 = 85, ru (70 + 60) / 2 = 65, average 75.
    assert (tr["run"], tr["seeds"], tr["de_f1"], tr["ru_f1"], tr["avg_f1"]) == ("tr", 2, 85, 65, 75)
    assert (tr["ru_p"], tr["ru_r"], tr["avg_f1_oracle"], tr["avg_f1_pivot"]) == (75, 55, 77, 74)
    dap = table.row(1, named=True)
    assert (dap["de_f1"], dap["ru_f1"], dap["avg_f1"]) == (90, None, None)  # no partial average
    write_bucc_table(table, tmp_path / "bucc.csv")
    assert pl.read_csv(tmp_path / "bucc.csv").equals(table)
    assert "| tr | 2 | 90.0 | 80.0 | 85.0 |" in (tmp_path / "bucc.md").read_text()
    with pytest.raises(ValueError, match="task 'bucc'"):
        bucc_table([load_results(frames).with_columns(task=pl.lit("tatoeba"))])
