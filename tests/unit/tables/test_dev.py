"""The dev table: each encoder run's dev P@1 along its training and the checkpoint it kept."""

from __future__ import annotations

import json

import polars as pl
import pytest

from xlsent.tables.dev import dev_table, seed_spread, small_dev_languages, write_dev_table
from xlsent.tables.devices import COLUMNS as DEVICE_COLUMNS


def _model(root, label, curve, best, losses=True, dev=None):
    """A model directory as training leaves it: its train_log.jsonl (loss records between
    the dev records, as the loop writes them) and best.json, whose per-language scores are
    `dev` (default: one language at the step's mean)."""
    directory = root / label
    directory.mkdir(parents=True)
    lines = []
    for step, p1 in curve.items():
        if losses and step:
            lines.append(json.dumps({"step": step, "loss": 1.5}))
        lines.append(json.dumps({"step": step, "dev_p1": p1, "dev": {"de": p1}, "best": True}))
    (directory / "train_log.jsonl").write_text("\n".join(lines) + "\n")
    best_record = {"step": best, "dev_p1": curve[best], "dev": dev or {"de": curve[best]}}
    (directory / "best.json").write_text(json.dumps(best_record))
    return directory


def test_the_table_has_a_column_per_step_of_any_run_and_the_kept_checkpoint(tmp_path):
    models = {
        "tr/seed42": _model(tmp_path, "tr/seed42", {200: 90.0, 400: 91.5}, best=400),
        "tr/seed0": _model(tmp_path, "tr/seed0", {200: 91.25, 400: 91.0}, best=200),
        # Evaluated at other steps, the encoder before training among them.
        "me5/seed1": _model(tmp_path, "me5/seed1", {0: 80.0, 100: 85.0}, best=0),
    }
    table = dev_table(models)
    steps = ["0", "100", "200", "400"]
    speed = ["tokens_per_s", "mfu_pct"]  # none in these logs
    devices = list(DEVICE_COLUMNS)  # none: these models have no run.json
    assert table.columns == ["run", "seed", *steps, "chosen_step", "chosen", *speed, *devices]
    blank = (None,) * len(devices)
    assert table.rows() == [
        ("tr", 42, None, None, 90.0, 91.5, 400, 91.5, None, None, *blank),
        ("tr", 0, None, None, 91.25, 91.0, 200, 91.25, None, None, *blank),
        ("me5", 1, 80.0, 85.0, None, None, 0, 80.0, None, None, *blank),
    ]
    # tr's seeds kept 91.5 and 91.25; me5 has one seed, so no spread.
    assert seed_spread(table) == {"tr": pytest.approx(0.25)}

    write_dev_table(table, tmp_path / "tables/dev.csv")
    # (Read with the table's types: the empty speed columns read back as text otherwise.)
    assert pl.read_csv(tmp_path / "tables/dev.csv", schema=table.schema).equals(table)
    markdown = (tmp_path / "tables/dev.md").read_text()
    assert "| tr | 0 | – | – | 91.25 | 91.00 | 200 | 91.25 | – | – |" in markdown
    assert markdown.rstrip().endswith("Seeds' spread of the chosen dev P@1 (max − min): tr 0.25.")


def test_the_table_gives_each_trainings_median_speed(tmp_path):
    """Tokens/s and MFU (%): the medians of the log's speed lines (the first, warming up,
    slower); no MFU where the log has none (a CPU)."""
    directory = _model(tmp_path, "tr", {300: 90.0}, best=300, losses=False)
    speeds = [(100, 800.0, 0.10), (200, 1000.0, 0.30), (300, 1100.0, 0.35)]
    lines = [{"step": step, "loss": 1.0, "tokens_per_s": t, "mfu": m} for step, t, m in speeds]
    with open(directory / "train_log.jsonl", "a") as log:
        log.writelines(json.dumps(line) + "\n" for line in lines)
    cpu = _model(tmp_path, "cpu", {300: 90.0}, best=300, losses=False)
    with open(cpu / "train_log.jsonl", "a") as log:
        log.write(json.dumps({"step": 300, "tokens_per_s": 50.0, "mfu": None}) + "\n")
    table = dev_table({"tr/seed1": directory, "cpu/seed1": cpu})
    assert table.select("tokens_per_s", "mfu_pct").rows() == [(1000.0, 30.0), (50.0, None)]


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
    # A torn best.json the same way; both name the command that remakes the model directory.
    log.write_text(log.read_text().rsplit("\n", 2)[0] + "\n")
    (directory / "best.json").write_text('{"step": 400, "dev')
    with pytest.raises(ValueError, match=rf"best.json is not JSON .*--forcerun {directory} "):
        dev_table({"tr/seed42": directory})


