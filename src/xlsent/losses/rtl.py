"""Representation translation learning (RTL).

Li, Huang, Zhang, Deng, Lou, Huang, Jiao, Wei, Deng, Zhang (2023), "Dual-Alignment
Pre-training for Cross-lingual Sentence Embedding" (DAP), arXiv:2305.09148, §3.3.2, eq. 6:

    L_RTL = (1/S) Σ_{i=1..S} CE( g(f*(x), y)_i , y_i )                               (6)

with f*(x) the encoder's states of the non-English sentence x except CLS, g the RTL head
(eq. 4, `xlsent.models.rtl_head`) and y the English sentence of S tokens.

Inputs: the head's logits (Q×V) at the Q English tokens of the batch and the ids of those
tokens (Q) as columns of the logits. The targets are built by
`xlsent.train.collate.english_targets`; over a restricted vocabulary the head maps them to
its rows (`RTLHead.target_rows`).

Choices the paper leaves open, made as DAP's released code (ChillingDream/DAP) makes them:
- y's S tokens are the English sentence's subwords after <s>, </s> included (the code's
  labels are the English input ids with only CLS and padding ignored).
- Eq. 6 is the loss of one sentence; over a batch the code takes Hugging Face's masked-LM
  loss, the mean over every target token of the batch (a long sentence weighs more than a
  short one), and so do we.
- English is always the target (DAP §3.3.2; §5.1: reconstructing the other way performs
  much worse).
- g^[0]: the code passes [f*(x); the [MASK] embeddings] through the head's embedding layer
  (position and type embeddings, LayerNorm, dropout) before its layers, at the positions of
  its padded layout (`xlsent.models.rtl_head`).
- The softmax's vocabulary: eq. 4's W spans the whole vocabulary; the code, given its file of
  English token ids, keeps only their rows of the output layer (untied copies), so the
  softmax ranges over the English ids (V = their number) and each target is its id's row.
  `train.rtl_vocabulary: english` (the default) does the same with the ids of the English
  training side and </s>; `all` is eq. 4 (`xlsent.models.rtl_head`).
- The weight of RTL: the paper writes L = L_TR + L_RTL (eq. 7); the released code adds
  0.1·L_RTL on each of 8 GPUs, each GPU's TR loss the whole gathered batch's with gradients
  reaching only its own rows, and DDP averages the gradients: the update is
  (1/8)·∇(L_TR + 0.8·L_RTL). The numbers of the paper come from that code, so
  `train.rtl_weight` defaults to 0.8 (docs/methods.md: the derivation).

Relations:
- DAP's second term: L = L_TR + w·L_RTL (eq. 7; `tr`, weighed in `xlsent.train.objectives`).
- The same mean cross-entropy as MLM and TLM (`mlm`), of another head's logits: RTL's head
  (`xlsent.models.rtl_head`) rebuilds the English sentence from the foreign sentence's
  states, where MLM restores masked subwords of its own input. TR+TLM (`mlm`'s TLM beside
  TR) is the baseline DAP's Table 1 sets it against.
- AWP (`awp`, WACSE) also predicts the other side's tokens, one aligned word at a time
  through the encoder's own MLM head.

Example: three English tokens, two predicted at logit margin 1 (log(1 + e^-1) each), one
at chance over two rows (log 2), averaged:

    >>> logits = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    >>> round(representation_translation_loss(logits, torch.tensor([0, 1, 1])).item(), 4)
    0.4399
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def representation_translation_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """L_RTL (eq. 6 over a batch), a 0-dim tensor: the mean cross-entropy of the head's logits
    (Q×V) at the batch's Q English tokens against their ids (Q)."""
    return F.cross_entropy(logits.float(), targets)
