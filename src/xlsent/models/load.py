"""Load any trained sentence encoder of the workflow from its model directory.

Encoder runs (tr, wacse, dap, ...) save a Hugging Face model whose CLS vector is the sentence
vector (`xlsent.models.encoder.TextEncoder`); dual-pivot runs save a head over a frozen
encoder (`xlsent.models.dualpivot.DualPivotEncoder`). Both encode with
`encoder(texts, lang)` → one row per text, so every evaluation reads them alike.
"""

from __future__ import annotations

from pathlib import Path

from xlsent.models.dualpivot import DualPivotEncoder, is_dualpivot
from xlsent.models.encoder import TextEncoder
from xlsent.models.sentence import DEFAULT_PRECISION

# The files of a trained run's model directory that record how it was trained (its settings,
# its best step, its log with the times of every step), which no encoder reads.
TRAINING_RECORDS = ("run.json", "best.json", "train_log.jsonl")


def load_encoder(
    model_dir: str | Path,
    max_length: int,
    batch_size: int,
    device: str = "cpu",
    precision: str = DEFAULT_PRECISION,
) -> TextEncoder | DualPivotEncoder:
    """The encoder saved in `model_dir`, whichever kind of run wrote it, encoding at
    `precision` (`evaluate.precision`)."""
    kind = DualPivotEncoder if is_dualpivot(model_dir) else TextEncoder
    return kind.load(model_dir, max_length, batch_size, device, precision)
