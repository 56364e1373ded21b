"""The dev table (`tables_dev`): each encoder run's dev P@1 at every evaluation of its
training, and the checkpoint it kept; the numbers the `dev_curves` figure draws, for a reader
who compares runs at equal steps (WACSE §4.3 chooses its checkpoint on dev the same way).

Dev P@1 is a mean over languages, each weighing the same: a language kept with a dev split
below `corpus.min_dev_pairs` (`min_pairs_action: warn`) moves it far more than its pairs
warrant (3 dev pairs: one sentence missed one way is 16.7 points of its score). The table
gives the kept checkpoint's mean without those languages beside the one that chose it.

Each row ends with its devices (`xlsent.tables.devices.COLUMNS`) from the model's `run.json`
(`trained_on`): dev P@1 is encoded by the training itself, on its device, at the precision
it was given (`evaluate.precision`), so `eval_device` is the training's device and
`eval_precision` that precision.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import polars as pl

from xlsent.devices import device_label
from xlsent.failures.unreadable import remake_command
from xlsent.tables.devices import COLUMNS as DEVICE_COLUMNS
from xlsent.tables.devices import Devices, devices_notes, joined
from xlsent.tables.speed import COLUMNS as SPEED_COLUMNS
from xlsent.tables.speed import training_speed
from xlsent.tables.write import write_table


def _broken(path: Path, where: str, err: json.JSONDecodeError) -> ValueError:
    """The error of a model directory's record that does not parse: the file, where, and the
    command that remakes the model (a directory output: its files are not targets)."""
    return ValueError(
        f"{path}{where} is not JSON ({err.msg}): remake the run's model and what was computed "
        f"from it: {remake_command([path.parent])}"
    )


def _records(log: Path) -> list[dict]:
    records = []
    for number, line in enumerate(log.read_text().splitlines(), 1):
        if not line:
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise _broken(log, f" line {number}", err) from None
    return records


def _device_values(directory: Path) -> dict[str, list[str | None]]:
    """The four device columns' values of a model directory's training (`run.json`'s
    `trained_on`: one record per distinct job), unjoined; [None] each for a model exported
    before the records."""
    path = directory / "run.json"
    try:
        jobs = json.loads(path.read_text()).get("trained_on") if path.exists() else None
    except json.JSONDecodeError as err:
        raise _broken(path, "", err) from None
    if not jobs:
        return {column: [None] for column in DEVICE_COLUMNS}
    trained = [device_label(job) for job in jobs]
    return dict(
        zip(
            DEVICE_COLUMNS,
            (
                trained,
                [j["precision"] for j in jobs],
                trained,
                [j.get("dev_precision") for j in jobs],
            ),
            strict=True,
        )
    )


def _best(directory: Path) -> dict:
    """The model directory's `best.json`: the kept checkpoint's step and dev P@1, overall and
    per language."""
    try:
        return json.loads((directory / "best.json").read_text())
    except json.JSONDecodeError as err:
        raise _broken(directory / "best.json", "", err) from None


def _run_seed(label: str) -> tuple[str, int]:
    run, _, seed = label.rpartition("/seed")
    if not run or not seed.isdigit():
        raise ValueError(f"model label {label!r} is not RUN/seedN")
    return run, int(seed)


def chosen_scores(
    models: Mapping[str, str | os.PathLike[str]],
) -> dict[str, dict[int, dict[str, float]]]:
    """{run: {seed: {lang: dev P@1}}} of the checkpoint each model kept (its `best.json`),
    from `models` ({"run/seedN": model directory}): what `xlsent.tables.compare` compares
    language by language."""
    scores: dict[str, dict[int, dict[str, float]]] = {}
    for label, directory in models.items():
        run, seed = _run_seed(label)
        scores.setdefault(run, {})[seed] = dict(_best(Path(directory))["dev"])
    return scores


def models_devices(models: Mapping[str, str | os.PathLike[str]]) -> dict[str, Devices]:
    """{run: its four device cells} over its seeds' model directories in `models`: dev P@1
    is encoded by the training, on its device, at its `dev_precision`."""
    values: dict[str, dict[str, list[str | None]]] = {}
    for label, directory in models.items():
        run, _ = _run_seed(label)
        cells = values.setdefault(run, {column: [] for column in DEVICE_COLUMNS})
        for column, found in _device_values(Path(directory)).items():
            cells[column] += found
    return {
        run: {column: joined(found) for column, found in cells.items()}
        for run, cells in values.items()
    }


def small_dev_languages(stats: Sequence[str | os.PathLike[str]]) -> dict[str, int]:
    """The languages whose dev split is below the minimum (`corpus.min_dev_pairs`), from
    their sample statistics (`below_min`), with their dev pairs: {lang: pairs}."""
    small = {}
    for path in stats:
        record = json.loads(Path(path).read_text())
        if "dev" in record.get("below_min", {}):
            small[record["lang"]] = record["below_min"]["dev"][0]
    return small


def _mean_without(scores: Mapping[str, float], left_out: Collection[str]) -> float | None:
    """The mean of per-language dev P@1 `scores` over the languages not in `left_out`, to two
    decimals, as training takes its own mean of them (`xlsent.train.loop.Trainer.evaluate`)."""
    kept = [p1 for lang, p1 in scores.items() if lang not in left_out]
    return round(sum(kept) / len(kept), 2) if kept else None


def dev_table(
    models: Mapping[str, str | os.PathLike[str]],
    small_dev: Collection[str] = (),
    without_small_dev: bool = False,
) -> pl.DataFrame:
    """One row per run and seed, in the order of `models` ({"run/seedN": model directory}).

    Columns: `run`, `seed`, the dev P@1 (%) at each evaluated step, one column per step
    across all runs in step order (`0` is the encoder before training; null where a run did
    not evaluate that step), then `chosen_step` and `chosen` (dev P@1) of the checkpoint the
    run kept, as its `best.json` records it; where `small_dev` names languages (dev splits
    below the minimum, `small_dev_languages`), `chosen_without_small_dev`: the kept
    checkpoint's mean over its other languages; then the training's speed, `tokens_per_s`
    and `mfu_pct` (`xlsent.tables.speed`), to compare runs at equal time as well; last, the
    training's devices (the module docstring).

    With `without_small_dev`, every mean (each step's and `chosen`) leaves out the languages
    of `small_dev`, from each record's per-language scores, and `chosen_without_small_dev`,
    which would repeat `chosen`, is not a column: the curves of runs compared without the
    languages whose few dev pairs move the mean most. The checkpoint is still the one the run
    kept by its mean over all its languages.
    """
    rows, steps = [], set()
    for label, directory in models.items():
        run, seed = _run_seed(label)
        directory = Path(directory)
        records = _records(directory / "train_log.jsonl")
        evaluations = [record for record in records if "dev_p1" in record]
        best = _best(directory)
        without = _mean_without(best["dev"], small_dev)
        if without_small_dev:
            if unscored := [r["step"] for r in evaluations if "dev" not in r]:
                raise ValueError(
                    f"{directory / 'train_log.jsonl'}: the dev evaluations at steps {unscored} "
                    "have no per-language scores (`dev`), so no mean can leave languages "
                    "out: leave out --without-small-dev for this run"
                )
            curve = {r["step"]: _mean_without(r["dev"], small_dev) for r in evaluations}
            chosen = (best["step"], without, None)
        else:
            curve = {record["step"]: record["dev_p1"] for record in evaluations}
            chosen = (best["step"], best["dev_p1"], without)
        steps |= curve.keys()
        speed = training_speed(records)
        rows.append(
            (
                run,
                seed,
                curve,
                *chosen,
                *(speed[c] for c in SPEED_COLUMNS),
                *(joined(found) for found in _device_values(directory).values()),
            )
        )
    columns = [str(step) for step in sorted(steps)]
    schema = {
        "run": pl.String,
        "seed": pl.Int64,
        **dict.fromkeys(columns, pl.Float64),
        "chosen_step": pl.Int64,
        "chosen": pl.Float64,
        "chosen_without_small_dev": pl.Float64,
        **dict.fromkeys(SPEED_COLUMNS, pl.Float64),
        **dict.fromkeys(DEVICE_COLUMNS, pl.String),
    }
    table = pl.DataFrame(
        [
            [run, seed, *(curve.get(step) for step in sorted(steps)), *after]
            for run, seed, curve, *after in rows
        ],
        schema=schema,
        orient="row",
    )
    return table if small_dev and not without_small_dev else table.drop("chosen_without_small_dev")


def seed_spread(table: pl.DataFrame) -> dict[str, float]:
    """Each run with more than one seed: the spread (max − min) of its seeds' chosen dev P@1."""
    spread = (
        table.group_by("run", maintain_order=True)
        .agg(pl.len().alias("seeds"), (pl.col("chosen").max() - pl.col("chosen").min()))
        .filter(pl.col("seeds") > 1)
    )
    return dict(spread.select("run", "chosen").rows())


def write_dev_table(
    table: pl.DataFrame,
    out_csv: Path,
    small_dev: Mapping[str, int] | None = None,
    without_small_dev: bool = False,
) -> None:
    """Write the dev table (`dev_table`) to `out_csv` and its `.md`, with the seeds' spread and
    the languages `small_dev` ({lang: dev pairs}) left out of `chosen_without_small_dev`, or
    of every mean where the table was made `without_small_dev`."""
    notes = []
    if spread := seed_spread(table):
        notes.append(
            "Seeds' spread of the chosen dev P@1 (max − min): "
            + ", ".join(f"{run} {value:.2f}" for run, value in spread.items())
            + "."
        )
    if small_dev:
        pairs = ", ".join(f"{lang} {n}" for lang, n in small_dev.items())
        left_out = "Every mean" if without_small_dev else "`chosen_without_small_dev`"
        notes.append(
            f"{left_out} leaves out the languages with fewer dev pairs than "
            f"corpus.min_dev_pairs ({pairs}), kept because corpus.min_pairs_action is warn: "
            "dev P@1 weighs each language the same, whatever its pairs."
        )
    write_table(
        table,
        out_csv,
        digits=2,
        notes=notes + devices_notes(table),
        caption="Dev P@1 (%, the mean over languages of similarity search both ways on each "
        "language's dev pairs) at each evaluated training step (0: before training), and the "
        "checkpoint each run kept: the step of its best dev P@1 (the last step for "
        "pretraining, which keeps its latest weights); the training's speed, the median of "
        "its log's lines: real (non-pad) tokens per second and model FLOPs utilisation (%; "
        "empty on a CPU or a GPU of unknown peak).",
    )
