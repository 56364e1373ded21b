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
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Collection
from pathlib import Path

import torch

from xlsent.errors import XlsentError
from xlsent.io import atomic_path, write_json
from xlsent.readback import set_aside

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

    def save(self, state: dict) -> None:
        """Write `state` as the latest checkpoint, keeping the one it replaces as `previous`,
        then remove the best weights of every step but those the two name."""
        if self.last.exists():
            os.replace(self.last, self.previous)
        save(state, self.last)
        # Only now may older best weights go: these checkpoints name the current best.
        self.drop_best({state["best"]["step"], self._kept_best})
        self._kept_best = state["best"]["step"]

    def finish(self) -> None:
        """After the export: only the latest checkpoint and its best weights stay."""
        self.previous.unlink(missing_ok=True)
        self.drop_best({self._kept_best})

    def record_attempts(self, attempts: list[dict]) -> None:
        """Record the jobs that trained the run before this one (`earlier_attempts.json`)."""
        write_json(self.attempts, attempts)

    def save_best(self, weights: dict, step: int) -> None:
        """Keep `weights`, the model's at the dev evaluation of `step`."""
        save(weights, self.best(step))

    def load_best(self, step: int, device: torch.device) -> dict:
        """The weights `save_best` kept at `step`."""
        return torch.load(self.best(step), map_location=device)

    def discard(self) -> None:
        """Remove the checkpoints and all best weights (a run starting afresh)."""
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

    def drop_best_after(self, step: int) -> None:
        """Remove the best weights of the steps after `step`: a future that a run resumed at
        `step` replays (and, on a non-deterministic GPU, may not repeat)."""
        for later, path in self._best_steps().items():
            if later > step:
                path.unlink()

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
