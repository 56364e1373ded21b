"""The figures are drawn from the real table layout and training records."""

import json

import polars as pl

from xlsent.plots import dev_curves, group_bars

PNG = b"\x89PNG\r\n\x1a\n"


def test_group_bars_and_dev_curves_write_pngs(tmp_path):
    summary = tmp_path / "tatoeba.csv"
    pl.DataFrame(
        {"run": ["tr", "wacse"], "seeds": [1, 1], "low4": [20.5, 23.0], "low8": [None, 30.0]}
    ).write_csv(summary)
    group_bars(summary, ["low4", "low8"], tmp_path / "bars.png")
    assert (tmp_path / "bars.png").read_bytes().startswith(PNG)

    log = tmp_path / "train_log.jsonl"
    records = [
        {"step": 50, "loss": 3.0},
        {"step": 100, "dev_p1": 10.0, "best": True},
        {"step": 200, "dev_p1": 15.0, "best": True},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    dev_curves({"tr/seed42": log}, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes().startswith(PNG)
