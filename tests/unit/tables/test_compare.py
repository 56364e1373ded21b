"""The comparison table (`xlsent tables-compare`) against a worked example computed by hand."""

from __future__ import annotations

import copy
import json

import polars as pl
import pytest
import yaml
from support import ROOT

from xlsent.cli import main
from xlsent.config import ConfigError, compare_models, compare_results, validate
from xlsent.evaluate.results import write_results
from xlsent.languages import define_groups
from xlsent.tables.compare import COUNTS, SCORES, compare_table, write_compare_table

# Tatoeba, the mean of both directions, two runs × two seeds × three languages:
#
#          A seed 1  A seed 2  A mean |  B seed 1  B seed 2  B mean |  A − B
#   kk       60        70        65   |    62       67.8     64.9   |  +0.1   above
#   te       80        84        82   |    90       90       90     |  −8     below
#   de       90.1      90.0      90.05|    90       90       90     |  +0.05  level (the tie)
#
# The group `two` (kk te), seed by seed: A (60 + 80)/2 = 70 and (70 + 84)/2 = 77, mean 73.5;
# B (62 + 90)/2 = 76 and (67.8 + 90)/2 = 78.9, mean 77.45; A − B = (0.1 − 8)/2 = −3.95.
# `all` (kk te de): A 230.1/3 = 76.7 and 244/3 = 81.333…, mean 79.01666…; B 242/3 = 80.666…
# and 247.8/3 = 82.6, mean 81.63333…; A − B = (0.1 − 8 + 0.05)/3 = −2.61666….
TATOEBA = {
    ("A", 1): {"kk": 60.0, "te": 80.0, "de": 90.1},
    ("A", 2): {"kk": 70.0, "te": 84.0, "de": 90.0},
    ("B", 1): {"kk": 62.0, "te": 90.0, "de": 90.0},
    ("B", 2): {"kk": 67.8, "te": 90.0, "de": 90.0},
}
# Mining F1 on the test split (the other rows must be ignored): de, A 80 and 84 (82),
# B 83 and 83; A − B = −1.
MINING = {("A", 1): 80.0, ("A", 2): 84.0, ("B", 1): 83.0, ("B", 2): 83.0}
GROUPS = define_groups({"two": ["kk", "te"]})
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def _tatoeba(run: str, seed: int) -> pl.DataFrame:
    rows = []
    for lang, value in TATOEBA[run, seed].items():
        # Each direction a point apart, so that only the mean rows give the table's numbers.
        for direction, v in (("xx2en", value + 1), ("en2xx", value - 1), ("mean", value)):
            rows.append(("tatoeba", run, seed, lang, direction, "accuracy", v, 1000))
    return pl.DataFrame(
        rows,
        schema=["task", "run", "seed", "lang", "direction", "metric", "value", "n"],
        orient="row",
    )


def _mining(run: str, seed: int) -> pl.DataFrame:
    f1 = MINING[run, seed]
    rows = [
        ("bucc", run, seed, "de", "test", "f1", f1, 100),
        ("bucc", run, seed, "de", "test", "precision", f1 + 5, 100),
        ("bucc", run, seed, "de", "test_oracle", "f1", f1 + 3, 100),
    ]
    return pl.DataFrame(
        rows,
        schema=["task", "run", "seed", "lang", "direction", "metric", "value", "n"],
        orient="row",
    )


FRAMES = [f(run, seed) for f in (_tatoeba, _mining) for run, seed in TATOEBA]


# Dev P@1 of each kept checkpoint (best.json), per language:
#
#          A seed 1  A seed 2  A mean |  B (both seeds) |  A − B
#   kk       90        91       90.5  |      92         |  −1.5  below
#   te       95.5      96.5     96    |      95         |  +1    above
#   de      100        99       99.5  |      99.5       |   0    level
#
# `all`: A (90 + 95.5 + 100)/3 = 95.1666… and (91 + 96.5 + 99)/3 = 95.5, mean 95.3333…;
# B 95.5; A − B = (−1.5 + 1 + 0)/3 = −0.1666….
DEV = {
    ("A", 1): {"kk": 90.0, "te": 95.5, "de": 100.0},
    ("A", 2): {"kk": 91.0, "te": 96.5, "de": 99.0},
    ("B", 1): {"kk": 92.0, "te": 95.0, "de": 99.5},
    ("B", 2): {"kk": 92.0, "te": 95.0, "de": 99.5},
}
# Where each run trained (run.json's `trained_on`): the dev scores' devices.
TRAINED_ON = {
    "A": {"device": "cpu", "precision": "fp32", "dev_precision": "fp32", "processes": 1},
    "B": {
        "device": "cuda",
        "device_name": "NVIDIA H100",
        "precision": "bf16",
        "dev_precision": "bf16",
        "processes": 1,
    },
}


