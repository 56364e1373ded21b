"""A run's checkpoint directory: the full state to resume from, and the best weights.

`last.pt` is the full training state (what goes into it, and when, is the trainer's:
`xlsent.train.loop`); `best-{step}.pt` the weights of a dev evaluation that set a new best,
which the export loads. One file per such step, kept while a checkpoint names it: a run
killed after such an evaluation and before its next checkpoint resumes from a checkpoint
that names an earlier best, whose weights must still be there (the replay may not beat it
again on a GPU).
"""

from __future__ import annotations

from pathlib import Path

import torch

from xlsent.errors import XlsentError
from xlsent.io import atomic_path


class TrainingError(XlsentError):
    """A training state that cannot be trusted; the message names the files and the fix."""


class Checkpoints:
    """The files of one run's checkpoint `directory`."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    @property
    def last(self) -> Path:
        """The full state of the latest checkpoint."""
        return self.directory / "last.pt"

    def best(self, step: int) -> Path:
        """The weights of the dev evaluation at `step`, kept while a checkpoint names it."""
        return self.directory / f"best-{step}.pt"

    def load(self, device: torch.device) -> dict | None:
        """The latest checkpoint's state, None without one."""
        if not self.last.exists():
            return None
        return torch.load(self.last, map_location=device, weights_only=False)

    def save(self, state: dict) -> None:
        """Write `state` as the latest checkpoint, then remove the best weights of every step
        but the best one it names (`state["best"]["step"]`)."""
        save(state, self.last)
        # Only now may older best weights go: this checkpoint names the current best.
        self.drop_best(state["best"]["step"])

    def save_best(self, weights: dict, step: int) -> None:
        """Keep `weights`, the model's at the dev evaluation of `step`."""
        save(weights, self.best(step))

    def load_best(self, step: int, device: torch.device) -> dict:
        """The weights `save_best` kept at `step`."""
        return torch.load(self.best(step), map_location=device)

    def discard(self) -> None:
        """Remove the latest checkpoint and all best weights (a run starting afresh)."""
        self.last.unlink()
        self.drop_best(None)

    def drop_best(self, keep: int | None) -> None:
        """Remove the best weights of every step but `keep` (stale, or from a lost future)."""
        for path in self.directory.glob("best-*.pt"):
            if path != (None if keep is None else self.best(keep)):
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
