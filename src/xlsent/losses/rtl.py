"""Representation translation learning (RTL).

Li, Huang, Zhang, Deng, Lou, Huang, Jiao, Wei, Deng, Zhang (2023), "Dual-Alignment
Pre-training for Cross-lingual Sentence Embedding" (DAP), arXiv:2305.09148, §3.3.2, eq. 6:

    L_RTL = (1/S) Σ_{i=1..S} CE( g(f*(x), y)_i , y_i )                               (6)

with f*(x) the encoder's states of the non-English sentence x except CLS, g the RTL head
(eq. 4, `xlsent.models.rtl_head`) and y the English sentence of S tokens.

Inputs: the head's vocabulary logits (Q×V) at the Q English tokens of the batch's N pairs,
the ids of those tokens (Q), and the pair (0..N-1) each belongs to (Q). The targets are
built by `xlsent.train.collate.english_targets`.

Choices the paper leaves open, made here:
- y's S tokens are the English sentence's subwords, without <s> and </s>.
- Eq. 6 is the loss of one sentence; over a batch it is the per-sentence mean over its
  tokens, then the mean over the batch's sentences.
- English is always the target (DAP §3.3.2; §5.1: reconstructing the other way performs
  much worse).
- DAP's paper writes L = L_TR + L_RTL (eq. 7); its released code weights RTL by 0.1, which is
  the default of `train.rtl_weight`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def representation_translation_loss(
    logits: torch.Tensor, targets: torch.Tensor, sentence: torch.Tensor, n_sentences: int
) -> torch.Tensor:
    """L_RTL (eq. 6 averaged over the batch), a 0-dim tensor, from the head's logits (Q×V) at
    the Q English tokens, their ids (Q), and the sentence (0..n_sentences-1) each token
    belongs to (Q)."""
    ce = F.cross_entropy(logits.float(), targets, reduction="none")
    per_sentence = torch.zeros(n_sentences, device=ce.device).index_add(0, sentence, ce)
    counts = torch.bincount(sentence, minlength=n_sentences).clamp(min=1)
    return (per_sentence / counts).mean()
