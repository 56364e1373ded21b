"""The critic's objective of unsupervised dual-pivot transfer.

Tien and Steinert-Threlkeld (2022), arXiv:2104.07642, §3.2, following Romanov et al. (2019)
and the Wasserstein GAN: a critic d scores a sentence vector (a real number, no sigmoid), and

    L_disc = d(y_s) − d(y_t)

averaged over a batch of source-language (the pivot, e.g. de) and target-language (en)
vectors. The critic is trained to lower L_disc; the encoder's head to raise it (its
adversarial loss is L_adv = −L_disc), so that the critic cannot tell the languages apart.

Inputs: the critic's scores of the source batch (B_s) and of the target batch (B_t).

Relations:
- One of `dualpivot-unsup`'s two terms: the critic steps (`critic_steps`, κ) lower it, then
  the head trains on −L_disc + λ·L_cycle (`cycle`; `xlsent.train.dualpivot`). It compares
  no pair, so with `cycle` it needs no translation (`unpaired`).

Example: mean source score 2, mean target score 1:

    >>> critic_loss(torch.tensor([1.0, 3.0]), torch.tensor([0.5, 0.5, 2.0])).item()
    1.0
"""

from __future__ import annotations

import torch


def critic_loss(source_scores: torch.Tensor, target_scores: torch.Tensor) -> torch.Tensor:
    """L_disc, a 0-dim tensor: the mean source score minus the mean target score."""
    return source_scores.mean() - target_scores.mean()
