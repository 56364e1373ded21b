"""The Tatoeba tables (`xlsent.tables.tatoeba`): group averages over seeds, the ablation and the
per-language table, against worked examples."""

import json

import polars as pl
import pytest
from support import tatoeba_results

from xlsent.languages import UnknownLanguageError, define_groups, members
from xlsent.tables.devices import COLUMNS as DEVICE_COLUMNS
from xlsent.tables.tatoeba import ablation_table, tatoeba_tables, write_tables
from xlsent.tables.write import scarce_languages

# Run A, two seeds, all of low4 (kk te ka jv) plus de. Seed means per language (xx2en, en2xx, mean):
#   kk (60+70)/2=65, (40+50)/2=45, 55   te 75, 55, 65   ka 85, 65, 75   jv 95, 75, 85
#   de (100+98)/2=99, (90+92)/2=91, 95
# Run B, one seed, lacks jv: kk 20, 10, 15   te 30, 20, 25   ka 40, 30, 35   de 90, 80, 85
FRAMES = [
    tatoeba_results(
        "A", 0, {"kk": (60, 40), "te": (70, 50), "ka": (80, 60), "jv": (90, 70), "de": (100, 90)}
    ),
    tatoeba_results(
        "A", 1, {"kk": (70, 50), "te": (80, 60), "ka": (90, 70), "jv": (100, 80), "de": (98, 92)}
    ),
    tatoeba_results("B", 7, {"kk": (20, 10), "te": (30, 20), "ka": (40, 30), "de": (90, 80)}),
]


def test_summary_group_averages():
    summary, _ = tatoeba_tables(FRAMES, members(["low4"]))
    assert summary.columns == [
        "run", "seeds", "low4", "all", "low4_xx2en", "all_xx2en", "low4_en2xx", "all_en2xx",
        "missing", "scarce", *DEVICE_COLUMNS,
    ]  # fmt: skip
    a, b = summary.rows(named=True)
    assert (a["run"], a["seeds"], b["run"], b["seeds"]) == ("A", 2, "B", 1)
    assert a["low4"] == pytest.approx((55 + 65 + 75 + 85) / 4)  # 70
    assert a["low4_xx2en"] == pytest.approx((65 + 75 + 85 + 95) / 4)  # 80
    assert a["low4_en2xx"] == pytest.approx((45 + 55 + 65 + 75) / 4)  # 60
    assert a["all"] == pytest.approx((55 + 65 + 75 + 85 + 95) / 5)  # 75
    assert a["all_xx2en"] == pytest.approx((65 + 75 + 85 + 95 + 99) / 5)  # 83.8
    assert a["all_en2xx"] == pytest.approx((45 + 55 + 65 + 75 + 91) / 5)  # 66.2
    assert a["missing"] is None
    # B lacks jv: low4 is not averaged over the three it has; `all` is over what it has.
    assert (b["low4"], b["low4_xx2en"], b["low4_en2xx"]) == (None, None, None)
    assert b["all"] == pytest.approx((15 + 25 + 35 + 85) / 4)  # 40
    assert b["missing"] == "jv"


def test_languages_that_trained_on_too_few_pairs_are_marked(tmp_path):
    """Languages the sample stage let through below the minimum (min_pairs_action: warn): the
    summary names them per run, and the Markdown marks their columns, every group average
    over them and says why in a footnote."""
    stats = []
    for lang, below in (("jv", {"train": [32, 500], "dev": [4, 50]}), ("kk", {}), ("ka", {})):
        stats.append(tmp_path / f"{lang}.json")
        stats[-1].write_text(json.dumps({"lang": lang, "train": 32, "below_min": below}))
    scarce = scarce_languages(stats)
    assert scarce == {"jv": "train 32 < 500, dev 4 < 50"}
    groups = members(["low4", "laser14"])
    summary, per_language = tatoeba_tables(FRAMES, groups, scarce)
    assert summary["scarce"].to_list() == ["jv", None]  # B was not evaluated on jv
    write_tables(summary, per_language, tmp_path / "tatoeba.csv", groups, scarce=scarce)
    md = (tmp_path / "tatoeba.md").read_text().splitlines()
    header = md[2].split(" | ")
    # low4 holds jv, laser14 does not; `all` holds every language run A was evaluated on.
    assert "low4*" in header and "laser14" in header and "all*" in header
    assert "low4_xx2en*" in header
    assert md[-1].startswith("* Trained on fewer pairs than the minimum (jv: train 32 < 500")
    langs_md = (tmp_path / "tatoeba_langs.md").read_text()
    assert "| run | de | jv* | ka | kk | te |" in langs_md
    # The CSV keeps plain column names and the languages in its own column.
    assert pl.read_csv(tmp_path / "tatoeba.csv")["scarce"].to_list() == ["jv", None]


def test_per_language_seed_means():
    _, per_language = tatoeba_tables(FRAMES, members(["low4"]))
    # Language-table order; the devices last, blank for data frames (only files record them).
    assert per_language.columns == ["run", "de", "jv", "ka", "kk", "te", *DEVICE_COLUMNS]
    blank = (None,) * len(DEVICE_COLUMNS)
    assert per_language.rows() == [
        ("A", 95, 85, 75, 55, 65, *blank),
        ("B", 85, None, 35, 15, 25, *blank),
    ]


