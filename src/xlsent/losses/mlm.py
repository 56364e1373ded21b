"""Masked language modelling (MLM) and translation language modelling (TLM).

MLM: Devlin, Chang, Lee and Toutanova (2019), "BERT", arXiv:1810.04805, §3.1; as XLM-R
pretrains (Conneau et al. 2020, arXiv:1911.02116), on monolingual text only. A share of the
subwords (15 %) is chosen; of those 80 % become <mask>, 10 % a random subword, 10 % stay;
the encoder's MLM head predicts the original subword at every chosen position:

    L_MLM = −1/|M| Σ_{t ∈ M} log p(x_t | x̃)

with x̃ the corrupted sentence and M its chosen positions (over the whole batch).

TLM: Conneau and Lample (2019), "Cross-lingual Language Model Pretraining" (XLM),
arXiv:1901.07291, §3.3: the same loss over a translation pair concatenated into one
sequence (positions restarting at the second sentence), masks on both sides, so that a
masked word can be predicted from its translation. DAP (Li et al. 2023, arXiv:2305.09148,
eq. 2, L_TLM(x, y) = ℓ(x ⊕ y, f(m(x) ⊕ m(y)))) trains it beside TR as Table 1's TR+TLM
baseline; its code chooses 20 % of the subwords and lays the pair out its own way
(`train.tlm_input`).

Inputs: the MLM head's logits (P×V) at the P chosen positions of the batch, and the subwords
they must predict (P). Which positions, and how they are corrupted and laid out, is the
collator's (`xlsent.train.collate.mask_tokens`, `Collator`); this module only averages (over
the micro-batch's chosen subwords, as the code's cross-entropy over its GPU's batch).

Relations:
- MLM alone is the `mlm` method (pretraining, from which the demo's encoder runs start); TLM
  alone is `tlm`, and TR+TLM (`tr-tlm`) adds w·L_TLM to TR (`tr`), weighed in
  `xlsent.train.objectives`.
- AWP (`awp`, WACSE) predicts with the same MLM head (`xlsent.models.mlm_head`) the aligned
  word of the other sentence instead of the masked subword itself.
- RTL (`rtl`, DAP) is the same mean cross-entropy over another head's predictions of the
  English sentence.

Example: two chosen positions, one predicted at logit margin 1 (log(1 + e^-1)), one at
chance (log 2), averaged; no position chosen gives 0:

    >>> logits = torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    >>> round(masked_lm_loss(logits, torch.tensor([0, 1])).item(), 4)
    0.5032
    >>> masked_lm_loss(torch.zeros(0, 5), torch.zeros(0, dtype=torch.long)).item()
    0.0
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def masked_lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """L_MLM (or L_TLM), a 0-dim tensor: the mean cross-entropy of `logits` (P×V) against
    `targets` (P); 0 (with a gradient path) when no position was chosen."""
    if len(targets) == 0:
        return logits.sum() * 0.0
    return F.cross_entropy(logits.float(), targets)
