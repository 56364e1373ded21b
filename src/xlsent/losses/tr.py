"""Translation ranking (TR) with in-batch negatives.

Miao, Wu, Zhao, Wu, Tsuruoka (2024), "Enhancing Cross-lingual Sentence Embedding for
Low-resource Languages with Word Alignment" (WACSE), arXiv:2404.02490, §3.3, eq. 9–10; the
same loss as Li, Huang, Zhang, Deng, Lou, Huang, Jiao, Wei, Deng, Zhang (2023),
"Dual-Alignment Pre-training for Cross-lingual Sentence Embedding" (DAP), arXiv:2305.09148,
§3.3.1, eq. 5. For a batch of N translation pairs (X_i, Y_i):

    l_i = -log  exp(φ(h_cls^{X_i}, h_cls^{Y_i}) / τ)
                ─────────────────────────────────────                                (9)
                Σ_{j=1..N} exp(φ(h_cls^{X_i}, h_cls^{Y_j}) / τ)

    L_TR = (1/N) Σ_i l_i                                                             (10)

Inputs: the sentence vectors of the N non-English sentences (N×d) and of their N English
translations (N×d), row i of each a pair.

Choices the papers leave open, made here:
- φ is the cosine similarity and τ the temperature (0.05). Eq. 9 is written without τ, and
  DAP's eq. 5 with an inner product; cosine over τ = 0.05 is DAP's released code, whose
  hyperparameters WACSE adopts (§4.4).
- X is the non-English side and Y English (`fwd`: each foreign sentence retrieves its
  English translation among the batch's English sentences, as DAP's code does); `both`
  averages in the reverse direction.
- On several GPUs the candidates are the sentences of every GPU's micro-batch (`gather`), so
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
    """L_TR (eq. 10), a 0-dim tensor, of sentence vectors `xx[i]` ↔ `en[i]` (N×d each).

    `direction`: `fwd` (xx queries rank the English candidates) or `both` (the mean of both
    directions). `gather` (several processes): the candidates become every process's rows,
    and this process's queries find their gold rows at the offset it returns.
    """
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
    """Eq. 10 for unit vectors: the mean over queries (N×d) of -log softmax over the keys."""
    offset = 0
    if gather is not None:
        keys, offset = gather(keys)
    logits = queries @ keys.T / temperature
    gold = torch.arange(len(queries), device=logits.device) + offset
    return F.cross_entropy(logits, gold)
