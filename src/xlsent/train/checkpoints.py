"""A run's checkpoint directory: the full state to resume from, and the best weights.

`last.pt` is the full training state (what goes into it, and when, is the trainer's:
`xlsent.train.loop`), `previous.pt` the one it replaced, kept as a fallback while the run
trains: a checkpoint that breaks after it was written (a copy cut short, a failing disk) is
moved aside and the run resumes from the one before it, or starts over, saying so. After
the export only `last.pt` stays (a rerun after the model is deleted resumes there).
`best-{step}.pt` are the weights of a dev evaluation that set a new best, which the export
loads: one file per such step, kept while a checkpoint names it. A run killed after such an
evaluation and before its next checkpoint resumes from a checkpoint that names an earlier
best, whose weights must still be there (the replay may not beat it again on a GPU).

`earlier_attempts.json` records the jobs that trained this run before the current one, up
to their last checkpoint (the cost table adds them to the job that finished the run).
`attempts.json` records every job so far, to the latest checkpoint written (and, once
exported, to the export), with the fingerprint of the run: it outlives a checkpoint that
breaks, so that the jobs whose work was lost with it still count, and it counts a training
whose last job no benchmark file records (its Snakemake was killed while it trained).

Beside the files, what a checkpoint holds that is not the trainer's own state: the
`fingerprint` of the run it belongs to, each process's random state (`random_state`), and
the jobs that trained the run so far (`Attempts`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import pickle
import time
from collections.abc import Collection, Iterable
from pathlib import Path

import torch
from torch import nn

from xlsent.failures.errors import XlsentError
from xlsent.failures.unreadable import set_aside
from xlsent.io import atomic_path, sha256_file, write_json
from xlsent.train.resume_notes import remove_record
from xlsent.train.settings import (
    ADDED_SINCE_FIELD_HASH,
    LEFT_OUT_AT_DEFAULT,
    REPORTING,
    ModelSpec,
    TrainSettings,
    identity,
)

log = logging.getLogger(__name__)

# What torch.load raises on a checkpoint cut short or garbled: its zip reader's RuntimeError
# ("PytorchStreamReader failed ..."; another RuntimeError, say a GPU out of memory, is not
# the file's fault), or the unpickler's.
_UNLOADABLE = (RuntimeError, EOFError, pickle.UnpicklingError)


def _broken(err: Exception) -> bool:
    """Whether `err`, one of `_UNLOADABLE`, says the file is broken."""
    return not isinstance(err, RuntimeError) or str(err).startswith("PytorchStreamReader")


class TrainingError(XlsentError):
    """A training state that cannot be trusted; the message names the files and the fix."""


class Checkpoints:
    """The files of one run's checkpoint `directory`."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        # The best step that the checkpoint the next `save` keeps beside it names (the one
        # loaded or saved last): its weights stay while that checkpoint does.
        self._kept_best: int | None = None

    @property
    def last(self) -> Path:
        """The full state of the latest checkpoint."""
        return self.directory / "last.pt"

    @property
    def previous(self) -> Path:
        """The checkpoint `last` replaced, the fallback while the run trains."""
        return self.directory / "previous.pt"

    @property
    def attempts(self) -> Path:
        """The jobs that trained the run before the current one (`record_attempts`)."""
        return self.directory / "earlier_attempts.json"

    @property
    def every_attempt(self) -> Path:
        """Every job that trained the run, to the latest checkpoint or the export."""
        return self.directory / "attempts.json"

    def best(self, step: int) -> Path:
        """The weights of the dev evaluation at `step`, kept while a checkpoint names it."""
        return self.directory / f"best-{step}.pt"

    def load(self, device: torch.device, set_broken_aside: bool = True) -> tuple[Path, dict] | None:
        """The latest checkpoint that loads and its path; None without one.

        One that does not load is moved aside (by the process that writes the checkpoints:
        `set_broken_aside`) with a warning, and the one before it is tried."""
        broken = False
        for path in (self.last, self.previous):
            try:
                state = torch.load(path, map_location=device, weights_only=False)
            except FileNotFoundError:
                continue  # none yet, or set aside meanwhile by the writing process
            except _UNLOADABLE as err:
                if not _broken(err):
                    raise
                broken = True
                moved = f"; moved it to {set_aside(path)}" if set_broken_aside else ""
                why = str(err).split(". ")[0]
                log.warning(
                    "%s does not load (%s): the file is truncated or corrupt%s", path, why, moved
                )
                continue
            if broken:
                log.warning("resuming from the checkpoint before it, %s", path)
            self._kept_best = state["best"]["step"]
            return path, state
        if broken:
            log.warning("no checkpoint of %s loads: training starts over at step 0", self.directory)
        return None

    def latest_step(self) -> tuple[Path, int] | None:
        """The checkpoint a rerun resumes from and its step (None without one), read without
        loading its tensors (memory-mapped) and without moving a broken one aside."""
        for path in (self.last, self.previous):
            try:
                state = torch.load(path, map_location="cpu", weights_only=False, mmap=True)
            except FileNotFoundError:
                continue
            except _UNLOADABLE as err:
                if not _broken(err):
                    raise
                continue
            return path, state["step"]
        return None

    def save(self, state: dict) -> None:
        """Write `state` as the latest checkpoint, keeping the one it replaces as `previous`,
        then remove the best weights of every step but those the two name."""
        if self.last.exists():
            os.replace(self.last, self.previous)
        save(state, self.last)
        self.record_every_attempt(state["fingerprint"], state["step"], state["attempts"])
        # Only now may older best weights go: these checkpoints name the current best.
        self.drop_best({state["best"]["step"], self._kept_best})
        self._kept_best = state["best"]["step"]

    def finish(self, fingerprint: str, step: int, attempts: list[dict]) -> None:
        """After the export: only the latest checkpoint and its best weights stay, and the
        record of every job that trained the run (`attempts`, the export's job's to now)."""
        self.previous.unlink(missing_ok=True)
        self.drop_best({self._kept_best})
        self.record_every_attempt(fingerprint, step, attempts, exported=True)

    def record_every_attempt(
        self, fingerprint: str, step: int, attempts: list[dict], exported: bool = False
    ) -> None:
        """Record the jobs that trained the run of `fingerprint` to `step` (`attempts.json`),
        and whether the model is exported."""
        record = {"fingerprint": fingerprint, "step": step, "exported": exported}
        write_json(self.every_attempt, {**record, "attempts": attempts})

    def recorded_attempts(self, fingerprints: Collection[str]) -> tuple[int, list[dict]] | None:
        """The step and the jobs of `record_every_attempt`, if they are those of a run of
        `fingerprints` (None without a record, or one of other settings or inputs)."""
        try:
            record = json.loads(self.every_attempt.read_text())
        except (OSError, ValueError):
            return None
        if record.get("fingerprint") not in fingerprints:
            return None
        return record["step"], record["attempts"]

    def record_attempts(self, attempts: list[dict]) -> None:
        """Record the jobs that trained the run before this one (`earlier_attempts.json`)."""
        write_json(self.attempts, attempts)

    def save_best(self, step: int, model: nn.Module, mlm_head: nn.Module | None) -> None:
        """Keep the weights of the dev evaluation at `step`: the encoder's, and the MLM head's
        if it has one (exported with the model for the runs that start from it)."""
        weights = {"step": step, "model": model.state_dict()}
        if mlm_head is not None:
            weights["mlm_head"] = mlm_head.state_dict()
        save(weights, self.best(step))

    def load_best(self, step: int, device: torch.device) -> dict:
        """The weights `save_best` kept at `step`."""
        return torch.load(self.best(step), map_location=device)

    def discard(self) -> None:
        """Remove the checkpoints and all best weights (a run starting afresh)."""
        remove_record(self.directory)
        self.every_attempt.unlink(missing_ok=True)
        self.last.unlink(missing_ok=True)
        self.previous.unlink(missing_ok=True)
        self.drop_best(())
        self._kept_best = None

    def _best_steps(self) -> dict[int, Path]:
        return {int(path.stem.split("-")[1]): path for path in self.directory.glob("best-*.pt")}

    def drop_best(self, keep: Collection[int | None]) -> None:
        """Remove the best weights of every step but those of `keep`."""
        for step, path in self._best_steps().items():
            if step not in keep:
                path.unlink()

    def resumed(self, step: int, best: int | None) -> None:
        """After a resume at `step`: remove the best weights that the killed run wrote after
        it, a future that the run replays (and, on a non-deterministic GPU, may not repeat),
        and check those of the `best` step that the checkpoint names (`check_best`)."""
        for later, path in self._best_steps().items():
            if later > step:
                path.unlink()
        self.check_best(best)

    def check_best(self, step: int | None) -> None:
        """Stop when the record names a best `step` whose weights are not there: exporting
        the final weights under the best step's record would mislabel the model."""
        if not step:  # None or 0: the starting weights, which are the model's own
            return
        path = self.best(step)
        if not path.exists():
            raise TrainingError(
                f"{self.last} records the best dev P@1 at step {step}, but its weights "
                f"{path} are gone: delete {self.directory} to train this run afresh"
            )
        saved_at = torch.load(path, map_location="cpu")["step"]
        if saved_at != step:
            raise TrainingError(
                f"{path} holds the weights of step {saved_at}, not {step} as the record says: "
                f"delete {self.directory} to train this run afresh"
            )


