"""The extraction module of dual-pivot transfer: a head over a frozen encoder.

Tien and Steinert-Threlkeld (2022), "Bilingual alignment transfers to multilingual alignment
for unsupervised parallel text mining", arXiv:2104.07642, §3.1: the hidden states of every
layer of a frozen XLM-R (the embeddings and each layer: l + 1 states per token) are mixed
with softmax-normalised weights (ELMo-style), pooled over the tokens, and mapped by a linear
map d → d; the sentence vector is then normalised to unit length.

Pooling (`pooling`): `sum`, the paper's; `mean`, the mean over the tokens; `mean_ln`, the
authors' code (cctien/bimultialign): dropout and a LayerNorm on every mixed token vector, then
the mean (special tokens included).

Caching: the encoder is frozen, so what the head reads can be computed once per sentence.
With `sum` and `mean` pooling commutes with the layer mix (both are linear in the states):
Σ_l w_l · pool(H_l) = pool(Σ_l w_l H_l), so a sentence is l + 1 pooled vectors (`pooled`),
and training never runs the encoder again. `mean_ln` puts a per-token LayerNorm between the
mix and the pooling: it does not commute, so every step runs the frozen encoder over its
batch and the head over all token states (`DualPivotHead.forward_tokens`).

The head's pooling over layers and tokens is the paper's, not the model's `pooling`
(`xlsent.models.sentence`); the model's prefix is applied as everywhere: the pivot's subwords
carry it (the tokenize stage), and the saved head records it for encoding raw sentences.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from xlsent.models.encoder import SentenceBatches, length_sorted, pad
from xlsent.models.sentence import DEFAULT_PRECISION, Prefix

POOLINGS = ("sum", "mean", "mean_ln")
HEAD_FILE = "dualpivot.json"
WEIGHTS_FILE = "dualpivot.pt"


@dataclass(frozen=True)
class HeadConfig:
    """The head's shape: `states` hidden states per token (layers + 1), width `hidden`.

    `layer_weights` False keeps the mix uniform (Table 4's "linear map only"), `linear_map`
    False leaves the mixed vector unmapped ("layer weights only"); `layer` (an index of the
    states) replaces the mix by that one state: the single-layer bag-of-embeddings baseline.
    """

    states: int
    hidden: int
    pooling: str = "sum"
    layer_weights: bool = True
    linear_map: bool = True
    dropout: float = 0.1
    layer: int | None = None

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling is one of {', '.join(POOLINGS)}, not {self.pooling!r}")

    @property
    def commutes(self) -> bool:
        """Whether the pooling commutes with the layer mix (pooled states can be cached)."""
        return self.pooling != "mean_ln"


class DualPivotHead(nn.Module):
    """Layer mix → pooling → linear map → unit length (the module docstring)."""

    def __init__(self, cfg: HeadConfig):
        super().__init__()
        self.cfg = cfg
        # Zeros: the softmax starts uniform, as ELMo's and the authors' mix do.
        self.layer_logits = nn.Parameter(
            torch.zeros(cfg.states), requires_grad=cfg.layer_weights and cfg.layer is None
        )
        self.norm = nn.LayerNorm(cfg.hidden) if cfg.pooling == "mean_ln" else None
        self.linear = nn.Linear(cfg.hidden, cfg.hidden) if cfg.linear_map else None
        self.dropout = nn.Dropout(cfg.dropout)

    def weights(self) -> torch.Tensor:
        """The mix's weights over the states (one-hot for a single layer)."""
        if self.cfg.layer is not None:
            return F.one_hot(torch.tensor(self.cfg.layer), self.cfg.states).float()
        return self.layer_logits.softmax(-1)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        """Unit sentence vectors (B×d) from each sentence's pooled states (B×states×d)."""
        if not self.cfg.commutes:
            raise ValueError("mean_ln pooling reads token states: use forward_tokens")
        mixed = torch.einsum("l,bld->bd", self.weights().to(pooled), pooled)
        return self._map(mixed)

    def forward_tokens(self, states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Unit sentence vectors (B×d) from all token states (B×states×T×d) and the mask
        (B×T): the path of every pooling, the only one of `mean_ln`."""
        mixed = torch.einsum("l,bltd->btd", self.weights().to(states), states)
        if self.norm is not None:
            mixed = self.norm(self.dropout(mixed))
        return self._map(pool(mixed[:, None], mask, self.cfg.pooling)[:, 0])

    def _map(self, vectors: torch.Tensor) -> torch.Tensor:
        if self.linear is not None:
            vectors = self.dropout(self.linear(vectors))
        return F.normalize(vectors, dim=-1)


def pool(states: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Pool token states (B×L×T×d) over the tokens of `mask` (B×T): B×L×d."""
    m = mask[:, None, :, None].to(states.dtype)
    total = (states * m).sum(2)
    if pooling == "sum":
        return total
    return total / m.sum(2).clamp(min=1)


@torch.inference_mode()
def hidden_states(
    encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """Every hidden state of a frozen encoder (B×(layers+1)×T×d), embeddings first."""
    out = encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
    return torch.stack(out.hidden_states, dim=1)


@torch.inference_mode()
def pooled_states(
    encoder: nn.Module,
    rows: Sequence[Sequence[int]],
    special: tuple[int, int, int],
    pooling: str,
    batch_size: int = 64,
) -> torch.Tensor:
    """The pooled states (N×(layers+1)×d, float32, CPU) of sentences given as subword ids
    without special tokens; `special` = (cls, sep, pad) ids, added as the encoder saw them."""
    cls_id, sep_id, pad_id = special
    device = next(encoder.parameters()).device
    out = None
    for index in length_sorted([len(row) for row in rows], batch_size):
        ids, mask = pad([[cls_id, *rows[i], sep_id] for i in index], pad_id)
        states = hidden_states(encoder, ids.to(device), mask.to(device))
        pooled = pool(states.float(), mask.to(device), pooling).cpu()
        if out is None:
            out = torch.zeros(len(rows), *pooled.shape[1:])
        out[torch.from_numpy(index)] = pooled
    return out if out is not None else torch.zeros(0, 0, 0)


ENCODER_DIR = "encoder"
# What of a frozen encoder's directory the exported model needs (weights and their config);
# the tokenizer is written from the tokenize stage's.
ENCODER_FILES = ("config.json", "model.safetensors", "pytorch_model.bin")


def save(
    head: DualPivotHead,
    encoder_dir: str | Path,
    tokenizer_dir: str | Path,
    out: Path,
    prefix: Prefix = "",
) -> None:
    """Write a self-contained model: the head with the model's `prefix` (the run's model
    entry, which the encoder's own config need not record), and the frozen encoder with its
    tokenizer under `encoder/` (what `DualPivotEncoder.load` reads).

    The encoder's weight files are hard links where the file system allows (they never
    change: the encoder is frozen), so a run over XLM-R large costs no second copy of it.
    """
    from transformers import AutoTokenizer

    from xlsent.models.tokenizer import drop_loading_record

    out.mkdir(parents=True, exist_ok=True)
    (out / ENCODER_DIR).mkdir()
    for name in ENCODER_FILES:
        source = Path(encoder_dir) / name
        if source.is_file():
            try:
                os.link(source, out / ENCODER_DIR / name)
            except OSError:  # another file system, or one without hard links
                shutil.copy2(source, out / ENCODER_DIR / name)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(out / ENCODER_DIR)
    drop_loading_record(out / ENCODER_DIR)
    record = {"head": asdict(head.cfg), "prefix": prefix}
    (out / HEAD_FILE).write_text(json.dumps(record, indent=2) + "\n")
    torch.save(head.state_dict(), out / WEIGHTS_FILE)


def is_dualpivot(model_dir: str | Path) -> bool:
    """Whether `model_dir` holds a dual-pivot model (a head over a frozen encoder)."""
    return (Path(model_dir) / HEAD_FILE).is_file()


class DualPivotEncoder(SentenceBatches):
    """Encode raw sentences, each after the model's prefix, with a frozen encoder and a
    trained head (Tatoeba's interface: `encode(texts, lang)` → unit vectors)."""

    def __init__(
        self,
        encoder: nn.Module,
        head: DualPivotHead,
        tokenizer_dir: str | Path,
        max_length: int,
        batch_size: int = 64,
        device: str = "cpu",
        prefix: Prefix = "",
        precision: str = DEFAULT_PRECISION,
    ):
        super().__init__(tokenizer_dir, max_length, batch_size, device, prefix, precision)
        self.encoder = encoder.to(device).eval()
        self.head = head.to(device).eval()

    @classmethod
    def load(
        cls,
        model_dir: str | Path,
        max_length: int,
        batch_size: int = 64,
        device: str = "cpu",
        precision: str = DEFAULT_PRECISION,
    ) -> DualPivotEncoder:
        from transformers import AutoModel

        model_dir = Path(model_dir)
        record = json.loads((model_dir / HEAD_FILE).read_text())
        head = DualPivotHead(HeadConfig(**record["head"]))
        head.load_state_dict(torch.load(model_dir / WEIGHTS_FILE, map_location="cpu"))
        encoder = AutoModel.from_pretrained(model_dir / ENCODER_DIR)
        return cls(
            encoder,
            head,
            model_dir / ENCODER_DIR,
            max_length,
            batch_size,
            device,
            record.get("prefix", ""),  # a head saved before prefixes: none
            precision,
        )

    @torch.inference_mode()
    def __call__(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        """Unit vectors of `texts`; `lang` picks the prefix only: one head encodes every
        language."""
        out = np.zeros((len(texts), self.head.cfg.hidden), np.float32)
        for index, ids, mask in self.batches(texts, lang):
            with self.autocast():  # the frozen encoder's; the head reads its states in fp32
                states = hidden_states(self.encoder, ids, mask)
            out[index] = self.head.forward_tokens(states.float(), mask).cpu().numpy()
        return out
