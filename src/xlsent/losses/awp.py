"""Aligned word prediction (AWP).

Miao, Wu, Zhao, Wu, Tsuruoka (2024), "Enhancing Cross-lingual Sentence Embedding for
Low-resource Languages with Word Alignment" (WACSE), arXiv:2404.02490, §3.1, eq. 4–5.

For a pair (X_i, Y_i) with word alignment WA, every aligned word x_j of X_i is masked and
the encoder's MLM head predicts its aligned word y_k = WA(x_j) of the other sentence at the
masked positions:

    l^AWP(X_i) = Σ_{x_j ∈ WA^{X_i→Y_i}} MLM(X_i, x_j; y_k)                          (4)
    L_AWP      = 1/(2N) Σ_i ( l^AWP(X_i) + l^AWP(Y_i) )                              (5)

Inputs: the MLM head's logits (P×V) at the P masked positions of the batch's masked copies,
the subword each must predict (P), its weight in the sum of eq. 5 (P), and N, the batch's
number of pairs. The masked copies, targets and weights are built by
`xlsent.train.collate.masked_copies`; this module only sums.

Choices the paper leaves open, made here:
- Subwords. x_j's subwords are all replaced by <mask>. When x_j and y_k have different
  numbers of subwords, the longer is clipped to the shorter (WACSE §4.3): with
  n = min(|x_j|, |y_k|), mask position t < n predicts y_k's t-th subword; x_j's masked
  positions beyond n predict nothing. MLM(X, x_j; y_k) is the mean cross-entropy over those
  n predictions, so a word counts once whatever its length. A word aligned to several words
  contributes one term per link.
- Cost. Each sentence's aligned words are sampled (`train.awp_samples`; 0: eq. 4 exactly):
  the choice and its estimator are in docs/methods.md#wacse.

Relations:
- A term of WACSE's eq. 11, β·L_AWP beside α·L_TR (`tr`) and γ·L_WTR (`wtr`), weighed in
  `xlsent.train.objectives`; with γ = 0 the ablation `tr-awp`.
- The cross-entropy of MLM (`mlm`) through the same MLM head (`xlsent.models.mlm_head`, the
  one an `mlm` run trained when the run starts from it), but a masked word predicts its
  aligned word in the other sentence, not itself, and the terms are summed per link over
  2N, not averaged over positions.
- RTL (`rtl`, DAP) also predicts the other side's tokens: the whole English sentence, by a
  head of its own, where AWP predicts one aligned word at a time.

Example: two masked positions, the second weighing half (a word clipped to two subwords);
their cross-entropies log(1 + 2e^-2) and log 3, weighed and summed over 2N = 2:

    >>> logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> targets, weights = torch.tensor([0, 2]), torch.tensor([1.0, 0.5])
    >>> round(aligned_word_prediction_loss(logits, targets, weights, n_pairs=1).item(), 4)
    0.3944

What the value is: eq. 5 sums a sentence's terms, one per link of its aligned words, so it is
about (links per sentence) × (cross-entropy of one term), and a uniform guess over V pieces
gives it ln V only at one link a sentence. `term_cross_entropy` gives the second factor, the
mean cross-entropy of one term (ln V for a uniform guess), which the trainer logs beside the
loss with the batch's links per sentence (`awp_term_ce`, `awp_links_per_sentence`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def aligned_word_prediction_loss(
    logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor, n_pairs: int
) -> torch.Tensor:
    """L_AWP (eq. 5), a 0-dim tensor: Σ_p weights[p] · CE(logits[p], targets[p]) / (2N).

    `logits` (P×V) are the MLM head's at the masked positions, `targets` (P) the subwords
    they must predict, `weights` (P) what each prediction weighs in eq. 5's sum (1/n for a
    word clipped to n subwords, times |A|/m for a drawn word), `n_pairs` N.
    """
    ce = F.cross_entropy(logits.float(), targets, reduction="none")
    return (ce * weights).sum() / (2 * n_pairs)


@torch.no_grad()
def term_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, terms: torch.Tensor
) -> torch.Tensor:
    """The sums behind the mean cross-entropy of one AWP term, a diagnostic without gradient:
    the 2-vector (Σ_p terms[p] · CE(logits[p], targets[p]), Σ_p terms[p]).

    `terms` (P) is each prediction's share of its term (1/n of a word clipped to n subwords,
    without the |A|/m of a drawn word: `xlsent.train.collate.masked_copies`), so Σ terms counts
    the terms and the ratio is their mean cross-entropy, ln V for uniform logits over V. The
    two sums are returned apart so that a step adds its micro-batches' before dividing.
    """
    ce = F.cross_entropy(logits.float(), targets, reduction="none")
    terms = terms.float()
    return torch.stack([(ce * terms).sum(), terms.sum()])
