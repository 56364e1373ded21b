"""The comparison table (`xlsent tables-compare`) against a worked example computed by hand."""

from __future__ import annotations

import copy

import polars as pl
import pytest
import yaml
from support import ROOT

from xlsent.cli import main
from xlsent.config import ConfigError, compare_results, validate
from xlsent.evaluate.results import write_results
from xlsent.languages import define_groups
from xlsent.tables.compare import compare_table, write_compare_table

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
    main([*argv, "--results", *map(str, paths)])
    written = pl.read_csv(out)
    assert written.equals(compare_table(paths, [("A", "B")], GROUPS))
    # The Markdown: means to one decimal (90.05 is 90.04999… as a float), ranges, the
    # difference to two.
    markdown = out.with_suffix(".md").read_text().splitlines()
    te = "| A | B | tatoeba | te | 82.0 | 80.0–84.0 | 90.0 | 90.0–90.0 | −8.00 | 0 | 1 | 0 | 1 |"
    de = "| A | B | tatoeba | de | 90.0 | 90.0–90.1 | 90.0 | 90.0–90.0 | +0.05 | 0 | 0 | 1 | 1 |"
    assert te in markdown and de in markdown
    bad = ["tables-compare", "--pairs", "A-B", "--groups", "low4", "--out", str(out)]
    with pytest.raises(SystemExit) as stopped:
        main([*bad, "--results", str(paths[0])])
    assert stopped.value.code == 2  # a usage error, one line: "expected RUN:RUN"


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
    for pair, named in (
        (["wacse", "trr"], "'trr' is not one of `runs`"),
        (["tr", "tr"], "'tr' twice"),
    ):
        config["tables"]["compare"]["pairs"] = [pair]
        with pytest.raises(ConfigError, match=f"`tables.compare.pairs`: .* names {named}"):
            validate(copy.deepcopy(config), SCHEMA)
