"""Model FLOPs of a training step, forward + backward, counted over its real (non-pad) tokens.

The usual count for a transformer (PaLM's model FLOPs, Chowdhery et al. 2022, arXiv:2204.02311,
App. B): a matmul of an m×k by a k×n matrix is 2mkn FLOPs forward and twice that backward, so
a layer of P matmul parameters costs 6·P per token, and attention's two products (QKᵀ, then
the weights times V) 12·h·l per token of a sentence of l tokens:

    encoder(lengths) = Σ_layers ( 6·P·Σ_i l_i + 12·h·Σ_i l_i² ),   P = 4h² + 2h·h_ff

summed over each sentence's own length l_i (padding is computed on a device but is not the
model's work). What a step counts, per micro-batch, by name:
- `encoder`: the pass over the 2N sentences (every method with pairs; `mlm` has none);
- `tr_cache`: with `negatives: batch` over several micro-batches (`xlsent.train.cached_tr`),
  the extra pass without a graph that gives the cached vectors: forward only, a third of
  `encoder`;
- `tr`: TR's similarity products, each query against every candidate (the gathered ones
  under several processes; the whole batch's, once per step, when cached), 6·d per pair of
  vectors and direction;
- `hard_negatives` (`train.hard_negatives`): the pass over the micro-batch's mined English
  negatives (and, cached, its pass without a graph, a third of it), and each query's
  products with its own k;
- `awp` (`wacse`, `tr-awp`): a pass over the masked copies, and the MLM head (dense h×h, then
  h×V) at their masked positions;
- `wtr` (`wacse`, `tr-wtr`): no pass of its own (it reads the TR pass's states); the word
  pooling (6·d per subword in a word) and each link's cosines with its pair's other side's
  words, both directions (6·d each);
- `rtl` (`dap`): the head's K layers over each row of source tokens and one [MASK] per
  English token, and its output layer at the English tokens, one row per id of the RTL
  vocabulary (the English ids, or all of them for `dap-all`);
- `mlm`, `tlm` (`mlm`; `tlm`, `tr-tlm`): a pass over the method's own sequences (sentences,
  or concatenated pairs), and the MLM head at the chosen positions.
Left out: embedding lookups, layer norms, softmaxes, activations, biases and the `mlp`
pooler's one h×h layer (together under 0.1 % at the xlm-roberta-base shape). With
`freeze_encoder` the count is still that of a trained encoder (model FLOPs, not what runs).
docs/results.md quotes these counts' ratios between methods.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from xlsent.train.collate import Batch
from xlsent.train.objectives import Objectives


def encoder_flops(
    config: Any, lengths: np.ndarray | torch.Tensor, layers: int | None = None
) -> float:
    """Forward + backward FLOPs of `layers` (default: all) encoder layers of `config` (a
    transformers config) over sentences of `lengths` real tokens each."""
    h = config.hidden_size
    layers = config.num_hidden_layers if layers is None else layers
    lengths = np.asarray(lengths, dtype=np.float64)
    per_layer = 4 * h * h + 2 * h * config.intermediate_size  # attention projections + MLP
    return float(layers * (6 * per_layer * lengths.sum() + 12 * h * (lengths**2).sum()))


def head_flops(config: Any, positions: int, rows: int | None = None) -> float:
    """Forward + backward FLOPs of an MLM head (dense h×h, then h×V) at `positions`; `rows`:
    V, the rows of its output layer (default the whole vocabulary)."""
    h = config.hidden_size
    return 6 * positions * (h * h + h * (config.vocab_size if rows is None else rows))


def similarity_flops(width: int, pairs: int) -> float:
    """Forward + backward FLOPs of `pairs` dot products of vectors of `width`."""
    return 6 * width * pairs


def rtl_rows(objectives: Objectives) -> int | None:
    """The rows of the RTL head's output layer: its vocabulary's ids (None: no RTL head)."""
    if objectives.rtl is None:
        return None
    vocabulary = objectives.rtl.vocabulary
    return objectives.encoder.config.vocab_size if vocabulary is None else len(vocabulary)


def _lengths(mask: torch.Tensor) -> np.ndarray:
    """Each row's real tokens (a batch on the CPU, as built: no device sync)."""
    return mask.sum(1).cpu().numpy()