def _models(root) -> dict[str, object]:
    """Model directories as training exports them (best.json, run.json), by RUN/seedN."""
    models = {}
    for (run, seed), dev in DEV.items():
        directory = root / "models" / run / f"seed{seed}"
        directory.mkdir(parents=True)
        best = {"step": 200, "dev_p1": round(sum(dev.values()) / len(dev), 2), "dev": dev}
        (directory / "best.json").write_text(json.dumps(best))
        (directory / "run.json").write_text(json.dumps({"trained_on": [TRAINED_ON[run]]}))
        models[f"{run}/seed{seed}"] = directory
    return models


def _rows(table: pl.DataFrame) -> dict[tuple[str, str], dict]:
    return {(row["task"], row["unit"]): row for row in table.iter_rows(named=True)}


def test_every_cell_of_the_worked_example():
    table = compare_table(FRAMES, [("A", "B")], GROUPS)
    assert [(r["task"], r["unit"]) for r in table.iter_rows(named=True)] == [
        ("tatoeba", "two"),
        ("tatoeba", "all"),
        ("tatoeba", "de"),  # the language table's order: de before kk and te
        ("tatoeba", "kk"),
        ("tatoeba", "te"),
        ("bucc", "all"),
        ("bucc", "de"),
    ]
    rows = _rows(table)
    expected = {
        # unit: a_mean, a_min, a_max, b_mean, b_min, b_max, diff, above, below, level, languages
        ("tatoeba", "two"): (73.5, 70, 77, 77.45, 76, 78.9, -3.95, 1, 1, 0, 2),
        ("tatoeba", "all"): (
            (76.7 + 244 / 3) / 2, 76.7, 244 / 3, (242 / 3 + 82.6) / 2, 242 / 3, 82.6,
            -7.85 / 3, 1, 1, 1, 3,
        ),
        ("tatoeba", "de"): (90.05, 90.0, 90.1, 90, 90, 90, 0.05, 0, 0, 1, 1),
        ("tatoeba", "kk"): (65, 60, 70, 64.9, 62, 67.8, 0.1, 1, 0, 0, 1),
        ("tatoeba", "te"): (82, 80, 84, 90, 90, 90, -8, 0, 1, 0, 1),
        ("bucc", "all"): (82, 80, 84, 83, 83, 83, -1, 0, 1, 0, 1),
        ("bucc", "de"): (82, 80, 84, 83, 83, 83, -1, 0, 1, 0, 1),
    }  # fmt: skip
    columns = (
        "a_mean", "a_min", "a_max", "b_mean", "b_min", "b_max", "diff",
        "above", "below", "level", "languages",
    )  # fmt: skip
    for unit, values in expected.items():
        row = rows[unit]
        assert (row["a"], row["b"], row["a_seeds"], row["b_seeds"]) == ("A", "B", 2, 2)
        assert [row[c] for c in columns] == pytest.approx(list(values)), unit


def test_the_dev_of_the_kept_checkpoints_is_a_task_of_its_own(tmp_path):
    models = _models(tmp_path)
    table = compare_table(FRAMES, [("A", "B")], GROUPS, models)
    assert [r["unit"] for r in table.iter_rows(named=True) if r["task"] == "dev"] == [
        "all",  # no groups: they are Tatoeba's
        "de",
        "kk",
        "te",
    ]
    rows = _rows(table)
    expected = {
        # unit: a_mean, a_min, a_max, b_mean, diff, above, below, level
        "all": (286 / 3, 285.5 / 3, 95.5, 95.5, -0.5 / 3, 1, 1, 1),
        "de": (99.5, 99, 100, 99.5, 0, 0, 0, 1),
        "kk": (90.5, 90, 91, 92, -1.5, 0, 1, 0),
        "te": (96, 95.5, 96.5, 95, 1, 1, 0, 0),
    }
    columns = ("a_mean", "a_min", "a_max", "b_mean", "diff", "above", "below", "level")
    for unit, values in expected.items():
        assert [rows["dev", unit][c] for c in columns] == pytest.approx(list(values)), unit
    # The other tasks' scores are as without the models; the devices are the results
    # files', and where those record none (data frames here), the models'.
    scores = ["a", "b", "task", "unit", *SCORES, *COUNTS]
    without = compare_table(FRAMES, [("A", "B")], GROUPS)
    assert table.filter(pl.col("task") != "dev").select(scores).equals(without.select(scores))
    assert set(table["a_train_device"]) == {"cpu"} and set(without["a_train_device"]) == {None}
    alone = _rows(compare_table([], [("A", "B")], GROUPS, models))
    assert list(alone) == [("dev", unit) for unit in ("all", "de", "kk", "te")]
    assert alone["dev", "kk"]["a_train_device"] == "cpu"
    assert alone["dev", "kk"]["b_eval_device"] == "cuda (NVIDIA H100)"
    assert alone["dev", "kk"]["b_eval_precision"] == "bf16"
    assert alone["dev", "kk"]["devices_differ"] is True


