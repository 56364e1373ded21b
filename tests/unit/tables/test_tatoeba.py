import json
import os

import polars as pl
import pytest

from xlsent.languages import UnknownLanguageError, define_groups, members
from xlsent.tables.bli import bli_table, write_bli_table
from xlsent.tables.cost import cost_table, write_cost_table
from xlsent.tables.devices import COLUMNS as DEVICE_COLUMNS
from xlsent.tables.speed import log_speed, training_speed
from xlsent.tables.tatoeba import ablation_table, tatoeba_tables, write_tables
from xlsent.tables.write import scarce_languages


def results(run: str, seed: int, accuracy: dict[str, tuple[float, float]]) -> pl.DataFrame:
    """One seed's evaluation file: xx2en, en2xx and their mean per language."""
    rows = []
    for lang, (xx2en, en2xx) in accuracy.items():
        for direction, value in (("xx2en", xx2en), ("en2xx", en2xx), ("mean", (xx2en + en2xx) / 2)):
            rows.append(("tatoeba", run, seed, lang, direction, "accuracy", value, 1000))
    schema = {
        "task": pl.String,
        "run": pl.String,
        "seed": pl.Int64,
        "lang": pl.String,
        "direction": pl.String,
        "metric": pl.String,
        "value": pl.Float64,
        "n": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


# Run A, two seeds, all of low4 (kk te ka jv) plus de. Seed means per language (xx2en, en2xx, mean):
#   kk (60+70)/2=65, (40+50)/2=45, 55   te 75, 55, 65   ka 85, 65, 75   jv 95, 75, 85
#   de (100+98)/2=99, (90+92)/2=91, 95
# Run B, one seed, lacks jv: kk 20, 10, 15   te 30, 20, 25   ka 40, 30, 35   de 90, 80, 85
FRAMES = [
    results(
        "A", 0, {"kk": (60, 40), "te": (70, 50), "ka": (80, 60), "jv": (90, 70), "de": (100, 90)}
    ),
    results(
        "A", 1, {"kk": (70, 50), "te": (80, 60), "ka": (90, 70), "jv": (100, 80), "de": (98, 92)}
    ),
    results("B", 7, {"kk": (20, 10), "te": (30, 20), "ka": (40, 30), "de": (90, 80)}),
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
    partial = results("A", 2, {"kk": (1, 1)})
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


def bli_results(run: str, seed: int, values: dict[tuple[str, str], float], n: int = 50):
    """One seed's BLI file: every P@k of both retrievals per (language, direction), the value
    plus k (so that each metric differs)."""
    rows = [
        ("bli", run, seed, lang, direction, f"p@{k}_{method}", value + k, n)
        for (lang, direction), value in values.items()
        for method in ("nn", "csls")
        for k in (1, 5, 10)
    ]
    return pl.DataFrame(rows, schema=list(results("x", 0, {}).schema.items()), orient="row")


def test_bli_table_one_row_per_run_seeds_averaged(tmp_path):
    frames = [
        bli_results("b2v", 42, {("de", "en2xx"): 20, ("de", "xx2en"): 30, ("kk", "en2xx"): 5}),
        bli_results("b2v", 0, {("de", "en2xx"): 30, ("de", "xx2en"): 40, ("kk", "en2xx"): 7}),
        bli_results("cbow", 42, {("de", "en2xx"): 10, ("de", "xx2en"): 11}, n=48),
    ]
    table, queries = bli_table(frames)
    assert table["run"].to_list() == ["b2v", "cbow"]
    assert table["seeds"].to_list() == [2, 1]
    # Language-table order (de before kk), directions en2xx then xx2en, nn then csls.
    assert table.columns[2:8] == [
        "de_en2xx_p@1_nn", "de_en2xx_p@5_nn", "de_en2xx_p@10_nn",
        "de_en2xx_p@1_csls", "de_en2xx_p@5_csls", "de_en2xx_p@10_csls",
    ]  # fmt: skip
    assert next(c for c in table.columns if c.startswith("kk")) == "kk_en2xx_p@1_nn"
    assert not any(c.startswith("kk_xx2en") for c in table.columns)  # never evaluated
    rows = {row["run"]: row for row in table.to_dicts()}
    assert rows["b2v"]["de_en2xx_p@1_nn"] == pytest.approx(26)  # (21 + 31) / 2
    assert rows["b2v"]["de_xx2en_p@10_csls"] == pytest.approx(45)
    assert rows["cbow"]["kk_en2xx_p@1_nn"] is None  # cbow has no kk: blank, not zero
    assert queries[("cbow", "de", "xx2en")] == 48
    # The test words kept after the vocabulary filter follow each language and direction.
    assert table.columns[8] == "de_en2xx_n"
    assert (rows["b2v"]["de_en2xx_n"], rows["cbow"]["de_xx2en_n"]) == (50, 48)
    assert rows["cbow"]["kk_en2xx_n"] is None

    write_bli_table(table, queries, tmp_path / "bli.csv")
    assert pl.read_csv(tmp_path / "bli.csv").equals(table)
    md = (tmp_path / "bli.md").read_text()
    assert "| b2v | 2 | 26.0 | 30.0 | 35.0 |" in md
    assert "cbow de en2xx 48" in md


def test_bli_table_refuses_partial_seeds_and_other_tasks():
    partial = [
        bli_results("b2v", 42, {("de", "en2xx"): 20, ("kk", "en2xx"): 5}),
        bli_results("b2v", 0, {("de", "en2xx"): 30}),
    ]
    with pytest.raises(ValueError, match="only some of its 2 seeds"):
        bli_table(partial)
    with pytest.raises(ValueError, match="passed twice"):
        bli_table([bli_results("b2v", 42, {("de", "en2xx"): 20})] * 2)
    with pytest.raises(ValueError, match="expected BLI results"):
        bli_table([results("A", 0, {"de": (1, 2)})])


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


def test_a_trainings_speed_is_the_median_of_its_log_lines_a_torn_one_left_out(tmp_path):
    """The live log of a killed job may end in a torn line: its speed is in the lines before.
    Tokens/s 800 (warming up), 1,000 and 1,100: median 1,000; MFU 0.10, 0.30, 0.35: 30 %."""
    log = tmp_path / "train_log.jsonl"
    speeds = [(50, 800.0, 0.10), (100, 1000.0, 0.30), (150, 1100.0, 0.35)]
    lines = [json.dumps({"step": s, "tokens_per_s": t, "mfu": m}) for s, t, m in speeds]
    lines.insert(2, json.dumps({"step": 100, "dev_p1": 80.0}))  # an evaluation: no speed
    log.write_text("\n".join(lines) + '\n{"step": 200, "tokens_per_s": 9')
    assert log_speed(log) == {"tokens_per_s": 1000.0, "mfu_pct": 30.0}
    assert training_speed([{"step": 1, "tokens_per_s": 5.0, "mfu": None}]) == {
        "tokens_per_s": 5.0,
        "mfu_pct": None,  # a CPU: no peak, no MFU
    }


def test_the_cost_table_sums_each_stage_and_run(tmp_path):
    """Snakemake's benchmark files (one job each) summed per stage and run, by hand."""
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    jobs = {
        "clean/kk.tsv": (60.0, 100.0, 30.0),
        "clean/te.tsv": (120.0, 300.0, 90.0),
        "train/tr/seed42.tsv": (3600.0, 2048.0, 7000.0),
        "train/tr/seed0.tsv": (1800.0, 1024.0, 3500.0),
        "eval/tatoeba/tr/seed42.tsv": (30.0, 500.0, "-"),  # "-": not measured
        "plots.tsv": (6.0, 50.0, 5.0),
        "align/simalign/kk/shard-0000.tsv": (720.0, 900.0, 600.0),
        "align/eflomal/kk/shard-0000.tsv": (6.0, 90.0, 6.0),
    }
    for name, (wall, rss, cpu) in jobs.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + f"{wall}\t0:00:00\t{rss}\t0\t0\t0\t0\t0\t0\t{cpu}\n")
    table = cost_table(tmp_path, {"train/tr": 2, "align/simalign": 1, "align/eflomal": 0})
    rows = {(r["stage"], r["run"]): r for r in table.rows(named=True)}
    assert set(rows) == {
        *(("clean", ""), ("train", "tr"), ("eval/tatoeba", "tr"), ("plots", "")),
        *(("align/simalign", ""), ("align/eflomal", "")),  # each aligner's shards
    }
    assert (rows["align/simalign", ""]["gpu_h"], rows["align/eflomal", ""]["gpu_h"]) == (0.2, 0)
    clean, train = rows["clean", ""], rows["train", "tr"]
    assert (clean["jobs"], clean["wall_min"], clean["cpu_min"]) == (2, 3.0, 2.0)
    assert clean["peak_rss_gb"] == pytest.approx(300 / 1024)
    assert (train["jobs"], train["wall_min"], train["gpu_h"]) == (2, 90.0, 3.0)  # 1.5 h × 2
    assert rows["eval/tatoeba", "tr"]["cpu_min"] is None
    write_cost_table(table, tmp_path / "cost.csv")
    # 60 + 120 + 3600 + 1800 + 30 + 6 + 720 + 6 s of wall; 30 + 90 + 7000 + 3500 + 5 + 600 +
    # 6 s of CPU; 1.5 h × 2 + 0.2 h × 1 GPU hours.
    assert (
        "Total: 105.7 wall minutes (summed over jobs, not elapsed), 187.2 CPU minutes, "
        "3.20 GPU hours" in (tmp_path / "cost.md").read_text()
    )
    # The seed-42 job resumed the work of two killed jobs (their time to their last
    # checkpoint, recorded in the checkpoint): the row counts it all.
    earlier = {"train/tr/seed42": [{"seconds": 600.0, "cpu_seconds": 1200.0}] * 2}
    # Each training's speed (its log's medians: `xlsent.tables.speed`), the mean of its jobs;
    # one of them on a device of unknown peak (no MFU).
    speeds = {
        "train/tr/seed42": {"tokens_per_s": 9000.0, "mfu_pct": 30.0},
        "train/tr/seed0": {"tokens_per_s": 11000.0, "mfu_pct": None},
    }
    fast = cost_table(tmp_path, {}, None, speeds)
    rows = {(r["stage"], r["run"]): r for r in fast.rows(named=True)}
    assert (rows["train", "tr"]["tokens_per_s"], rows["train", "tr"]["mfu_pct"]) == (10000, 30)
    assert rows["clean", ""]["tokens_per_s"] is None
    resumed = cost_table(tmp_path, {"train/tr": 2}, earlier).filter(pl.col("stage") == "train")
    assert resumed.select("jobs", "attempts", "wall_min", "cpu_min", "gpu_h").row(0) == (
        2,
        4,
        110.0,  # (3600 + 1800 + 2 × 600) s
        (7000 + 3500 + 2 * 1200) / 60,
        110 / 60 * 2,
    )


def test_a_training_after_a_hundred_other_jobs_keeps_its_speed(tmp_path):
    """The demo's cost table failed: its first hundred jobs had no speed (null) and polars,
    which inferred the column's type from them, refused the trainings' floats after them."""
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for name in [*(f"align/eflomal/kk/shard-{i:04d}" for i in range(120)), "train/tr/seed42"]:
        path = tmp_path / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + "1.0\t0:00:01\t10\t0\t0\t0\t0\t0\t0\t1\n")
    speeds = {"train/tr/seed42": {"tokens_per_s": 6084.5, "mfu_pct": None}}
    table = cost_table(tmp_path, {}, None, speeds)
    assert table.filter(pl.col("stage") == "train")["tokens_per_s"].to_list() == [6084.5]