def micro_batch_flops(
    objectives: Objectives, batch: Batch, cached: bool = False, world_size: int = 1
) -> dict[str, float]:
    """The model FLOPs of one micro-batch (a batch on the CPU: reading its masks costs no
    device sync), by the names of the module docstring. `cached`: TR's gradient is cached
    over the step (its pass without a graph counted here, its similarities by `cached_tr_flops`
    once per step); `world_size`: the processes whose candidates each query ranks."""
    config = objectives.encoder.config
    out = {}
    if batch.ids is not None:
        out["encoder"] = encoder_flops(config, _lengths(batch.mask))
        if cached:
            out["tr_cache"] = out["encoder"] / 3
        elif "tr" in objectives.weights:
            n = batch.n_pairs
            out["tr"] = _directions(objectives) * similarity_flops(
                config.hidden_size, n * n * world_size
            )
    if batch.hard is not None:
        passes = encoder_flops(config, _lengths(batch.hard.mask))
        out["hard_negatives"] = passes * (4 / 3 if cached else 1) + similarity_flops(
            config.hidden_size, batch.hard.index.numel()
        )
    if objectives.mlm is not None and batch.awp is not None:
        out["awp"] = encoder_flops(config, _lengths(batch.awp.mask)) + head_flops(
            config, len(batch.awp.targets)
        )
    if batch.wtr is not None:
        out["wtr"] = _wtr_flops(config.hidden_size, batch)
    if objectives.rtl is not None:
        n = batch.n_pairs
        rows = _lengths(batch.mask[:n, 1:]) + _lengths(batch.rtl.mask)
        layers = len(objectives.rtl.layers)
        out["rtl"] = encoder_flops(config, rows, layers) + head_flops(
            config, len(batch.rtl.targets), rtl_rows(objectives)
        )
    if batch.lm is not None:
        out[objectives.lm] = encoder_flops(config, _lengths(batch.lm.mask)) + head_flops(
            config, len(batch.lm.targets)
        )
    return out


def cached_tr_flops(objectives: Objectives, pairs: int, world_size: int = 1) -> float:
    """TR's similarities over a whole step of `pairs` pairs in this process (`cached_tr`):
    every process ranks all the step's queries against all its candidates."""
    queries = pairs * world_size
    width = objectives.encoder.config.hidden_size
    return _directions(objectives) * similarity_flops(width, queries * queries)


def _directions(objectives: Objectives) -> int:
    return 2 if objectives.settings.direction == "both" else 1


def _wtr_flops(width: int, batch: Batch) -> float:
    """WTR's word pooling (each subword of a word into its mean) and its cosines: each link's
    words against the other side's words of their pair, both ways."""
    wtr, n = batch.wtr, batch.n_pairs
    pooled = int((wtr.pool > 0).sum())
    pair = wtr.links[:, 0]
    words = wtr.valid.sum(1)
    candidates = int(words[n:][pair].sum() + words[:n][pair].sum())
    return similarity_flops(width, pooled + candidates)


class StepFlops:
    """The model FLOPs of one optimizer step, counted micro-batch by micro-batch as a step
    reads them (`count` passes each batch on, so that it wraps the step's iterator)."""

    def __init__(self, objectives: Objectives, cached: bool, world_size: int = 1):
        self.objectives, self.cached, self.world_size = objectives, cached, world_size
        self.pairs = 0
        self.parts: dict[str, float] = {}

    def count(self, batch: Batch) -> Batch:
        """Add `batch`'s FLOPs (`micro_batch_flops`); return it."""
        for name, value in micro_batch_flops(
            self.objectives, batch, self.cached, self.world_size
        ).items():
            self.parts[name] = self.parts.get(name, 0.0) + value
        self.pairs += batch.n_pairs
        return batch

    def total(self) -> dict[str, float]:
        """The step's FLOPs by name, the cached similarities included."""
        if not self.cached:
            return dict(self.parts)
        return {**self.parts, "tr": cached_tr_flops(self.objectives, self.pairs, self.world_size)}
