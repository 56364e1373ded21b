"""Representation translation learning (RTL), DAP eq. 6.

    L_RTL = (1/S) Σ_{i=1..S} CE( g(f*(x), y)_i , y_i )

with f*(x) the encoder's states of the non-English sentence x except CLS, g the RTL head
(`xlsent.models.rtl_head`) and y the English sentence of S tokens: the per-sentence mean
over its tokens, then the mean over the batch's sentences. English is always the target
(DAP §5.2: reconstructing the other way performs much worse).

DAP's paper writes L = L_TR + L_RTL (eq. 7); its released code weights RTL by 0.1, which is
the default of `train.rtl_weight`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def representation_translation_loss(
    logits: torch.Tensor, targets: torch.Tensor, sentence: torch.Tensor, n_sentences: int
) -> torch.Tensor:
    """Eq. 6 from the head's logits (P×V) at the P English tokens, their ids, and the
    sentence (0..n_sentences-1) each token belongs to."""
    ce = F.cross_entropy(logits.float(), targets, reduction="none")
    per_sentence = torch.zeros(n_sentences, device=ce.device).index_add(0, sentence, ce)
    counts = torch.bincount(sentence, minlength=n_sentences).clamp(min=1)
    return (per_sentence / counts).mean()
