"""The cycle loss of unsupervised dual-pivot transfer.

Tien and Steinert-Threlkeld (2022), arXiv:2104.07642, §3.2: linear maps F (source → target
space) and G (target → source) must bring a sentence back to itself:

    L_cycle = h(y_s, G(F(y_s))) + h(F(G(y_t)), y_t)

with h the triplet ranking loss (`xlsent.losses.triplet`): within each language's batch,
every sentence must be closer to its own round trip than to the other sentences' (the
hardest and n − 1 random ones, margin α).

Inputs: the unit vectors of the source batch and of its round trips (B_s×d each), the same
for the target batch, and each batch's random negatives (as `triplet_ranking_loss` takes).
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
