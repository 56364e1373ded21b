"""DAP's representation translation learning (RTL) head g (Li et al. 2023, eq. 4).

    g^[0](h, y) = (h_1^[L], …, h_Sx^[L], [MASK], …, [MASK])      (S_y masks)
    g(h, y)     = softmax(W^T g^[K](… g^[1](g^[0](h, y))))

A stack of K transformer layers initialised from the encoder's last K layers, with its own
copy of the encoder's embeddings and its own MLM head. It reads the non-English sentence's
final token states, CLS excluded, followed by one [MASK] per English token, and predicts the
English tokens at the mask positions. It exists only during training; the saved encoder does
not include it.

g^[0] as DAP's released code computes it (ChillingDream/DAP, core/models.py `cl_forward`):
the [MASK] row is embedded by the head's embedding layer (`decoder.bert.embeddings(
input_ids=masked_tgt_ids)`: word + position + type, LayerNorm, dropout), and the
concatenation [x's states; the masks] passes through that embedding layer once more before
the layers (`decoder(inputs_embeds=...)`: + position + type embeddings, LayerNorm, dropout).
The code lays both sides out at the batch's padded width T with their CLS columns,
[CLS, x, pad… | CLS, masks, pad…], the two CLS columns blocked from attention and never
predicted, and numbers the 2T columns in sequence as the model numbers `inputs_embeds` (BERT
from 0, XLM-R from padding_idx + 1); the masks' own pass numbers them as a sentence with CLS
at 0. We leave the two blocked columns out, which changes nothing else (a column no token
attends to is only a query, and LayerNorm is per token), and give every other column the
code's position (`RTLHead.forward`). Two sentences' positions can outrun a scratch encoder's
table, which the head's copy then extends (`max_length`).

W: the paper's softmax ranges over the whole vocabulary (eq. 4). DAP's released code, given
its file of English token ids (data/gen_en_vocab.py, train.py's `--en_token_ids_file`),
shrinks the head's output layer to the rows of those ids, copies untied from the embeddings,
and maps each target id to its row: RTL only ever predicts English, and most of the cost of
the head is the projection onto the vocabulary. With a `vocabulary` this head does the same
(`train.rtl_vocabulary: english`, the ids of the English training side and `</s>`:
`english_vocabulary`); without one its output layer is the embeddings' (`all`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from xlsent.models.mlm_head import mlm_head, restrict_output


def english_vocabulary(english_ids: np.ndarray, sep: int) -> np.ndarray:
    """The token ids RTL can be asked to predict, sorted: every id on the English side of the
    training pairs (`english_ids`, as training truncates it) and `sep` (</s>, which RTL
    predicts too). DAP's file also holds <s> and <pad>, never targets, and the ids past the
    training truncation: rows that would only add terms to the softmax's denominator."""
    top = max(int(english_ids.max()) if len(english_ids) else 0, sep)
    seen = np.zeros(top + 1, dtype=bool)
    seen[sep] = True
    chunk = 1 << 24  # a paper-scale English side holds ~10^9 ids: index it in bounded pieces
    for start in range(0, len(english_ids), chunk):
        seen[english_ids[start : start + chunk]] = True
    return np.flatnonzero(seen)


def first_position(embeddings: nn.Module) -> int:
    """The position id of a sentence's first token: XLM-R and RoBERTa number real tokens from
    padding_idx + 1 (their embeddings keep a `padding_idx`), BERT from 0."""
    padding = getattr(embeddings, "padding_idx", None)
    return 0 if padding is None else padding + 1


