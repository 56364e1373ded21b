"""What a run optimises, per micro-batch: the method's losses on one shared-weight encoder.

- `tr`: L = L_TR (the spine's dual encoder).
- `wacse`: L = α·L_TR + β·L_AWP + γ·L_WTR (WACSE eq. 11; `wacse_weights` = (α, β, γ),
  default (0.8, 0.1, 0.1)); a zero weight skips its objective (TR+AWP, TR+WTR ablations).
- `dap`: L = L_TR + w·L_RTL (DAP eq. 7 with the released code's weight, `rtl_weight` 0.1).

A micro-batch of N pairs is encoded as 2N sentences in one pass (the N non-English sides,
then their N English translations); TR uses their sentence vectors, WTR the same pass's word
vectors, RTL the non-English token states, and AWP one more pass over masked copies.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch
from torch import nn

from xlsent.losses.awp import aligned_word_prediction_loss, masked_copies
from xlsent.losses.rtl import representation_translation_loss
from xlsent.losses.tr import Gather, translation_ranking_loss
from xlsent.losses.wtr import word_translation_ranking_loss, word_vectors
from xlsent.models.mlm_head import mlm_head
from xlsent.models.rtl_head import RTLHead
from xlsent.ragged import Ragged, row_of_each
from xlsent.train.data import Pairs, WordAligned, collate, word_pooling

METHODS = ("tr", "wacse", "dap")


@dataclass(frozen=True)
class Tokens:
    cls: int
    sep: int
    pad: int
    mask: int


@dataclass
class Batch:
    """Tensors of one micro-batch (fields a method does not need are None)."""

    ids: torch.Tensor  # 2N×T: non-English sides, then English
    mask: torch.Tensor
    types: torch.Tensor | None  # language ids, for encoders with language embeddings
    pool: torch.Tensor | None = None  # WTR: 2N×W×T word-averaging weights
    valid: torch.Tensor | None = None  # 2N×W
    links: torch.Tensor | None = None  # L×3: pair, xx word, en word
    masked_ids: torch.Tensor | None = None  # AWP: masked copies, their mask and types
    masked_mask: torch.Tensor | None = None
    masked_types: torch.Tensor | None = None
    predict: torch.Tensor | None = None  # P×2: copy, position
    targets: torch.Tensor | None = None
    weights: torch.Tensor | None = None

    @property
    def n_pairs(self) -> int:
        return len(self.ids) // 2

    def _map(self, fn) -> Batch:
        return Batch(
            **{
                f.name: None if getattr(self, f.name) is None else fn(getattr(self, f.name))
                for f in fields(self)
            }
        )

    def to(self, device: torch.device) -> Batch:
        return self._map(lambda t: t.to(device, non_blocking=True))

    def pin(self) -> Batch:
        return self._map(lambda t: t.pin_memory())


class Objectives(nn.Module):
    """The encoder and the heads its method trains; `forward(batch)` is the loss."""

    def __init__(
        self,
        encoder: nn.Module,
        settings: object,
        tokens: Tokens,
        language_ids: dict[str, int] | None = None,
        pretrained_dir: str | None = None,
        gather: Gather | None = None,
    ):
        super().__init__()
        if settings.method not in METHODS:
            raise ValueError(f"unknown method {settings.method!r}; methods: {', '.join(METHODS)}")
        self.encoder = encoder
        self.settings = settings
        self.tokens = tokens
        self.language_ids = language_ids
        self.gather = gather
        alpha, beta, gamma = settings.wacse_weights
        self.weights = {"tr": 1.0}
        if settings.method == "wacse":
            self.weights = {"tr": alpha, "awp": beta, "wtr": gamma}
        elif settings.method == "dap":
            self.weights = {"tr": 1.0, "rtl": settings.rtl_weight}
        self.mlm = (
            mlm_head(encoder.config, encoder.get_input_embeddings(), pretrained_dir)
            if self.weights.get("awp")
            else None
        )
        self.rtl = (
            RTLHead(encoder, settings.rtl_layers, tokens.mask, pretrained_dir)
            if settings.method == "dap"
            else None
        )
        # Parameters no objective touches must not ask DDP for gradients.
        if settings.pooler != "mlp" and getattr(encoder, "pooler", None) is not None:
            encoder.pooler.requires_grad_(False)

    @property
    def needs_words(self) -> bool:
        return bool(self.weights.get("awp") or self.weights.get("wtr"))

    # -- batches ----------------------------------------------------------------------------------
    def batch(
        self,
        pairs: Pairs,
        index: np.ndarray,
        words: WordAligned | None = None,
        rng: np.random.Generator | None = None,
    ) -> Batch:
        """The tensors of the pairs `index` (on CPU); `rng` draws AWP's masked words."""
        rows = Ragged.concat([pairs.xx.take(index), pairs.en.take(index)])
        t = self.tokens
        ids, mask = collate(rows, t.cls, t.sep, t.pad)
        types = None
        if self.language_ids is not None:
            codes = [self.language_ids[pairs.langs[i]] for i in pairs.lang[index]]
            sentence_types = torch.tensor(codes + [self.language_ids["en"]] * len(index))
            types = sentence_types[:, None].expand_as(ids).contiguous()
        batch = Batch(ids, mask, types)
        if not self.needs_words:
            return batch
        if words is None:
            raise ValueError(f"the {self.settings.method} objectives need word alignments")
        starts = Ragged.concat([words.xx_starts.take(index), words.en_starts.take(index)])
        ends = Ragged.concat([words.xx_ends.take(index), words.en_ends.take(index)])
        links = words.links.take(index)
        if self.weights.get("wtr"):
            batch.pool, batch.valid = word_pooling(starts, ends, ids.shape[1])
            pair = row_of_each(links.lengths)
            batch.links = torch.from_numpy(
                np.column_stack([pair, links.values.reshape(-1, 2)]).astype(np.int64)
            )
        if self.weights.get("awp"):
            copies = masked_copies(
                rows, starts, ends, links, t.mask, self.settings.awp_samples, rng
            )
            if len(copies.rows):
                batch.masked_ids, batch.masked_mask = collate(copies.rows, t.cls, t.sep, t.pad)
                if types is not None:
                    batch.masked_types = (
                        sentence_types[copies.sentence][:, None]
                        .expand_as(batch.masked_ids)
                        .contiguous()
                    )
                # +1: the collated rows start with CLS.
                batch.predict = torch.from_numpy(np.stack([copies.copy, copies.positions + 1], 1))
                batch.targets = torch.from_numpy(copies.targets)
                batch.weights = torch.from_numpy(copies.weights)
        return batch

    # -- losses -----------------------------------------------------------------------------------
    def encode(
        self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor | None
    ) -> torch.Tensor:
        """Last hidden states of a padded batch, computed in `length_groups` passes over
        length-sorted groups of rows, each padded only to its own longest row. Attention never
        sees padding, so the states are those of one pass; the saving is the padding."""
        groups = self.settings.length_groups
        if groups <= 1:
            return self.encoder(
                input_ids=ids, attention_mask=mask, token_type_ids=types
            ).last_hidden_state
        lengths = mask.sum(1)
        hidden = None
        for part in torch.argsort(lengths).chunk(groups):
            width = int(lengths[part].max())
            states = self.encoder(
                input_ids=ids[part, :width],
                attention_mask=mask[part, :width],
                token_type_ids=None if types is None else types[part, :width],
            ).last_hidden_state
            if hidden is None:
                hidden = states.new_zeros(*ids.shape, states.shape[-1])
            hidden[part, :width] = states
        return hidden

    def forward(self, batch: Batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        s, n = self.settings, batch.n_pairs
        hidden = self.encode(batch.ids, batch.mask, batch.types)
        # An MLP pooler (dense + tanh) over CLS during training only; evaluation is raw CLS.
        vectors = self.encoder.pooler(hidden) if s.pooler == "mlp" else hidden[:, 0]
        parts = {
            "tr": translation_ranking_loss(
                vectors[:n], vectors[n:], s.temperature, s.direction, self.gather
            )
        }
        if self.weights.get("wtr"):
            words = word_vectors(hidden, batch.pool)
            parts["wtr"] = word_translation_ranking_loss(
                words[:n],
                batch.valid[:n],
                words[n:],
                batch.valid[n:],
                batch.links,
                s.wtr_temperature,
            )
        if self.mlm is not None:
            parts["awp"] = self._awp(batch, hidden)
        if self.rtl is not None:
            parts["rtl"] = self._rtl(batch, hidden)
        loss = sum(self.weights[name] * value for name, value in parts.items())
        return loss, parts

    def _awp(self, batch: Batch, hidden: torch.Tensor) -> torch.Tensor:
        if batch.predict is None:  # no aligned word in this micro-batch
            return hidden.sum() * 0.0
        masked = self.encode(batch.masked_ids, batch.masked_mask, batch.masked_types)
        states = masked[batch.predict[:, 0], batch.predict[:, 1]]
        return aligned_word_prediction_loss(
            self.mlm(states), batch.targets, batch.weights, batch.n_pairs
        )

    def _rtl(self, batch: Batch, hidden: torch.Tensor) -> torch.Tensor:
        source, source_mask, target_mask, targets = rtl_inputs(batch, hidden, self.tokens.sep)
        logits = self.rtl(source, source_mask, target_mask)
        sentence = target_mask.nonzero()[:, 0]
        return representation_translation_loss(logits, targets, sentence, batch.n_pairs)


def rtl_inputs(
    batch: Batch, hidden: torch.Tensor, sep_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """What RTL reads and predicts: the non-English token states after CLS (DAP's f*(x)) and
    their mask, and the English tokens to reconstruct (not CLS, not </s>, not padding)."""
    n = batch.n_pairs
    english = batch.ids[n:, 1:]
    target_mask = batch.mask[n:, 1:].bool() & (english != sep_id)
    return hidden[:n, 1:], batch.mask[:n, 1:], target_mask, english[target_mask]
