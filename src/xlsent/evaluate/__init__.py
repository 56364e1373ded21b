"""Evaluation: similarity search and the benchmark tasks built on it."""

from __future__ import annotations

from dataclasses import dataclass

# How a line of LASER's Tatoeba files is read (`evaluate.tatoeba.text`): as it stands, or as
# DAP's code writes its test pairs (`xlsent.evaluate.tatoeba.read_pairs`). Here, where the
# commands' parsers read it without importing the evaluation.
TATOEBA_TEXTS = ("laser", "dap")


@dataclass(frozen=True)
class EncodingSettings:
    """How an evaluation encodes sentences: the scalar keys of the `evaluate` block, as
    `xlsent.config.encoding_settings` resolves them for a run (`max_length` null there is
    the run's training length). `device`: auto (CUDA if present), cpu, cuda or cuda:N."""

    max_length: int
    batch_size: int
    device: str
