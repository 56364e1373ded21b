"""Whether a planned training resumes or starts over, and why, said before its job runs.

Beside its latest checkpoint (`last.pt`) a run keeps `last.json`: the step and what the
checkpoint was trained with, as far as it can change a number (`xlsent.train.settings.
identity`, and the number of processes). The process that plans a run reads it without
torch and compares it with the settings the job will pass: the console then says, for each
training the run will do, `resumes its training at step 500` or `its checkpoint at step 500
was trained with other settings (lr: 0.001 → 0.002): the training starts over`, rather than
the job's log saying so an hour later. The trainer decides by the checkpoint's fingerprint,
which also covers the content of the inputs and of the model it starts from; a changed input
is a reason of Snakemake's own on the console.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import NamedTuple

RECORD = "last.json"


def write_record(directory: Path, step: int, identity: dict, processes: int) -> None:
    """Record what the checkpoint of `step` in `directory` was trained with."""
    from xlsent.io import write_json  # pyarrow's: not for the process that plans a run

    write_json(
        Path(directory) / RECORD, {"step": step, "settings": identity, "processes": processes}
    )


def remove_record(directory: Path) -> None:
    (Path(directory) / RECORD).unlink(missing_ok=True)


class Note(NamedTuple):
    text: str
    starts_over: bool


def recorded(directory: Path) -> dict | None:
    """The record of the checkpoint in `directory` (step, settings, processes); None without
    one, or one that does not read (cut short)."""
    try:
        record = json.loads((Path(directory) / RECORD).read_text())
        return {key: record[key] for key in ("step", "settings", "processes")}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def resume_note(
    directory: Path, identity: dict, processes: int, record: dict | None = None, root: Path = Path()
) -> Note | None:
    """What the training whose checkpoints are in `directory` (their `record`, read if not
    given; under `root`, the working directory of the run) does with settings `identity` in
    `processes` processes: resume at the checkpoint's step, or start over, naming the
    settings that differ; None without a checkpoint."""
    record = record or recorded(root / directory)
    if record is None:
        return None
    step, before, processes_before = record["step"], record["settings"], record["processes"]
    now = json.loads(json.dumps(identity))  # as JSON reads back: tuples are lists
    changes = [
        f"{key}: {_shown(before.get(key))} → {_shown(now.get(key))}"
        for key in dict.fromkeys([*before, *now])
        if before.get(key) != now.get(key)
    ]
    if processes_before != processes:
        changes.append(f"processes: {processes_before} → {processes}")
    last = Path(directory) / "last.pt"
    try:
        zipfile.ZipFile(root / last).close()  # torch's format: a zip whose directory is at its end
    except (OSError, zipfile.BadZipFile):
        return Note(
            f"its checkpoint {last} does not read back (cut short?): the training resumes "
            "from the one before it if that loads, or starts over",
            starts_over=True,
        )
    if changes:
        return Note(
            f"its checkpoint at step {step} ({last}) was trained with other settings "
            f"({', '.join(changes)}): the training starts over",
            starts_over=True,
        )
    return Note(f"resumes its training at step {step} ({last})", starts_over=False)


def _shown(value: object) -> str:
    return "(none)" if value is None else json.dumps(value)
