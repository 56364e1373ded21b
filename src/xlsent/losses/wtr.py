"""Word translation ranking (WTR).

Miao, Wu, Zhao, Wu, Tsuruoka (2024), "Enhancing Cross-lingual Sentence Embedding for
Low-resource Languages with Word Alignment" (WACSE), arXiv:2404.02490, §3.2, eq. 6–8.

For an aligned word pair (x_j, y_k) of (X_i, Y_i), x_j ranks the words of Y_i by the
cosine similarity φ^m of their contextual vectors; y_k is the positive, the other words of
Y_i the negatives (no word of another sentence):

    l^WTR(x_j) = -log  exp(φ^m(h_j^X, h_k^Y)/τ) / Σ_{n=1..|Y_i|} exp(φ^m(h_j^X, h_n^Y)/τ)   (6)
    l^WTR(X_i) = Σ_{x_j ∈ WA^{X_i→Y_i}} l^WTR(x_j)                                           (7)
    L_WTR      = 1/(2N) Σ_i ( l^WTR(X_i) + l^WTR(Y_i) )                                      (8)

Inputs: the word vectors of the N non-English sentences (N×W×d) and of their English
translations (N×W'×d), which of those are words with subwords (N×W, N×W'), and the L links
(L×3: pair, x word, y word).

Choices the paper leaves open, made here:
- A word's vector is the mean of its subwords' last hidden states (eq. 6's φ^m compares
  words made of different numbers of subwords; `xlsent.train.objectives.word_vectors`).
- The paper writes eq. 6 without a temperature, as it writes the TR loss of eq. 9, which is
  trained with τ = 0.05; WTR takes the same τ by default.
- Each link is one term in each direction.

Relations:
- A term of WACSE's eq. 11, γ·L_WTR beside α·L_TR (`tr`) and β·L_AWP (`awp`), weighed in
  `xlsent.train.objectives`; with β = 0 the ablation `tr-wtr`.
- TR's word-level twin (`tr`): the same softmax over cosine / τ (`wtr_temperature`, TR's
  0.05 by default), a word ranking its own pair's other sentence's words where a sentence
  ranks the batch's sentences; summed over links and divided by 2N where TR averages.
- Its word vectors come from the pass that gives TR's sentence vectors
  (`xlsent.train.objectives.word_vectors`); WACSE Figure 1 draws vectors made alike
  (`xlsent.figures.alignment.word_vectors`).

Example: one pair of two words a side, each linked to the word pointing its way; at τ = 1
each of the 4 terms (2 links, both directions) is log(1 + e^-1), summed over 2N = 2:

    >>> words = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> valid, links = torch.ones(1, 2, dtype=torch.bool), torch.tensor([[0, 0, 0], [0, 1, 1]])
    >>> loss = word_translation_ranking_loss(words, valid, words, valid, links, temperature=1.0)
    >>> round(loss.item(), 4)
    0.6265
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def word_translation_ranking_loss(
    xx_words: torch.Tensor,
    xx_valid: torch.Tensor,
    en_words: torch.Tensor,
    en_valid: torch.Tensor,
    links: torch.Tensor,
    temperature: float = 0.05,
) -> torch.Tensor:
    """L_WTR (eq. 8), a 0-dim tensor, for N pairs: the word vectors of each side (N×W×d,
    N×W'×d), which of them are words with subwords (N×W, N×W' bool), and the links (L×3
    int64: pair, x word, y word)."""
    pair, x, y = links.unbind(-1)
    forward = _rank(xx_words[pair, x], en_words[pair], en_valid[pair], y, temperature)
    backward = _rank(en_words[pair, y], xx_words[pair], xx_valid[pair], x, temperature)
    return (forward + backward) / (2 * len(xx_words))


def _rank(
    queries: torch.Tensor,
    candidates: torch.Tensor,
    valid: torch.Tensor,
    gold: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """Σ over queries (L×d) of -log softmax over their own sentence's words (L×W×d)."""
    sims = torch.einsum(
        "ld,lwd->lw",
        F.normalize(queries.float(), dim=-1),
        F.normalize(candidates.float(), dim=-1),
    )
    logits = (sims / temperature).masked_fill(~valid, float("-inf"))
    return F.cross_entropy(logits, gold, reduction="sum")
