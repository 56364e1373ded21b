"""The cycle loss of unsupervised dual-pivot transfer.

Tien and Steinert-Threlkeld (2022), arXiv:2104.07642, §3.2: linear maps F (source → target
space) and G (target → source) must bring a sentence back to itself:

    L_cycle = h(y_s, G(F(y_s))) + h(F(G(y_t)), y_t)

with h the triplet ranking loss (`xlsent.losses.triplet`): within each language's batch,
every sentence must be closer to its own round trip than to the other sentences' (the
hardest and n − 1 random ones, margin α).

Inputs: the unit vectors of the source batch and of its round trips (B_s×d each), the same
for the target batch, and each batch's random negatives (as `triplet_ranking_loss` takes).
`hinge` picks h's form for both terms, the paper's hinge or the authors' criterion
(`triplet`; `dualpivot.hinge`), as the authors' cycle aligner calls its one criterion for
both.

Relations:
- One of `dualpivot-unsup`'s two terms: the head (with F and G) trains on −L_disc +
  λ·L_cycle (`critic`; λ is `cycle_weight`; `xlsent.train.dualpivot`).
- `triplet`'s h, applied to each language's round trips instead of to translation pairs:
  where `dualpivot-sup` needs aligned pairs, this needs none.

Example: round trips that bring each sentence back cost nothing at margin 0.5; source
round trips that swap the two sentences cost each of them (0.5 − 0 + 1) twice (as a and as
b), 3.0:

    >>> eye, hardest_only = torch.eye(2), torch.zeros(2, 0, dtype=torch.long)
    >>> cycle_loss(eye, eye, eye, eye, hardest_only, hardest_only, margin=0.5).item()
    0.0
    >>> cycle_loss(eye, eye.flip(0), eye, eye, hardest_only, hardest_only, margin=0.5).item()
    3.0
"""

from __future__ import annotations

import torch

from xlsent.losses.triplet import triplet_ranking_loss


def cycle_loss(
    source: torch.Tensor,
    source_cycled: torch.Tensor,
    target: torch.Tensor,
    target_cycled: torch.Tensor,
    source_negatives: torch.Tensor,
    target_negatives: torch.Tensor,
    margin: float,
    hinge: bool = True,
) -> torch.Tensor:
    """L_cycle, a 0-dim tensor."""
    forward = triplet_ranking_loss(source @ source_cycled.T, source_negatives, margin, hinge)
    backward = triplet_ranking_loss(target_cycled @ target.T, target_negatives, margin, hinge)
    return forward + backward
