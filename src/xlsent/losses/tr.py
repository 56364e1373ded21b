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

Relations:
- The spine of the sentence-encoder methods (`xlsent.train.objectives` weighs it): the
  whole objective of method `tr`; the α·L_TR term of WACSE's eq. 11 beside `awp` and `wtr`
  (method `wacse`, and its ablation runs `tr-awp`, `tr-wtr`); DAP's L_TR beside w·L_RTL
  (`rtl`, eq. 7, method `dap`); and TR+TLM's beside w·L_TLM (`mlm`, method `tr-tlm`).
- Its cached twin, `xlsent.train.cached_tr` (`negatives: batch`, the default), computes this
  same loss over the whole batch of several micro-batches by gradient caching: the same
  value and parameter gradient as one pass over the batch. `negatives: micro_batch` calls
  this function per micro-batch instead, each query ranking only its micro-batch.
- `wtr` is its word-level twin: the same softmax over cosine / τ, but an aligned word ranks
  the words of its own pair's other sentence, not the batch's sentences.
- `triplet` (dual-pivot transfer) also ranks a pair's translation above the batch's other
  sentences by cosine, with a margin hinge on the hardest and n − 1 random negatives where
  this takes a softmax over all of them.
- `fwd` is sentence-transformers' MultipleNegativesRankingLoss (cosine, scale 1/τ: its
  default 20 is τ = 0.05), and `xlsent.train.cached_tr` its
  CachedMultipleNegativesRankingLoss.

Example: two pairs whose translations point their own way; at τ = 1 each query's term is
log(1 + e^-1) (its translation at cosine 1, the other at 0), at τ = 0.05 nearly nothing.

    >>> xx = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> en = torch.tensor([[2.0, 0.0], [0.0, 3.0]])  # lengths do not count: cosine
    >>> round(translation_ranking_loss(xx, en, temperature=1.0).item(), 4)
    0.3133
    >>> round(translation_ranking_loss(xx, en).item(), 4)
    0.0
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