def save(state: dict, path: Path) -> None:
    """torch.save under a temporary name. Through a Python file object, so that a failed
    write (a full disk) surfaces as the OSError that atomic_path names the file in, not as
    torch's RuntimeError about a zip position."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        try:
            torch.save(state, f)
        except RuntimeError as err:
            if isinstance(err.__context__, OSError):
                raise err.__context__ from err
            raise


def fingerprints(
    settings: TrainSettings, model_spec: ModelSpec, inputs: Iterable[Path], world_size: int
) -> tuple[str, str]:
    """What a checkpoint must match to be resumed: the run's identity (`identity`: every
    setting that can change a number, as its job passes it), the model entry, the number of
    processes, and the content of the `inputs` (the training and dev files) and of the
    directories the model starts from. The first is the one a checkpoint now records; the
    second, what a checkpoint written before identities carried (every field of the settings
    then known), which is resumed all the same.

    Content, not modification times: `snakemake --touch` (what docs/recovery.md advises
    after copying a results tree) or an input rebuilt to the same bytes keeps a run's
    checkpoint; a model it starts from that was trained again does not."""
    paths = list(inputs)
    # One root per directory: a pretrained model's tokenizer directory is often the
    # model's own, however the command line spells the two. Keyed by the resolved path,
    # hashed under the given one, so that a results tree moved elsewhere keeps its runs.
    roots: dict[Path, Path] = {}
    for root in (model_spec.tokenizer_dir, model_spec.pretrained_dir):
        if root is not None:
            roots.setdefault(Path(root).resolve(), Path(root))
    for root in roots.values():
        paths += [p for p in root.rglob("*") if p.is_file()]
    files = {str(p): sha256_file(p) for p in paths}
    every_field = dataclasses.asdict(settings)
    for key in ADDED_SINCE_FIELD_HASH:
        value = every_field.pop(key)
        if key not in REPORTING and value != LEFT_OUT_AT_DEFAULT[key]:
            every_field[key] = value  # trained otherwise than any checkpoint from before
    return tuple(
        _digest([fields, dataclasses.asdict(model_spec), files, world_size])
        for fields in ({"identity": identity(settings)}, every_field)
    )


def _digest(parts: list) -> str:
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def random_state(device: torch.device) -> dict:
    """This process's random state, as a checkpoint keeps it: the CPU's, and its own GPU's
    (only that one: touching the node's other GPUs would open a context on each)."""
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
    }