def test_a_training_whose_benchmark_file_is_missing_or_older_counts_the_trainers_record(
    tmp_path,
):
    """The report: Snakemake killed (`kill -9`) while seed 42 trained, `snakemake --unlock`,
    a rerun refused beside the orphaned trainer, and the next run adopted the orphan's model:
    Snakemake wrote no benchmark file for it, and the cost table had no train row. The
    trainer's record at its export (`attempts.json`: every job, and when) stands in for it,
    also where a benchmark file of an earlier training of the run is older than the record."""
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for name, wall in (("clean/kk.tsv", 60.0), ("train/tr/seed0.tsv", 1800.0)):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + f"{wall}\t0:00:00\t100.0\t0\t0\t0\t0\t0\t0\t{wall}\n")
    jobs = [{"seconds": 600.0, "cpu_seconds": 1000.0}, {"seconds": 300.0, "cpu_seconds": 500.0}]
    trained = {"train/tr/seed42": (jobs, (tmp_path / "clean/kk.tsv").stat().st_mtime)}
    rows = cost_table(tmp_path, {"train/tr": 1}, None, None, trained).filter(
        pl.col("stage") == "train"
    )
    # seed 0's benchmark file (1800 s), and seed 42's two jobs of its record.
    assert rows.select("jobs", "attempts", "wall_min", "cpu_min", "gpu_h").row(0) == (
        2,
        3,
        (1800 + 900) / 60,
        (1800 + 1500) / 60,
        (1800 + 900) / 3600,
    )
    assert rows["peak_rss_gb"].item() == pytest.approx(100 / 1024)  # seed 0's: known
    # A benchmark file older than the record is an earlier training's: the record counts.
    stale = tmp_path / "train/tr/seed42.tsv"
    stale.write_text(header + "5.0\t0:00:00\t100.0\t0\t0\t0\t0\t0\t0\t5.0\n")
    recorded = stale.stat().st_mtime
    os.utime(stale, (recorded - 60, recorded - 60))
    trained = {"train/tr/seed42": (jobs, recorded)}
    row = cost_table(tmp_path, {}, None, None, trained).filter(pl.col("stage") == "train")
    assert row.select("attempts", "wall_min").row(0) == (3, (1800 + 900) / 60)
    # One written after the record is the exporting job's own: it counts, with the earlier.
    os.utime(stale, (recorded + 60, recorded + 60))
    earlier = {"train/tr/seed42": jobs[:1]}
    row = cost_table(tmp_path, {}, earlier, None, trained).filter(pl.col("stage") == "train")
    assert row.select("attempts", "wall_min").row(0) == (3, (1800 + 600 + 5) / 60)