class RTLHead(nn.Module):
    def __init__(
        self,
        encoder: nn.Module,
        layers: int = 2,
        mask_id: int = 0,
        pretrained_dir: str | Path | None = None,
        vocabulary: Sequence[int] | np.ndarray | None = None,
        max_length: int | None = None,
    ):
        """`vocabulary`: the token ids the output layer keeps (None: every id); `max_length`:
        the longest sentence (special tokens included) the head reads a side of, whose
        concatenation's positions its position embeddings must hold (None: the encoder's
        table is long enough)."""
        super().__init__()
        available = len(encoder.encoder.layer)
        if not 1 <= layers <= available:
            raise ValueError(f"the RTL head takes 1 to {available} layers, not {layers}")
        self.mask_id = mask_id
        # Target rows past a sentence's end: never attended to nor predicted. From the config,
        # as BERT's embeddings (multilingual-e5's) keep no `padding_idx`, XLM-R's do.
        self.pad_id = encoder.config.pad_token_id
        self.embeddings = copy.deepcopy(encoder.embeddings)
        self.first = first_position(self.embeddings)
        if max_length is not None:
            self._extend_positions(self.first + 2 * max_length, encoder.config.initializer_range)
        last = encoder.encoder.layer[-layers:]
        self.layers = nn.ModuleList(copy.deepcopy(layer) for layer in last)
        self.lm_head = mlm_head(encoder.config, self.embeddings.word_embeddings, pretrained_dir)
        # Not in the state dict: what the vocabulary is derives from the run's settings and
        # input files, which a checkpoint must match to be resumed
        # (`xlsent.train.checkpoints.fingerprints`).
        kept, row_of = None, None
        if vocabulary is not None:
            size = self.embeddings.word_embeddings.num_embeddings
            kept = torch.unique(torch.as_tensor(np.asarray(vocabulary), dtype=torch.long))
            if len(kept) == 0 or kept[0] < 0 or kept[-1] >= size:
                raise ValueError(f"the RTL vocabulary must be token ids in [0, {size}), not empty")
            restrict_output(self.lm_head, self.embeddings.word_embeddings.weight, kept)
            row_of = torch.full((size,), -1, dtype=torch.long)
            row_of[kept] = torch.arange(len(kept))
        self.register_buffer("vocabulary", kept, persistent=False)
        self.register_buffer("row_of", row_of, persistent=False)

    def forward(
        self,
        source_states: torch.Tensor,
        source_mask: torch.Tensor,
        target_mask: torch.Tensor,
    ) -> torch.Tensor:
        """Logits over the vocabulary (or, restricted, over `vocabulary`'s ids, column j
        for token `vocabulary[j]`) at the real target positions, in row-major order.

        `source_states` (B×S×d) and `source_mask` (B×S) are the encoder's output for the
        non-English sentences *after* CLS; `target_mask` (B×T) marks the English tokens to
        reconstruct. Padding on either side is neither attended to nor predicted. The masks
        follow x's padded row, as in the code (where both sides have the batch's width).
        """
        device = source_mask.device
        width = source_mask.shape[1] + 1  # the code's side: CLS and the S columns after it
        # Counted from 0 as BERT counts (`first` adds XLM-R's offset): x's k-th state sits in
        # column k + 1 of the code's sequence, the k-th mask in column width + k + 1, and in
        # the masks' own row (CLS at 0) in column k + 1.
        own = torch.arange(1, target_mask.shape[1] + 1, device=device)
        sequence = torch.cat([torch.arange(1, width, device=device), width + own])
        masks = torch.where(target_mask.bool(), self.mask_id, self.pad_id)
        mask_states = self.embeddings(
            input_ids=masks,
            token_type_ids=torch.zeros_like(masks),
            position_ids=(own + self.first)[None],
        )
        hidden = self.embeddings(
            inputs_embeds=torch.cat([source_states, mask_states], dim=1),
            token_type_ids=torch.zeros_like(sequence)[None],
            position_ids=(sequence + self.first)[None],
        )
        attend = torch.cat([source_mask, target_mask], dim=1).bool()
        additive = torch.zeros(attend.shape, dtype=hidden.dtype, device=hidden.device)
        additive = additive.masked_fill(~attend, torch.finfo(hidden.dtype).min)[:, None, None, :]
        for layer in self.layers:
            out = layer(hidden, attention_mask=additive)
            hidden = out[0] if isinstance(out, tuple) else out  # transformers 4 returns tuples
        targets = hidden[:, source_states.shape[1] :][target_mask.bool()]
        return self.lm_head(targets)

    def _extend_positions(self, rows: int, std: float) -> None:
        """Give the head's position table at least `rows` rows: the concatenation of two
        sentences needs twice a sentence's positions, which a scratch encoder's table
        (max_length + 2 rows) lacks; the rows added are initialised as the model initialises
        embeddings (normal(0, initializer_range)). A pretrained encoder's 512 are enough."""
        old = self.embeddings.position_embeddings
        if old.num_embeddings >= rows:
            return
        with torch.no_grad():
            weight = old.weight.new_empty(rows, old.embedding_dim).normal_(0.0, std)
            weight[: old.num_embeddings] = old.weight
        self.embeddings.position_embeddings = nn.Embedding.from_pretrained(
            weight, freeze=False, padding_idx=old.padding_idx
        )

    def target_rows(self, targets: torch.Tensor) -> torch.Tensor:
        """The logits' columns that stand for the token ids `targets`: the ids themselves over
        the whole vocabulary, their places in `vocabulary` over a restricted one."""
        if self.vocabulary is None:
            return targets
        rows = self.row_of[targets]
        absent = rows < 0
        if bool(absent.any()):  # one sync per micro-batch, which logs its loss anyway
            ids = sorted(set(targets[absent].tolist()))
            raise ValueError(
                f"RTL targets {ids[:5]} are not among the head's {len(self.vocabulary)} "
                "token ids: build the vocabulary from the English side that the batches come "
                "from (`english_vocabulary`)"
            )
        return rows
