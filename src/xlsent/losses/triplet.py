"""Bidirectional triplet ranking with the hardest negative and random negatives.

Tien and Steinert-Threlkeld (2022), "Bilingual alignment transfers to multilingual alignment
for unsupervised parallel text mining" (dual-pivot transfer), arXiv:2104.07642, §3.3:

    h(a, b) = Σ_{n} [ max(0, α − s(a, b) + s(a_n, b)) + max(0, α − s(a, b) + s(a, b_n)) ]

for a sentence pair (a, b) of a mini-batch, s the cosine similarity and the negatives a_n, b_n
other sentences of the batch: always the hardest one (the most similar), and n − 1 drawn at
random. L_sup = h(y_s, y_t), averaged over the batch's pairs.

Inputs: the batch's similarity matrix S (B×B, S[i, j] = s(a_i, b_j), unit vectors) and, per
pair, the indices of its n − 1 random negatives (B×(n−1), none on the diagonal; drawn by the
trainer so that this stays a pure function), and the margin α.

The paper writes a hinge; the authors' code (cctien/bimultialign, `triplet_ranking_criterion`)
instead averages s(neg) − s(pos) over the hardest negatives and the random ones the margin
lets through, with no hinge: `hinge=False` computes that variant.

Relations:
- L_sup, all of `dualpivot-sup`'s objective (`xlsent.train.dualpivot`, the negatives from
  `random_negatives`); h is also the building block of `cycle` (`dualpivot-unsup`).
- The margin counterpart of TR (`tr`): both rank a pair's translation above the batch's
  other sentences by cosine; TR with a softmax over all of them at temperature τ, this with
  a hinge at margin α on the hardest and n − 1 random ones, in both directions.

Example: two pairs (positives 0.9 and 0.8 on the diagonal), only the hardest negatives:
pair 0's cost max(0, 0.5 − 0.9 + 0.5) = 0.1 for b_1, pair 1's 0.2 for a_0, the rest 0, so
h averages 0.15; the code's variant averages s(neg) − s(pos), −0.5:

    >>> sim = torch.tensor([[0.9, 0.5], [0.2, 0.8]])
    >>> hardest_only = torch.zeros(2, 0, dtype=torch.long)
    >>> round(triplet_ranking_loss(sim, hardest_only, margin=0.5).item(), 4)
    0.15
    >>> round(triplet_ranking_loss(sim, hardest_only, margin=0.5, hinge=False).item(), 4)
    -0.5
"""

from __future__ import annotations

import torch


def triplet_ranking_loss(
    sim: torch.Tensor, random_negatives: torch.Tensor, margin: float, hinge: bool = True
) -> torch.Tensor:
    """h averaged over the B pairs of `sim` (B×B), a 0-dim tensor (see the module docstring)."""
    b = len(sim)
    positive = sim.diagonal()
    off = torch.eye(b, dtype=torch.bool, device=sim.device)
    # Row i: a_i against every b_j (negatives b_n of a_i); column j: every a_i against b_j.
    rows = sim.masked_fill(off, -torch.inf)
    hardest_b = rows.max(dim=1).values
    hardest_a = rows.max(dim=0).values
    costs_b = [hardest_b] + [
        sim.gather(1, random_negatives[:, k : k + 1])[:, 0]
        for k in range(random_negatives.shape[1])
    ]
    costs_a = [hardest_a] + [
        sim.T.gather(1, random_negatives[:, k : k + 1])[:, 0]
        for k in range(random_negatives.shape[1])
    ]
    negatives = torch.stack(costs_b + costs_a, dim=1)  # B × 2n: s(a, b_n) and s(a_n, b)
    if hinge:
        return (margin - positive[:, None] + negatives).clamp(min=0).sum(1).mean()
    # The code's variant: the hardest always count; random ones only when within the margin.
    difference = negatives - positive[:, None]
    n = 1 + random_negatives.shape[1]
    keep = torch.ones_like(difference, dtype=torch.bool)
    keep[:, 1:n] = difference[:, 1:n] + margin >= 0
    keep[:, n + 1 :] = difference[:, n + 1 :] + margin >= 0
    return difference[keep].mean()
