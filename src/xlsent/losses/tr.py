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

Two options beside the papers' loss, both off by default (TR as above):
- Additive margin (`margin`, `train.tr_margin`): Yang, Abrego, Yuan, Guo, Shen, Cer, Sung,
  Strope, Kurzweil (2019), "Improving Multilingual Sentence Embedding using Bi-directional
  Dual Encoder with Additive Margin Softmax", arXiv:1902.08564, the loss LaBSE trains with
  (Feng, Yang, Cer, Arivazhagan, Wang (2022), "Language-agnostic BERT Sentence Embedding",
  arXiv:2007.01852; m = 0.3, both directions): the positive's similarity lowered by m,

    l_i = -log  exp((φ(x_i, y_i) − m) / τ)
                ─────────────────────────────────────────────────────────
                exp((φ(x_i, y_i) − m) / τ) + Σ_{j≠i} exp(φ(x_i, y_j) / τ)

  so that a translation must beat every negative by m, not merely rank first. With `both`
  the margin is taken in each direction. LaBSE sums the two directions (L + L′); `both`
  averages them, as without a margin: the same gradient's direction at half its norm, which
  the gradient clipping sees.
- Hard negatives (`negatives`, `train.hard_negatives`): each query x_i also ranks its own k
  English sentences mined by the starting model (`xlsent.hard_negatives`), n_{i,1..k}, added
  to the denominator of its term, Σ_{j≠i} exp(φ(x_i, y_j) / τ) + Σ_l exp(φ(x_i, n_{i,l}) / τ);
  a slot the stage left empty (`negatives_mask` False) adds nothing. Only the foreign
  queries rank them (they are English sentences): under `both` the English queries rank the
  batch's foreign sentences as without. Guo et al. (2018), arXiv:1807.11906, and
  sentence-transformers' MultipleNegativesRankingLoss (a third column) append every pair's
  negatives to every query's candidates; here a query ranks only its own, which were mined
  for it (the others' are, to it, random English sentences the batch already has).

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
  CachedMultipleNegativesRankingLoss; with `margin` it is LaBSE's additive margin softmax
  (the same softmax, the gold logit lowered), of which `triplet`'s hinge at margin α is the
  max-margin relative.

Example: two pairs whose translations point their own way; at τ = 1 each query's term is
log(1 + e^-1) (its translation at cosine 1, the other at 0), at τ = 0.05 nearly nothing.

    >>> xx = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> en = torch.tensor([[2.0, 0.0], [0.0, 3.0]])  # lengths do not count: cosine
    >>> round(translation_ranking_loss(xx, en, temperature=1.0).item(), 4)
    0.3133
    >>> round(translation_ranking_loss(xx, en).item(), 4)
    0.0

A margin of 0.3 lowers each gold logit to 0.7: each term is log(1 + e^-0.7). A hard negative
per query, (1, 1) for x_0 (cosine 1/√2) and (0, -1) for x_1 (cosine -1), joins its own
denominator only: x_0's term -log(e / (e + 1 + e^0.7071)) = 0.7486, x_1's 0.4076.

    >>> round(translation_ranking_loss(xx, en, temperature=1.0, margin=0.3).item(), 4)
    0.4032
    >>> hard = torch.tensor([[[1.0, 1.0]], [[0.0, -1.0]]])  # N×k×d, k = 1
    >>> round(translation_ranking_loss(xx, en, temperature=1.0, negatives=hard).item(), 4)
    0.5781
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
    margin: float = 0.0,
    negatives: torch.Tensor | None = None,
    negatives_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """L_TR (eq. 10), a 0-dim tensor, of sentence vectors `xx[i]` ↔ `en[i]` (N×d each).

    `direction`: `fwd` (xx queries rank the English candidates) or `both` (the mean of both
    directions). `gather` (several processes): the candidates become every process's rows,
    and this process's queries find their gold rows at the offset it returns. `margin`: the
    additive margin m taken off each gold cosine (0: the papers' TR). `negatives` (N×k×d):
    each xx query's own hard negatives, more English candidates of its term only;
    `negatives_mask` (N×k, bool): which of them exist (default: all).
    """
    if direction not in ("fwd", "both"):
        raise ValueError(f"TR direction must be 'fwd' or 'both', not {direction!r}")
    xx, en = F.normalize(xx.float(), dim=-1), F.normalize(en.float(), dim=-1)
    hard = None
    if negatives is not None:
        hard = torch.einsum("nd,nkd->nk", xx, F.normalize(negatives.float(), dim=-1))
        if negatives_mask is not None:
            # An empty slot scores -inf: exp(-inf) adds nothing to the denominator, and no
            # gradient reaches the vector that fills it.
            hard = hard.masked_fill(~negatives_mask, float("-inf"))
    loss = _rank(xx, en, temperature, gather, margin, hard)
    if direction == "both":
        loss = (loss + _rank(en, xx, temperature, gather, margin)) / 2
    return loss


def negative_slots(rows: torch.Tensor, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`translation_ranking_loss`'s `negatives` and `negatives_mask` from the vectors of a
    batch's hard negatives (M×d, each encoded once) and each query's rows of them (N×k, -1
    for an empty slot): (N×k×d, N×k). An empty slot holds a zero vector, which the mask
    leaves out."""
    mask = index >= 0
    if not len(rows):
        return rows.new_zeros(*index.shape, rows.shape[-1]), mask
    return rows[index.clamp(min=0)], mask


def _rank(
    queries: torch.Tensor,
    keys: torch.Tensor,
    temperature: float,
    gather: Gather | None,
    margin: float = 0.0,
    extra: torch.Tensor | None = None,
) -> torch.Tensor:
    """Eq. 10 for unit vectors: the mean over queries (N×d) of -log softmax over the keys,
    each gold cosine less `margin`; `extra` (N×k): each query's own further cosines."""
    offset = 0
    if gather is not None:
        keys, offset = gather(keys)
    cosines = queries @ keys.T
    gold = torch.arange(len(queries), device=cosines.device) + offset
    if margin:
        cosines = cosines - margin * F.one_hot(gold, cosines.shape[1]).to(cosines.dtype)
    if extra is not None:
        cosines = torch.cat([cosines, extra], dim=1)
    return F.cross_entropy(cosines / temperature, gold)
