"""The cost table (`xlsent.tables.cost`): each stage's and run's time, a resumed training's
earlier jobs included."""

import os

import polars as pl
import pytest

from xlsent.tables.cost import cost_table, write_cost_table


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
        # The hard-negative stage: the pool's encoding on a GPU, a language's search on CPUs.
        "hard_negatives/encode/pretrained/me5/all/vectors-0000.tsv": (360.0, 800.0, 300.0),
        "hard_negatives/mine/pretrained/me5/all/kk.tsv": (12.0, 200.0, 9.0),
    }
    for name, (wall, rss, cpu) in jobs.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + f"{wall}\t0:00:00\t{rss}\t0\t0\t0\t0\t0\t0\t{cpu}\n")
    gpus = {"train/tr": 2, "align/simalign": 1, "align/eflomal": 0, "hard_negatives/encode": 1}
    table = cost_table(tmp_path, gpus)
    rows = {(r["stage"], r["run"]): r for r in table.rows(named=True)}
    assert set(rows) == {
        *(("clean", ""), ("train", "tr"), ("eval/tatoeba", "tr"), ("plots", "")),
        *(("align/simalign", ""), ("align/eflomal", "")),  # each aligner's shards
        *(("hard_negatives/encode", ""), ("hard_negatives/mine", "")),
    }
    assert (rows["align/simalign", ""]["gpu_h"], rows["align/eflomal", ""]["gpu_h"]) == (0.2, 0)
    assert rows["hard_negatives/encode", ""]["gpu_h"] == 0.1
    assert rows["hard_negatives/mine", ""]["gpu_h"] == 0
    clean, train = rows["clean", ""], rows["train", "tr"]
    assert (clean["jobs"], clean["wall_min"], clean["cpu_min"]) == (2, 3.0, 2.0)
    assert clean["peak_rss_gb"] == pytest.approx(300 / 1024)
    assert (train["jobs"], train["wall_min"], train["gpu_h"]) == (2, 90.0, 3.0)  # 1.5 h × 2
    assert rows["eval/tatoeba", "tr"]["cpu_min"] is None
    write_cost_table(table, tmp_path / "cost.csv")
    # 60 + 120 + 3600 + 1800 + 30 + 6 + 720 + 6 + 360 + 12 s of wall; 30 + 90 + 7000 + 3500
    # + 5 + 600 + 6 + 300 + 9 s of CPU; 1.5 h × 2 + 0.2 h × 1 + 0.1 h × 1 GPU hours.
    assert (
        "Total: 111.9 wall minutes (summed over jobs, not elapsed), 192.3 CPU minutes, "
        "3.30 GPU hours" in (tmp_path / "cost.md").read_text()
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
