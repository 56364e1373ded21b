"""Translation ranking over the whole batch on one GPU: gradient caching.

DAP (Li et al. 2023) trains on 8 GPUs × 128 pairs and gathers every GPU's sentence vectors:
each query ranks its translation among all 1024 English sentences of the step. One GPU
holds a micro-batch of 256 at most; ranking within it gives 255 negatives, not 1023.
Gradient caching (Gao, Zhang, Han and Callan 2021, "Scaling Deep Contrastive Learning Batch
Size under Memory Limited Setup", arXiv:2101.06983) computes the full batch's gradient
exactly, at the memory of one micro-batch:

1. encode every micro-batch without a graph, keeping only its sentence vectors v (B×d for
   the batch), and the random state each pass started from;
2. compute the batch's TR loss on all of them (every process's vectors gathered) and its
   gradient with respect to them, g = ∂(α·L_TR)/∂v (B×d);
3. encode each micro-batch again, from the same random state (dropout draws the same masks,
   so the vectors are the same), and backpropagate ⟨v, g⟩ through it: by the chain rule its
   gradient with respect to the parameters is exactly that of α·L_TR through this
   micro-batch.

The word-level objectives (AWP, WTR, RTL) are per pair: step 3 adds them per micro-batch, as
without caching. The cost is one more encoder pass without a graph per micro-batch, about a
third of a step's compute.

Relations:
- The cached twin of `xlsent.losses.tr` (`negatives: batch`, the default; chosen in
  `xlsent.train.step`): step 2 calls `translation_ranking_loss` on every micro-batch's
  vectors at once, so the value and the parameter gradient are those of one pass over the
  whole batch. `negatives: micro_batch` calls it per micro-batch in
  `xlsent.train.objectives.Objectives.forward`, with fewer negatives and one pass fewer.
- `xlsent.train.objectives.Objectives.forward` takes step 2's gradients (`tr_grads`) for
  step 3, where the per-pair terms (`awp`, `wtr`, `rtl`, TLM) are added as without caching.
- TR's additive margin and hard negatives (`translation_ranking_loss`'s `margin` and
  `negatives`) are taken in step 2 as in the plain loss; a micro-batch's hard negatives are
  encoded in both of its passes, after its pairs, and step 2 returns their gradients too.
- sentence-transformers' CachedMultipleNegativesRankingLoss is the same technique around
  its MultipleNegativesRankingLoss, which TR's `fwd` is.

Example: two micro-batches of one pair each (rows: the non-English sentence, then its
translation). Alone, a micro-batch's query has no negative (loss 0); over the batch each
query ranks both translations, log(1 + e^-1) at τ = 1:

    >>> first = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    >>> second = torch.tensor([[0.0, 1.0], [0.0, 1.0]])
    >>> translation_ranking_loss(first[:1], first[1:], temperature=1.0).item()
    0.0
    >>> grads, loss = batch_gradients([first, second], weight=1.0, temperature=1.0, direction="fwd")
    >>> round(loss.item(), 4), [tuple(g.shape) for g in grads]
    (0.3133, [(2, 2), (2, 2)])
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from xlsent.losses.tr import negative_slots, translation_ranking_loss


@dataclass(frozen=True)
class RandomState:
    """The random state an encoder pass draws its dropout masks from."""

    cpu: torch.Tensor
    cuda: torch.Tensor | None

    @classmethod
    def capture(cls, device: torch.device) -> RandomState:
        cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        return cls(torch.get_rng_state(), cuda)

    def restore(self, device: torch.device) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state(self.cuda, device)


def batch_gradients(
    vectors: list[torch.Tensor],
    weight: float,
    temperature: float,
    direction: str,
    world_size: int = 1,
    margin: float = 0.0,
    hard_index: list[torch.Tensor] | None = None,
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Step 2: the gradient of `weight`·L_TR over the whole batch with respect to each
    micro-batch's sentence vectors, and the loss L_TR (unweighted; a 0-dim tensor on the
    vectors' device, which the step reads with its other losses).

    `vectors`: this process's micro-batches, each 2N_k×d (the N_k non-English sentences,
    then their English translations), computed without a graph. With several processes,
    every process's vectors are gathered: each query ranks its translation among every
    English sentence of the step, and the gradients returned are this process's rows.
    `margin`: TR's additive margin (`translation_ranking_loss`). `hard_index` (hard
    negatives): per micro-batch, N_k×k rows of its hard negatives' vectors, which follow the
    2N_k in its `vectors` ((2N_k + M_k)×d), -1 where a pair has none; each query ranks its
    own (gathered with it under several processes), and their gradients are returned too.
    """
    if hard_index is None:
        sizes = [len(v) // 2 for v in vectors]
    else:
        sizes = [len(index) for index in hard_index]
    xx = torch.cat([v[:n] for v, n in zip(vectors, sizes, strict=True)]).float()
    en = torch.cat([v[n : 2 * n] for v, n in zip(vectors, sizes, strict=True)]).float()
    hard = mask = None
    if hard_index is not None:
        # Each query's own negatives as N×k×d.
        slots = [
            negative_slots(v[2 * n :].float(), index)
            for v, n, index in zip(vectors, sizes, hard_index, strict=True)
        ]
        hard = torch.cat([vectors_of for vectors_of, _ in slots])
        mask = torch.cat([present for _, present in slots])
    offset = 0
    if world_size > 1:
        xx, en = _all_gather(xx), _all_gather(en)
        if hard is not None:
            # gloo gathers no bool tensors: the mask travels as bytes.
            hard, mask = _all_gather(hard), _all_gather(mask.to(torch.uint8)).bool()
        offset = dist.get_rank() * sum(sizes)
    leaves = [xx.requires_grad_(True), en.requires_grad_(True)]
    if hard is not None:
        leaves.append(hard.requires_grad_(True))
    with torch.enable_grad():
        loss = translation_ranking_loss(
            xx, en, temperature, direction, margin=margin, negatives=hard, negatives_mask=mask
        )
        found = torch.autograd.grad(weight * loss, leaves)
    grads, start = [], offset
    for k, n in enumerate(sizes):
        rows = slice(start, start + n)
        parts = [found[0][rows], found[1][rows]]
        if hard is not None:
            # Back from the N×k slots to the micro-batch's negative rows (one slot each).
            index, slots = hard_index[k], found[2][rows]
            valid = index >= 0
            rows_of = torch.zeros(len(vectors[k]) - 2 * n, slots.shape[-1], device=slots.device)
            parts.append(rows_of.index_add_(0, index[valid], slots[valid]))
        grads.append(torch.cat(parts))
        start += n
    return grads, loss.detach()


def _all_gather(tensor: torch.Tensor) -> torch.Tensor:
    """Every process's `tensor` (the same shape on each), in rank order; no gradient flows
    back: each process backpropagates its own rows."""
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor.contiguous())
    return torch.cat(parts)
