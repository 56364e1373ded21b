"""Where a training's records go while it runs: the live `train_log.jsonl` and, with
`train.tensorboard`, TensorBoard's event files (the curves a user watches during a day-long
run, as the trainers of transformers and sentence-transformers write them).

Both take the same records: each log line (loss, its parts, learning rates, speed) and each
dev evaluation. TensorBoard gets every number of a record as a scalar at its `step`, a
nested one under its path (`dev/kk`, `dev_directions/kk/xx2en`); it needs the `tensorboard`
package (the extra `xlsent[tensorboard]`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


class TrainRecords:
    """The live records of one training (its main process).

    `log_path`: the live log, restarted from `history` (what the checkpoint resumed from
    knows), None for none; `board_dir`: TensorBoard's directory, None for none. A resumed
    run hides the events a killed job wrote after `step` (TensorBoard's `purge_step`), which
    its own steps write again."""

    def __init__(
        self,
        log_path: Path | None,
        board_dir: Path | None,
        history: Sequence[dict],
        step: int,
    ):
        self.log_path = log_path
        if log_path is not None:
            log_path.write_text("".join(json.dumps(entry) + "\n" for entry in history))
        self.board = None if board_dir is None else _summary_writer(board_dir, step + 1)

    def write(self, entry: dict) -> None:
        """Append `entry` (a record with its `step`) to the log and to TensorBoard."""
        if self.log_path is not None:
            with open(self.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")
        if self.board is not None:
            for tag, value in scalars(entry):
                self.board.add_scalar(tag, value, entry["step"])
            self.board.flush()

    def close(self) -> None:
        if self.board is not None:
            self.board.close()


def scalars(record: dict, prefix: str = "") -> Iterator[tuple[str, float]]:
    """Every number of `record` (but its step) with its path: booleans, nulls, lists and
    text are not curves."""
    for key, value in record.items():
        tag = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from scalars(value, f"{tag}/")
        elif isinstance(value, int | float) and not isinstance(value, bool) and tag != "step":
            yield tag, value


def _summary_writer(directory: Path, purge_step: int) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as err:  # torch's message names TensorBoard's version, not the fix
        raise ImportError(
            "train.tensorboard needs the tensorboard package: pip install 'xlsent[tensorboard]' "
            "(or set train.tensorboard: false)"
        ) from err
    return SummaryWriter(log_dir=str(directory), purge_step=purge_step)