def test_a_label_without_its_seed_is_refused(tmp_path):
    directory = _model(tmp_path, "tr", {200: 90.0}, best=200)
    with pytest.raises(ValueError, match="'tr' is not RUN/seedN"):
        dev_table({"tr": directory})


def test_languages_with_a_small_dev_split_are_left_out_of_one_column(tmp_path):
    """sw kept with 3 dev pairs (a sentence missed one way: 16.7 points) pulls the mean that
    chose the checkpoint, (98 + 96 + 66.67) / 3 = 86.89; without it, (98 + 96) / 2 = 97."""
    stats = []
    for lang, below in {"de": {}, "kk": {"train": [400, 500]}, "sw": {"dev": [3, 50]}}.items():
        stats.append(tmp_path / f"{lang}.json")
        stats[-1].write_text(json.dumps({"lang": lang, "dev": 3, "below_min": below}))
    small = small_dev_languages(stats)
    assert small == {"sw": 3}  # kk lacks training pairs, not dev pairs
    dev = {"de": 98.0, "kk": 96.0, "sw": 66.67}
    directory = _model(tmp_path, "tr", {200: 86.89}, best=200, dev=dev)
    table = dev_table({"tr/seed42": directory}, small)
    assert table.columns[-9:-6] == ["chosen_step", "chosen", "chosen_without_small_dev"]
    assert table.row(0)[-8:-6] == (86.89, 97.0)
    write_dev_table(table, tmp_path / "dev.csv", small)
    assert "corpus.min_dev_pairs (sw 3)" in (tmp_path / "dev.md").read_text()
    # Without small dev splits the column would repeat `chosen`: it is left out.
    assert "chosen_without_small_dev" not in dev_table({"tr/seed42": directory}).columns


def test_every_mean_can_leave_the_small_dev_languages_out(tmp_path):
    """Along the curve too: at step 200, (98 + 96 + 66.67) / 3 = 86.89 with sw's 3 pairs,
    (98 + 96) / 2 = 97 without; at 400 sw's one sentence more, 83.33, lifts the mean to 92.11
    while de and kk fall to (97.5 + 95.5) / 2 = 96.5. The run kept step 400 by its mean over
    all three; without sw its step 200 was the better, and the table says so, the chosen
    step still 400."""
    stats = tmp_path / "sw.json"
    stats.write_text(json.dumps({"lang": "sw", "dev": 3, "below_min": {"dev": [3, 50]}}))
    small = small_dev_languages([stats])
    evaluations = {
        200: {"de": 98.0, "kk": 96.0, "sw": 66.67},
        400: {"de": 97.5, "kk": 95.5, "sw": 83.33},
    }
    directory = tmp_path / "tr"
    directory.mkdir()
    lines = [
        {"step": step, "dev_p1": round(sum(dev.values()) / 3, 2), "dev": dev}
        for step, dev in evaluations.items()
    ]
    (directory / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (directory / "best.json").write_text(json.dumps({"step": 400, **lines[1]}))

    table = dev_table({"tr/seed42": directory}, small, without_small_dev=True)
    assert table.select("200", "400", "chosen_step", "chosen").row(0) == (97.0, 96.5, 400, 96.5)
    assert "chosen_without_small_dev" not in table.columns
    # The table over all languages, as the run chose by it.
    assert dev_table({"tr/seed42": directory}, small).select("200", "400").row(0) == (
        86.89,
        92.11,
    )
    write_dev_table(table, tmp_path / "dev.csv", small, without_small_dev=True)
    assert (
        "Every mean leaves out the languages with fewer dev pairs than corpus.min_dev_pairs (sw 3)"
        in ((tmp_path / "dev.md").read_text().replace("\n", " "))
    )


def test_a_log_without_per_language_scores_cannot_leave_languages_out(tmp_path):
    directory = _model(tmp_path, "tr", {200: 90.0}, best=200)
    log = directory / "train_log.jsonl"
    log.write_text(log.read_text().replace(', "dev": {"de": 90.0}', ""))
    with pytest.raises(ValueError, match=r"train_log.jsonl: the dev evaluations at steps \[200\]"):
        dev_table({"tr/seed42": directory}, {"sw": 3}, without_small_dev=True)
