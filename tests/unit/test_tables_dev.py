"""The dev table: each encoder run's dev P@1 along its training and the checkpoint it kept."""

from __future__ import annotations

import json

import polars as pl
import pytest

from xlsent.tables.dev import dev_table, seed_spread, write_dev_table


def _model(root, label, curve, best, losses=True):
    """A model directory as training leaves it: its train_log.jsonl (loss records between
    the dev records, as the loop writes them) and best.json."""
    directory = root / label
    directory.mkdir(parents=True)
    lines = []
    for step, p1 in curve.items():
        if losses and step:
            lines.append(json.dumps({"step": step, "loss": 1.5}))
        lines.append(json.dumps({"step": step, "dev_p1": p1, "dev": {"de": p1}, "best": True}))
    (directory / "train_log.jsonl").write_text("\n".join(lines) + "\n")
    (directory / "best.json").write_text(json.dumps({"step": best, "dev_p1": curve[best]}))
    return directory


def test_the_table_has_a_column_per_step_of_any_run_and_the_kept_checkpoint(tmp_path):
    models = {
        "tr/seed42": _model(tmp_path, "tr/seed42", {200: 90.0, 400: 91.5}, best=400),
        "tr/seed0": _model(tmp_path, "tr/seed0", {200: 91.25, 400: 91.0}, best=200),
        # Evaluated at other steps, the encoder before training among them.
        "me5/seed1": _model(tmp_path, "me5/seed1", {0: 80.0, 100: 85.0}, best=0),
    }
    table = dev_table(models)
    assert table.columns == ["run", "seed", "0", "100", "200", "400", "chosen_step", "chosen"]
    assert table.rows() == [
        ("tr", 42, None, None, 90.0, 91.5, 400, 91.5),
        ("tr", 0, None, None, 91.25, 91.0, 200, 91.25),
        ("me5", 1, 80.0, 85.0, None, None, 0, 80.0),
    ]
    # tr's seeds kept 91.5 and 91.25; me5 has one seed, so no spread.
    assert seed_spread(table) == {"tr": pytest.approx(0.25)}

    write_dev_table(table, tmp_path / "tables/dev.csv")
    assert pl.read_csv(tmp_path / "tables/dev.csv").equals(table)
    markdown = (tmp_path / "tables/dev.md").read_text()
    assert "| tr | 0 | – | – | 91.25 | 91.00 | 200 | 91.25 |" in markdown
    assert markdown.rstrip().endswith("Seeds' spread of the chosen dev P@1 (max − min): tr 0.25.")


def test_one_seed_a_run_writes_no_spread(tmp_path):
    table = dev_table({"tr/seed42": _model(tmp_path, "tr", {200: 90.0}, best=200)})
    write_dev_table(table, tmp_path / "dev.csv")
    assert "spread" not in (tmp_path / "dev.md").read_text()


def test_a_torn_record_is_named_by_file_and_line(tmp_path):
    directory = _model(tmp_path, "tr", {200: 90.0, 400: 91.0}, best=400, losses=False)
    log = directory / "train_log.jsonl"
    log.write_text(log.read_text() + '{"step": 600, "dev_p1"\n')
    with pytest.raises(ValueError, match=rf"{log} line 3 is not JSON"):
        dev_table({"tr/seed42": directory})


def test_a_label_without_its_seed_is_refused(tmp_path):
    directory = _model(tmp_path, "tr", {200: 90.0}, best=200)
    with pytest.raises(ValueError, match="'tr' is not RUN/seedN"):
        dev_table({"tr": directory})
