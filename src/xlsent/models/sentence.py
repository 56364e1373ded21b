"""How a model turns a sentence into its vector: its pooling, and the text put before it.

Both belong to the model (the config's `models.<name>.pooling` and `.prefix`), because a
pretrained encoder was trained with them: multilingual-e5 reads "query: " + sentence and
averages its last hidden states, XLM-R-style runs here read the sentence alone and take the
CLS state. Every site that tokenizes a sentence or pools a vector asks this module, so that
training (the subwords, TR, dev P@1), every evaluation, the figures and the export agree:

- `pool`: the sentence vector from (last_hidden_state, attention_mask), `cls` or `mean`;
- `prefix_of`: the text put before a sentence of a language;
- `SentenceSettings`: both, recorded in a saved model's `config.json` (`xlsent_pooling`,
  `xlsent_prefix`) and read back from it by every loader; a model without them (a hub
  checkpoint, a run saved before these keys) pools CLS and has no prefix;
- `autocast`: the precision an evaluation encodes in (`evaluate.precision`), the encode jobs'
  and dev P@1's alike, whatever the device.

Imports no torch: the tokenize stage's jobs run where only the corpus packages are.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

POOLINGS = ("cls", "mean")
# How an evaluation encodes (`evaluate.precision`): fp32, the same vectors on a CPU and a GPU
# up to the order of additions; bf16 autocast, faster on a GPU, its rounding in the vectors.
PRECISIONS = ("fp32", "bf16")
# The program's default where a job's settings leave it out: the schema's (test_settings).
DEFAULT_PRECISION = "fp32"
# A model's prefix as the config gives it: one text for every language, or {en, xx}.
Prefix = str | Mapping[str, str]


def pool(
    last_hidden_state: torch.Tensor, attention_mask: torch.Tensor, pooling: str
) -> torch.Tensor:
    """Sentence vectors (B×d) of a padded batch's last hidden states (B×T×d).

    `cls`: the first token's state (`cls_before_pooler`, without BERT's dense + tanh);
    `mean`: the mean over the tokens of `attention_mask`, special tokens and the prefix
    included (as multilingual-e5 and sentence-transformers' mean pooling average).
    """
    if pooling == "cls":
        return last_hidden_state[:, 0]
    if pooling == "mean":
        mask = attention_mask[..., None].to(last_hidden_state.dtype)
        return (last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1)
    raise ValueError(f"pooling is one of {', '.join(POOLINGS)}, not {pooling!r}")


def autocast(device_type: str, precision: str) -> AbstractContextManager:
    """The context an encoder's forward pass runs in to encode at `precision` on a device
    of `device_type` ("cpu", "cuda"): torch's bf16 autocast for bf16 (on a CPU too: the same
    products in bf16), none for fp32. Training's own precision (`train.precision`) does not
    enter: the vectors an evaluation compares depend on this setting alone."""
    import torch

    if precision not in PRECISIONS:
        raise ValueError(f"precision is one of {', '.join(PRECISIONS)}, not {precision!r}")
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=precision == "bf16")


def prefix_of(prefix: Prefix, lang: str | None) -> str:
    """The text put before a sentence in `lang`: the `en` prefix for English, the `xx` one for
    any other language. None (a caller that does not know the language) reads as English,
    as an encoder with language embeddings does."""
    if isinstance(prefix, str):
        return prefix
    return prefix["en" if lang in (None, "en") else "xx"]


@dataclass(frozen=True)
class SentenceSettings:
    """A model's pooling and prefix (the config's model entry; the module docstring)."""

    pooling: str = "cls"
    prefix: Prefix = ""

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling is one of {', '.join(POOLINGS)}, not {self.pooling!r}")
        if not isinstance(self.prefix, str) and set(self.prefix) != {"en", "xx"}:
            raise ValueError(f"a prefix is a text or {{en: text, xx: text}}, not {self.prefix!r}")

    def prefix_of(self, lang: str | None) -> str:
        """The text put before a sentence in `lang` (`prefix_of`)."""
        return prefix_of(self.prefix, lang)

    @classmethod
    def of_entry(cls, entry: Mapping[str, Any]) -> SentenceSettings:
        """The settings of a config's model entry (the trainer's `--model` JSON)."""
        return cls(entry.get("pooling", "cls"), entry.get("prefix", ""))

    @classmethod
    def read(cls, config: object) -> SentenceSettings:
        """The settings a model's (Hugging Face) config records; cls and no prefix if none."""
        return cls(getattr(config, "xlsent_pooling", "cls"), getattr(config, "xlsent_prefix", ""))

    def record(self, config: object) -> None:
        """Write the settings into a model's config, which its `config.json` then carries."""
        config.xlsent_pooling = self.pooling
        config.xlsent_prefix = self.prefix if isinstance(self.prefix, str) else dict(self.prefix)