def test_a_language_one_run_lacks_blanks_its_rows(tmp_path):
    # C, one seed, has kk and te only: `two` compares, `all` is kk and te, de is C-blank.
    c = _tatoeba("A", 1).filter(pl.col("lang") != "de").with_columns(run=pl.lit("C"))
    table = compare_table([*FRAMES[:2], c], [("A", "C")], {**GROUPS, "kkde": ("kk", "de")})
    rows = _rows(table)
    assert rows["tatoeba", "all"]["languages"] == 2
    assert rows["tatoeba", "all"]["diff"] == pytest.approx((65 - 60 + 82 - 80) / 2)
    assert rows["tatoeba", "all"]["b_min"] == rows["tatoeba", "all"]["b_max"] == 70
    assert rows["tatoeba", "de"]["a_mean"] == pytest.approx(90.05)
    blank = ("b_mean", "diff", "above", "below", "level")
    assert [rows["tatoeba", "de"][c] for c in blank] == [None] * 5
    assert [rows["tatoeba", "kkde"][c] for c in blank] == [None] * 5
    assert ("bucc", "all") not in rows  # C was not mined: no mining rows for the pair
    write_compare_table(table, tmp_path / "compare.csv")
    blank_row = "| A | C | tatoeba | de | 90.0 | 90.0–90.1 | – | – | – | – | – | – | 1 |"
    assert blank_row in (tmp_path / "compare.md").read_text().splitlines()


def test_refuses_what_it_cannot_compare():
    with pytest.raises(ValueError, match="pair A:Z: no results of Z among the files given"):
        compare_table(FRAMES, [("A", "Z")], GROUPS)
    partial = _tatoeba("A", 1).filter(pl.col("lang") == "kk").with_columns(seed=pl.lit(3))
    with pytest.raises(ValueError, match="'A' has tatoeba results for te from only some of"):
        compare_table([*FRAMES, partial], [("A", "B")], GROUPS)
    with pytest.raises(ValueError, match="passed twice"):
        compare_table([*FRAMES, FRAMES[0]], [("A", "B")], GROUPS)


def test_the_command_writes_the_csv_and_markdown(tmp_path):
    paths = []
    for (run, seed), _ in TATOEBA.items():
        for task, frame in (("tatoeba", _tatoeba(run, seed)), ("bucc", _mining(run, seed))):
            paths.append(tmp_path / task / run / f"seed{seed}.parquet")
            paths[-1].parent.mkdir(parents=True, exist_ok=True)
            write_results(frame.drop("task", "run", "seed").to_dicts(), task, run, seed, paths[-1])
    out = tmp_path / "compare.csv"
    argv = ["tables-compare", "--pairs", "A:B", "--groups", "two=kk,te", "--out", str(out)]
    main([*argv, "--results", *map(str, paths), "--models"])  # no models: no dev rows
    written = pl.read_csv(out)
    assert written.equals(compare_table(paths, [("A", "B")], GROUPS))
    models = _models(tmp_path)
    with_dev = [*argv, "--results", *map(str, paths), "--models"]
    main([*with_dev, *(f"{label}={directory}" for label, directory in models.items())])
    assert pl.read_csv(out).equals(compare_table(paths, [("A", "B")], GROUPS, models))
    # The Markdown: means to one decimal (90.05 is 90.04999… as a float), ranges, the
    # difference to two.
    markdown = out.with_suffix(".md").read_text().splitlines()
    te = "| A | B | tatoeba | te | 82.0 | 80.0–84.0 | 90.0 | 90.0–90.0 | −8.00 | 0 | 1 | 0 | 1 |"
    de = "| A | B | tatoeba | de | 90.0 | 90.0–90.1 | 90.0 | 90.0–90.0 | +0.05 | 0 | 0 | 1 | 1 |"
    assert te in markdown and de in markdown
    bad = ["tables-compare", "--pairs", "A-B", "--groups", "low4", "--out", str(out)]
    with pytest.raises(SystemExit) as stopped:
        main([*bad, "--results", str(paths[0]), "--models"])
    assert stopped.value.code == 2  # a usage error, one line: "expected RUN:RUN"
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--results", "--models"])  # nothing to compare
    assert stopped.value.code == 2


def test_the_config_names_pairs_of_its_runs_and_the_rule_reads_their_results():
    config = yaml.safe_load((ROOT / "resources" / "demo" / "config.yaml").read_text())
    demo = validate(copy.deepcopy(config), SCHEMA)
    assert demo["tables"]["compare"]["pairs"] == [["wacse", "tr"]]
    # Both runs' Tatoeba results, then their mining results (the demo mines).
    assert compare_results(demo) == [
        "results/eval/tatoeba/tr/seed42.parquet",
        "results/eval/tatoeba/wacse/seed42.parquet",
        "results/eval/bucc/tr/seed42.parquet",
        "results/eval/bucc/wacse/seed42.parquet",
    ]
    # ... and their models, whose kept checkpoints give the dev rows.
    assert compare_models(demo) == {
        "tr/seed42": "results/models/tr/seed42",
        "wacse/seed42": "results/models/wacse/seed42",
    }
    for pair, named in (
        (["wacse", "trr"], "'trr' is not one of `runs`"),
        (["tr", "tr"], "'tr' twice"),
    ):
        config["tables"]["compare"]["pairs"] = [pair]
        with pytest.raises(ConfigError, match=f"`tables.compare.pairs`: .* names {named}"):
            validate(copy.deepcopy(config), SCHEMA)
