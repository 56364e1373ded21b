"""Translation ranking (TR) with in-batch negatives.

WACSE eq. 9–10 (DAP eq. 5), for a batch of N translation pairs (X_i, Y_i):

    l_i = -log  exp(φ(h_cls^{X_i}, h_cls^{Y_i}) / τ)
                ─────────────────────────────────────
                Σ_{j=1..N} exp(φ(h_cls^{X_i}, h_cls^{Y_j}) / τ)

    L_TR = (1/N) Σ_i l_i

with φ the cosine similarity and τ the temperature (0.05). X is the non-English side and Y
English (`fwd`: each foreign sentence retrieves its English translation among the batch's
English sentences, as DAP's code does); `both` averages in the reverse direction.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def translation_ranking_loss(
    xx: torch.Tensor, en: torch.Tensor, temperature: float = 0.05, direction: str = "fwd"
) -> torch.Tensor:
    """Mean TR loss of sentence vectors `xx[i]` ↔ `en[i]` (shape N×d each)."""
    if direction not in ("fwd", "both"):
        raise ValueError(f"TR direction must be 'fwd' or 'both', not {direction!r}")
    logits = F.normalize(xx.float(), dim=-1) @ F.normalize(en.float(), dim=-1).T / temperature
    gold = torch.arange(len(logits), device=logits.device)
    loss = F.cross_entropy(logits, gold)
    if direction == "both":
        loss = (loss + F.cross_entropy(logits.T, gold)) / 2
    return loss
