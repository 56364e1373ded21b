"""DAP's representation translation learning (RTL) head g (Li et al. 2023, eq. 4).

    g^[0](h, y) = (h_1^[L], …, h_Sx^[L], [MASK], …, [MASK])      (S_y masks)
    g(h, y)     = softmax(W^T g^[K](… g^[1](g^[0](h, y))))

A stack of K transformer layers initialised from the encoder's last K layers, with its own
copy of the encoder's embeddings (for the [MASK] tokens and their positions) and its own MLM
head. It reads the non-English sentence's final token states, CLS excluded, followed by one
[MASK] per English token, and predicts the English tokens at the mask positions. It exists
only during training; the saved encoder does not include it.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from torch import nn

from xlsent.models.mlm_head import mlm_head


class RTLHead(nn.Module):
    def __init__(
        self,
        encoder: nn.Module,
        layers: int = 2,
        mask_id: int = 0,
        pretrained_dir: str | Path | None = None,
    ):
        super().__init__()
        available = len(encoder.encoder.layer)
        if not 1 <= layers <= available:
            raise ValueError(f"the RTL head takes 1 to {available} layers, not {layers}")
        self.mask_id = mask_id
        self.embeddings = copy.deepcopy(encoder.embeddings)
        last = encoder.encoder.layer[-layers:]
        self.layers = nn.ModuleList(copy.deepcopy(layer) for layer in last)
        self.lm_head = mlm_head(encoder.config, self.embeddings.word_embeddings, pretrained_dir)

    def forward(
        self,
        source_states: torch.Tensor,
        source_mask: torch.Tensor,
        target_mask: torch.Tensor,
    ) -> torch.Tensor:
        """Vocabulary logits at the real target positions, in row-major order.

        `source_states` (B×S×d) and `source_mask` (B×S) are the encoder's output for the
        non-English sentences *after* CLS; `target_mask` (B×T) marks the English tokens to
        reconstruct. Padding on either side is neither attended to nor predicted.
        """
        masks = torch.where(target_mask.bool(), self.mask_id, self.embeddings.padding_idx)
        hidden = torch.cat([source_states, self.embeddings(input_ids=masks)], dim=1)
        attend = torch.cat([source_mask, target_mask], dim=1).bool()
        additive = torch.zeros(attend.shape, dtype=hidden.dtype, device=hidden.device)
        additive = additive.masked_fill(~attend, torch.finfo(hidden.dtype).min)[:, None, None, :]
        for layer in self.layers:
            out = layer(hidden, attention_mask=additive)
            hidden = out[0] if isinstance(out, tuple) else out  # transformers 4 returns tuples
        targets = hidden[:, source_states.shape[1] :][target_mask.bool()]
        return self.lm_head(targets)
