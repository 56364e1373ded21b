"""Translation ranking (TR) with in-batch negatives.

WACSE eq. 9–10 (DAP eq. 5), for a batch of N translation pairs (X_i, Y_i):

    l_i = -log  exp(φ(h_cls^{X_i}, h_cls^{Y_i}) / τ)
                ─────────────────────────────────────
                Σ_{j=1..N} exp(φ(h_cls^{X_i}, h_cls^{Y_j}) / τ)

    L_TR = (1/N) Σ_i l_i

with φ the cosine similarity and τ the temperature (0.05). X is the non-English side and Y
English (`fwd`: each foreign sentence retrieves its English translation among the batch's
English sentences, as DAP's code does); `both` averages in the reverse direction.

On several GPUs the candidates are the sentences of every GPU's micro-batch (`gather`), so
the negatives are those of the global micro-batch while each GPU scores its own queries.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

# Gathers a tensor from every process (differentiably) and returns it with the offset of this
# process's rows in the result.
Gather = Callable[[torch.Tensor], tuple[torch.Tensor, int]]


def translation_ranking_loss(
    xx: torch.Tensor,
    en: torch.Tensor,
    temperature: float = 0.05,
    direction: str = "fwd",
    gather: Gather | None = None,
) -> torch.Tensor:
    """Mean TR loss of sentence vectors `xx[i]` ↔ `en[i]` (shape N×d each)."""
    if direction not in ("fwd", "both"):
        raise ValueError(f"TR direction must be 'fwd' or 'both', not {direction!r}")
    xx, en = F.normalize(xx.float(), dim=-1), F.normalize(en.float(), dim=-1)
    loss = _rank(xx, en, temperature, gather)
    if direction == "both":
        loss = (loss + _rank(en, xx, temperature, gather)) / 2
    return loss


def _rank(
    queries: torch.Tensor, keys: torch.Tensor, temperature: float, gather: Gather | None
) -> torch.Tensor:
    offset = 0
    if gather is not None:
        keys, offset = gather(keys)
    logits = queries @ keys.T / temperature
    gold = torch.arange(len(queries), device=logits.device) + offset
    return F.cross_entropy(logits, gold)
