"""Evaluation: the benchmark tasks, built on the similarity search of `xlsent.search`."""

from __future__ import annotations

from dataclasses import dataclass

from xlsent.models.sentence import DEFAULT_PRECISION, PRECISIONS

# How a line of LASER's Tatoeba files is read (`evaluate.tatoeba.text`): as it stands, or as
# DAP's code writes its test pairs (`xlsent.evaluate.tatoeba.read_pairs`). Here, where the
# commands' parsers read it without importing the evaluation.
TATOEBA_TEXTS = ("laser", "dap")


@dataclass(frozen=True)
class EncodingSettings:
    """How an evaluation encodes sentences: the scalar keys of the `evaluate` block, as
    `xlsent.config.encoding_settings` resolves them for a run (`max_length` null there is
    the run's training length). `device`: auto (CUDA if present), cpu, cuda or cuda:N;
    `precision`: fp32 or bf16 (`xlsent.models.sentence.autocast`), left out of a job's
    settings at its default, fp32 (`LEFT_OUT_AT_DEFAULT`), so that no vectors encoded before
    the setting existed are encoded again."""

    max_length: int
    batch_size: int
    device: str
    precision: str = DEFAULT_PRECISION

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"evaluate.precision is {self.precision!r}, not one of {', '.join(PRECISIONS)}"
            )
