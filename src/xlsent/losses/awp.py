"""Aligned word prediction (AWP), WACSE eq. 4–5.

For a pair (X_i, Y_i) with word alignment WA, every aligned word x_j of X_i is masked and
the encoder's MLM head predicts its aligned word y_k = WA(x_j) of the other sentence at the
masked positions:

    l^AWP(X_i) = Σ_{x_j ∈ WA^{X_i→Y_i}} MLM(X_i, x_j; y_k)                          (4)
    L_AWP      = 1/(2N) Σ_i ( l^AWP(X_i) + l^AWP(Y_i) )                              (5)

Choices the paper leaves open, made here:
- Subwords. x_j's subwords are all replaced by <mask>. When x_j and y_k have different
  numbers of subwords, the longer is clipped to the shorter (WACSE §4.3): with
  n = min(|x_j|, |y_k|), mask position t < n predicts y_k's t-th subword; x_j's masked
  positions beyond n predict nothing. MLM(X, x_j; y_k) is the mean cross-entropy over those
  n predictions, so a word counts once whatever its length. A word aligned to several words
  contributes one term per link.
- Cost. Eq. 4 masks one word at a time: one encoder pass per aligned word. Each sentence
  instead gets `samples` masked copies (default 1), each masking one aligned word drawn
  without replacement, and the sum of eq. 4 is estimated without bias by scaling the drawn
  terms by |A|/m (|A| aligned words, m drawn). `samples=0` masks every aligned word in its
  own copy: eq. 4 exactly, at |A| passes per sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from xlsent.ragged import Ragged, row_of_each, within


@dataclass(frozen=True)
class MaskedCopies:
    """Masked copies of the batch's sentences and what each masked position must predict.

    `rows` are subword ids without special tokens; `positions` index into them (add 1 for a
    leading CLS). Each prediction p belongs to copy `copy[p]`, predicts `targets[p]`, and
    weighs `weights[p]` in the sum of eq. 5.
    """

    rows: Ragged
    sentence: np.ndarray  # the batch sentence each copy was made from
    copy: np.ndarray
    positions: np.ndarray
    targets: np.ndarray
    weights: np.ndarray


def masked_copies(
    ids: Ragged,
    starts: Ragged,
    ends: Ragged,
    links: Ragged,
    mask_id: int,
    samples: int,
    rng: np.random.Generator,
) -> MaskedCopies:
    """AWP's inputs for a batch of N pairs laid out as 2N sentences: X_0..X_{N-1} (the
    non-English sides) then Y_0..Y_{N-1}.

    `ids` holds the sentences' subwords; `starts`/`ends` each sentence's word spans in them;
    `links` the (x word, y word) index pairs of each pair. Vectorised over the batch: it runs
    for every micro-batch of training.
    """
    n = len(links)
    if len(links.values) == 0:
        return MaskedCopies(Ragged.from_rows([]), *(np.zeros(0, t) for t in _DTYPES))
    flat = links.values.reshape(-1, 2).astype(np.int64)
    pair = row_of_each(links.lengths)
    # Every link seen from each side: (sentence, its word, other sentence, partner word).
    sentence = np.concatenate([pair, pair + n])
    word = np.concatenate([flat[:, 0], flat[:, 1]])
    other = np.concatenate([pair + n, pair])
    partner = np.concatenate([flat[:, 1], flat[:, 0]])

    # The aligned words of each sentence, and which of them get a masked copy.
    base = int(word.max()) + 1
    aligned, link_word = np.unique(sentence * base + word, return_inverse=True)
    aligned_sentence = aligned // base
    per_sentence = np.bincount(aligned_sentence, minlength=2 * n)
    if samples == 0:
        chosen = np.ones(len(aligned), dtype=bool)
        drawn = per_sentence
    else:
        order = np.lexsort((rng.random(len(aligned)), aligned_sentence))
        grouped = aligned_sentence[order]
        rank = np.empty(len(aligned), dtype=np.int64)
        rank[order] = np.arange(len(aligned)) - np.searchsorted(grouped, grouped)
        chosen = rank < samples
        drawn = np.minimum(per_sentence, samples)
    scale = per_sentence / np.maximum(drawn, 1)
    copy_of = np.full(len(aligned), -1, dtype=np.int64)
    copy_of[chosen] = np.arange(chosen.sum())

    def start(s: np.ndarray, w: np.ndarray) -> np.ndarray:
        return starts.values[starts.offsets[s] + w].astype(np.int64)

    def end(s: np.ndarray, w: np.ndarray) -> np.ndarray:
        return ends.values[ends.offsets[s] + w].astype(np.int64)

    # The copies: their sentences' subwords with the chosen word's subwords masked.
    copy_sentence, copy_word = aligned_sentence[chosen], (aligned % base)[chosen]
    rows = ids.take(copy_sentence)
    masked = end(copy_sentence, copy_word) - start(copy_sentence, copy_word)
    first = rows.offsets[:-1] + start(copy_sentence, copy_word)
    rows.values[np.repeat(first, masked) + within(masked)] = mask_id

    # One term per link whose word was masked: the clipped subwords of its partner.
    link_copy = copy_of[link_word]
    kept = link_copy >= 0
    sentence, word, other, partner = sentence[kept], word[kept], other[kept], partner[kept]
    own, target = start(sentence, word), start(other, partner)
    width = np.minimum(end(sentence, word) - own, end(other, partner) - target)
    step = within(width)
    return MaskedCopies(
        rows,
        copy_sentence.astype(np.int64),
        np.repeat(link_copy[kept], width),
        np.repeat(own, width) + step,
        ids.values[np.repeat(ids.offsets[other] + target, width) + step].astype(np.int64),
        np.repeat(scale[sentence] / width, width).astype(np.float32),
    )


_DTYPES = (np.int64, np.int64, np.int64, np.int64, np.float32)


def aligned_word_prediction_loss(
    logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor, n_pairs: int
) -> torch.Tensor:
    """Eq. 5 from the MLM logits (P×V) at the masked positions of `masked_copies`."""
    ce = F.cross_entropy(logits.float(), targets, reduction="none")
    return (ce * weights).sum() / (2 * n_pairs)