def test_reads_parquet_paths(tmp_path):
    paths = []
    for i, frame in enumerate(FRAMES):
        paths.append(tmp_path / f"seed{i}.parquet")
        frame.write_parquet(paths[-1])
    low4 = members(["low4"])
    assert tatoeba_tables(paths, low4)[0].equals(tatoeba_tables(FRAMES, low4)[0])


def test_seed_missing_a_language_is_refused():
    partial = tatoeba_results("A", 2, {"kk": (1, 1)})
    with pytest.raises(
        ValueError, match="'A' has results for te, ka, jv, de from only some of its 3"
    ):
        tatoeba_tables([*FRAMES, partial], members(["low4"]))


def test_duplicate_result_is_refused():
    with pytest.raises(ValueError, match="passed twice"):
        tatoeba_tables([*FRAMES, FRAMES[0]], members(["low4"]))


def test_unknown_group():
    with pytest.raises(UnknownLanguageError, match="unknown group 'low3'"):
        members(["low3"])


def test_a_defined_group_is_averaged_like_a_built_in_one(tmp_path):
    # `mine` (kk te): A (55 + 65) / 2 = 60, B (15 + 25) / 2 = 20. `pair` (de jv): A
    # (95 + 85) / 2 = 90; B was not evaluated on jv, so its cell is blank.
    defined = define_groups({"mine": ["kk", "te"], "pair": ["de", "jv"]})
    groups = members(["low4", "mine", "pair"], defined)
    summary, per_language = tatoeba_tables(FRAMES, groups)
    assert summary["mine"].to_list() == [60, 20]
    assert summary["pair"].to_list() == [90, None]
    assert summary["missing"].to_list() == [None, "jv"]
    write_tables(summary, per_language, tmp_path / "tatoeba.csv", groups)
    header = (tmp_path / "tatoeba.md").read_text().splitlines()[2].split(" | ")
    assert {"mine", "pair", "mine_xx2en", "pair_en2xx"} <= set(header)


def test_write_tables(tmp_path):
    summary, per_language = tatoeba_tables(FRAMES, members(["low4"]))
    written = write_tables(summary, per_language, tmp_path / "tatoeba.csv", members(["low4"]))
    assert [p.name for p in written] == [
        "tatoeba.csv", "tatoeba.md", "tatoeba_langs.csv", "tatoeba_langs.md"
    ]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)
    assert pl.read_csv(tmp_path / "tatoeba.csv").equals(summary)
    assert pl.read_csv(tmp_path / "tatoeba_langs.csv").equals(per_language)

    md = (tmp_path / "tatoeba.md").read_text().splitlines()
    header = "| run | seeds | low4 | all | low4_xx2en | all_xx2en | low4_en2xx | all_en2xx |"
    rows = md[md.index(header) + 2 :]
    assert rows[0] == "| A | 2 | 70.0 | 75.0 | 80.0 | 83.8 | 60.0 | 66.2 |"
    # B: all_xx2en = (20 + 30 + 40 + 90) / 4 = 45, all_en2xx = (10 + 20 + 30 + 80) / 4 = 35.
    assert rows[1] == "| B | 1 | – | 40.0 | – | 45.0 | – | 35.0 |"
    footnote = next(line for line in rows if "`B`" in line)
    assert "jv" in footnote

    langs_md = (tmp_path / "tatoeba_langs.md").read_text()
    assert "| run | de | jv | ka | kk | te |" in langs_md
    assert "| B | 85.0 | – | 35.0 | 15.0 | 25.0 |" in langs_md


def test_ablation_table_lists_the_chosen_runs_in_order_with_their_group_languages():
    table = ablation_table(FRAMES, ["B", "A"], members(["low4"]))
    assert table.columns[:3] == ["run", "seeds", "low4"]
    assert sorted(table.columns[3:-4]) == ["jv", "ka", "kk", "te"]  # not de: outside low4
    assert table.columns[-4:] == list(DEVICE_COLUMNS)
    rows = {row["run"]: row for row in table.to_dicts()}
    assert table["run"].to_list() == ["B", "A"]
    assert rows["A"]["low4"] == pytest.approx((55 + 65 + 75 + 85) / 4)
    assert rows["A"]["seeds"] == 2 and rows["A"]["ka"] == pytest.approx(75)
    # B lacks jv: its group is blank, never averaged over fewer languages.
    assert rows["B"]["low4"] is None and rows["B"]["jv"] is None
    with pytest.raises(ValueError, match="ablation runs"):
        ablation_table(FRAMES, ["A", "C"], members(["low4"]))


def test_the_per_language_table_shows_each_asked_direction():
    """DAP Tables 7–8: a column per language and direction."""
    _, per_language = tatoeba_tables(FRAMES, members(["low4"]), None, ("mean", "xx2en", "en2xx"))
    assert per_language.columns[:4] == ["run", "de", "de_xx2en", "de_en2xx"]
    a = per_language.row(0, named=True)
    assert (a["kk"], a["kk_xx2en"], a["kk_en2xx"]) == (55, 65, 45)  # the seed means
    only = tatoeba_tables(FRAMES, members(["low4"]), None, ("xx2en",))[1]
    assert only.columns == [
        "run", "de_xx2en", "jv_xx2en", "ka_xx2en", "kk_xx2en", "te_xx2en", *DEVICE_COLUMNS
    ]  # fmt: skip
