"""The cost table (`tables_cost`): what each stage and run cost, from the jobs' benchmark
files, and what the jobs ran on where their records say (`xlsent.devices`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

import polars as pl
import pyarrow as pa

from xlsent import layout
from xlsent.devices import CPU_FP32, device_label
from xlsent.evaluate.results import read_devices
from xlsent.tables.devices import joined
from xlsent.tables.speed import COLUMNS as SPEED_COLUMNS
from xlsent.tables.write import write_table

# Where a run's name sits in a rule's benchmark path (results/benchmarks/{rule}/...): the jobs
# of these rules are one run's; every other rule's jobs serve all runs.
RUN_PART = {"train": 1, "train_dualpivot": 1, "eval": 2, "bisent2vec_train": 1}
# Benchmark folders whose next part names the stage (`eval/{task}`, `align/{aligner}`,
# `hard_negatives/encode` and `/mine`: the GPU encoding apart from the CPU search).
SPLIT_STAGES = ("eval", "align", "hard_negatives")
# Stages whose jobs run on a CPU in fp32 by construction (C++ and numpy: no device to choose).
CPU_STAGES = ("bisent2vec_train",)
# The last columns: what the stage's jobs ran on, where recorded (a training's, an encoding's).
DEVICE_COLUMNS = ("device", "precision")


def recorded_devices(
    vectors: str | os.PathLike[str] | None = None,
    models: str | os.PathLike[str] | None = None,
    evaluations: str | os.PathLike[str] | None = None,
    sources: Mapping[str, str] | None = None,
) -> dict[str, list[dict]]:
    """{benchmark path without its suffix: the records of what its job ran on} from the
    encodings' vector files under `vectors` (`results/vectors`: `eval/encode/{run}/seed{seed}/
    {source}`) and the exported models' `run.json` under `models` (`results/models`: the
    training's, under both `train/...` and `train_dualpivot/...`, a run being one or the
    other), for `cost_table`'s `devices`.

    An encoding whose vectors are gone (an experiment's kept files leave them out: they are
    large) is recorded by the evaluations that scored them: the results files under
    `evaluations` (`results/eval/{task}/{run}/seed{seed}.parquet`, `read_devices`' `eval`),
    each task's encoding being that of its source in `sources` ({task: source}, as
    `xlsent.config.vector_source` gives it); a task not in `sources` is not read.
    """
    found: dict[str, list[dict]] = {}
    runs = layout.to_glob(layout.RUN_SEED)
    for path in Path(vectors).glob(f"{runs}/*.arrow") if vectors is not None else ():
        with pa.memory_map(str(path)) as source:  # the footer only: no vector is read
            metadata = pa.ipc.open_file(source).schema.metadata or {}
        encoded = metadata.get(b"encoded_on")
        if encoded is not None and json.loads(encoded) is not None:
            run_seed = path.parent.relative_to(vectors).as_posix()
            found[f"eval/encode/{run_seed}/{path.stem}"] = [json.loads(encoded)]
    for task, source in (sources or {}).items() if evaluations is not None else ():
        for path in Path(evaluations, task).glob(f"{runs}.parquet"):
            encoded = (read_devices(path) or {}).get("eval")
            run_seed = path.relative_to(Path(evaluations, task)).with_suffix("").as_posix()
            if encoded is not None:
                found.setdefault(f"eval/encode/{run_seed}/{source}", [encoded])
    for path in Path(models).glob(f"{runs}/run.json") if models is not None else ():
        trained = json.loads(path.read_text()).get("trained_on")
        if trained:
            run_seed = path.parent.relative_to(models).as_posix()
            for stage in ("train", "train_dualpivot"):
                found[f"{stage}/{run_seed}"] = trained
    return found


def cost_table(
    benchmarks: str | os.PathLike[str],
    gpus: dict[str, int],
    earlier: Mapping[str, Sequence[dict]] | None = None,
    speeds: Mapping[str, Mapping[str, float | None]] | None = None,
    trained: Mapping[str, tuple[Sequence[dict], float]] | None = None,
    devices: Mapping[str, Sequence[Mapping]] | None = None,
) -> pl.DataFrame:
    """What each stage cost, from the `benchmark:` files under `benchmarks` (Snakemake's TSV
    of one job each: wall seconds, peak RSS, CPU seconds).

    One row per stage (the rule; `eval/{task}` for evaluations, `align/{aligner}` for the
    alignment shards, `hard_negatives/encode` and `hard_negatives/mine`) and run (empty for
    the stages every run shares): jobs, attempts (the jobs, and the earlier jobs of a resumed
    one), wall minutes (summed over jobs), CPU minutes, the largest peak RSS (GB), and GPU
    hours (wall × GPUs of the job: `gpus` maps a stage, or `stage/run`, to the GPUs each of
    its jobs held; 0 for the rest). `earlier` maps
    a benchmark file's path below `benchmarks`, without its suffix (`train/tr/seed42`), to the
    jobs that worked towards it before it resumed their work ({seconds, cpu_seconds} each, to
    its last checkpoint): their time is added to it. `speeds` maps a training's benchmark
    file the same way to its speed (`xlsent.tables.speed.log_speed`): `tokens_per_s` and
    `mfu_pct`, averaged over the run's jobs (empty for the other stages, and where unknown).
    `trained` maps a training's benchmark path the same way to every job that trained it, as
    the trainer recorded them at its export, and when (a Unix time): where no benchmark file
    that recent is there (its Snakemake was killed while the job ran, and a later run adopted
    the model), the row counts those jobs, without a peak RSS.

    Last, `device` and `precision`: what the stage's jobs ran on (`xlsent.devices`; the
    distinct values joined), from each training job's record in `trained` and `earlier`, from
    `devices` (a benchmark path as above → its job's records: `recorded_devices`, the
    encodings'), and CPU fp32 for the word-vector trainings (`CPU_STAGES`); blank where no
    record says (the CPU stages of the workflow, which choose no device).
    """
    root = Path(benchmarks)
    files = {
        path.relative_to(root).with_suffix("").as_posix(): path for path in root.rglob("*.tsv")
    }
    rows = []
    ran_on: dict[tuple[str, str], list[Mapping | None]] = {}
    for job in sorted({*files, *(trained or {})}):
        parts = PurePosixPath(job).parts
        stage = "/".join(parts[:2]) if parts[0] in SPLIT_STAGES else parts[0]
        at = RUN_PART.get(parts[0])
        run = parts[at] if at is not None and len(parts) > at + 1 else ""
        path = files.get(job)
        jobs, recorded = (trained or {}).get(job, ((), None))
        if path is not None and (recorded is None or path.stat().st_mtime >= recorded):
            record = pl.read_csv(path, separator="\t").row(-1, named=True)  # the last repeat
            before = (earlier or {}).get(job, ())
            seconds, cpu = float(record["s"]), _number(record.get("cpu_time"))
            rss = _number(record.get("max_rss"))
        else:  # the trainer's own record: every job, the last one's measured to its export
            *before, last = jobs
            seconds, cpu, rss = last["seconds"], last["cpu_seconds"], None
        wall = seconds + sum(attempt["seconds"] for attempt in before)
        held = gpus.get(f"{stage}/{run}", gpus.get(stage, 0))
        ran_on.setdefault((stage, run), []).extend(
            _job_devices(stage, [*jobs, *(earlier or {}).get(job, ())], (devices or {}).get(job))
        )
        rows.append(
            {
                "stage": stage,
                "run": run,
                "attempts": 1 + len(before),
                "wall_s": wall,
                "cpu_s": None if cpu is None else cpu + sum(a["cpu_seconds"] for a in before),
                "max_rss_mb": rss,
                "gpu_s": wall * held,
                **{c: (speeds or {}).get(job, {}).get(c) for c in SPEED_COLUMNS},
            }
        )
    if not rows:
        raise ValueError(f"no benchmark files under {root}")
    table = (
        # Every row's types (a number is an int in one row and a float in another).
        pl.DataFrame(rows, infer_schema_length=None)
        .group_by("stage", "run", maintain_order=True)
        .agg(
            pl.len().alias("jobs"),
            pl.col("attempts").sum(),
            (pl.col("wall_s").sum() / 60).alias("wall_min"),
            # null where no job of the stage could be measured (not 0)
            pl.when(pl.col("cpu_s").is_not_null().any())
            .then(pl.col("cpu_s").sum() / 60)
            .alias("cpu_min"),
            (pl.col("max_rss_mb").max() / 1024).alias("peak_rss_gb"),
            (pl.col("gpu_s").sum() / 3600).alias("gpu_h"),
            *(pl.col(c).cast(pl.Float64).mean() for c in SPEED_COLUMNS),
        )
        .sort("stage", "run")
    )
    keys = table.select("stage", "run").rows()
    return table.with_columns(
        device=pl.Series(
            [joined([_label(r) for r in ran_on[key]]) for key in keys], dtype=pl.String
        ),
        precision=pl.Series(
            [joined([_precision(r) for r in ran_on[key]]) for key in keys],
            dtype=pl.String,
        ),
    )


def _job_devices(
    stage: str, attempts: Sequence[Mapping], recorded: Sequence[Mapping] | None
) -> list[Mapping | None]:
    """What one job ran on: its training's records (each attempt's that has one), those
    `recorded` elsewhere, or the CPU's fp32 of a word-vector training; [None] if unknown."""
    found = [attempt for attempt in attempts if "device" in attempt] + list(recorded or ())
    if stage in CPU_STAGES:
        found.append(CPU_FP32)
    return found or [None]


def _label(record: Mapping | None) -> str | None:
    return None if record is None else device_label(record)


def _precision(record: Mapping | None) -> str | None:
    return None if record is None else record["precision"]


def _number(value: object) -> float | None:
    """A benchmark cell as a number: Snakemake writes "-" where it could not measure."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def write_cost_table(table: pl.DataFrame, out_csv: Path) -> None:
    """Write the cost table (`cost_table`) and its Markdown, with the totals under it."""
    totals = table.select(pl.col("wall_min", "cpu_min", "gpu_h").sum()).row(0, named=True)
    write_table(
        table,
        out_csv,
        digits=2,
        caption="What each stage cost: jobs, wall and CPU minutes summed over its jobs, the "
        "largest peak resident memory (GB), GPU hours (wall × the job's GPUs); a training's "
        "speed, the median of its log's lines averaged over its seeds: real (non-pad) tokens "
        "per second and model FLOPs utilisation (%; empty on a CPU or a GPU of unknown peak). "
        "A stage with a run is that run's; the others serve every run. A training job that "
        "resumed the work of killed jobs counts their time too, up to their last checkpoint "
        "(`attempts`: the jobs counted); a training whose last job no benchmark file records "
        "(its Snakemake was killed) is counted from the trainer's own record, without its "
        "peak memory.",
        notes=[
            f"Total: {totals['wall_min']:.1f} wall minutes (summed over jobs, not elapsed), "
            f"{totals['cpu_min']:.1f} CPU minutes, {totals['gpu_h']:.2f} GPU hours.",
            "`device`, `precision`: what the stage's jobs trained or encoded on, as their "
            "records say; blank where none does (the stages that choose no device).",
        ],
    )