def set_random_state(rng: dict, device: torch.device) -> None:
    """Continue from the random state `random_state` kept."""
    torch.set_rng_state(rng["torch"].cpu())
    cuda = rng["cuda"]
    if cuda is not None and device.type == "cuda":
        if isinstance(cuda, list):  # a checkpoint written before: every visible GPU's state
            cuda = cuda[device.index or 0]
        torch.cuda.set_rng_state(cuda.cpu(), device)


class Attempts:
    """The jobs that trained the run, for what it cost: those before this one, to their last
    checkpoint (`earlier`, from the checkpoint this one resumed), and this one since it
    started (its clocks: set up, trained and evaluated)."""

    def __init__(self) -> None:
        self._clocks = (time.perf_counter(), time.process_time())
        self.earlier: list[dict] = []
        self._resumed_at = 0
        # What this job trains on (`xlsent.devices`), set once its device is known: a run
        # resumed on other hardware keeps each job's, so its record names both.
        self.machine: dict = {}

    def resumed(self, state: dict) -> None:
        """Continue the record of the checkpoint `state` that this job resumed."""
        # Checkpoints written before jobs recorded their time have none to add.
        self.earlier, self._resumed_at = state.get("attempts", []), state["step"]

    def lost(self, attempts: list[dict]) -> None:
        """Count the jobs of `attempts` as the earlier ones: those recorded beside a newer
        checkpoint that broke, whose steps past the one resumed (or all) are lost, not their
        time."""
        self.earlier = attempts

    def until(self, step: int) -> list[dict]:
        """Every job's work, this one's to `step`: the steps it trained, its wall and CPU
        seconds, and what it trained on (`machine`; what a checkpoint at `step` keeps)."""
        wall, cpu = self._clocks
        return [
            *self.earlier,
            {
                "steps": [self._resumed_at, step],
                "seconds": round(time.perf_counter() - wall, 1),
                "cpu_seconds": round(time.process_time() - cpu, 1),
                **self.machine,
            },
        ]
