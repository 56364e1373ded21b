"""Model FLOPs of a training step, forward + backward, in the usual count for a transformer.

6 · non-embedding matmul parameters · tokens, plus 12 · layers · hidden · seq · tokens for
attention (the count of PaLM's model FLOPs utilisation, Chowdhery et al. 2022, App. B), over
real (non-pad) tokens:
- every method: the encoder over the 2N sentences;
- AWP (`wacse`, `tr-awp`): a second encoder pass over the masked copies, plus the MLM head
  (dense h×h, then h×V) at the predicted positions;
- TLM (`tr-tlm`): an encoder pass over the concatenated pairs, plus the MLM head at the
  chosen positions;
- RTL (`dap`): the head's K layers over N × (source tokens + one [MASK] per English token)
  at width 2·(T-1), plus its MLM head on the English tokens, whose output layer has one row
  per id of the RTL vocabulary (the English ids, or all of them for `dap-all`).
WTR's word pooling and similarities and TR's similarity matrix are left out (under 0.1 % at
the xlm-roberta-base shape). docs/results.md quotes these counts' ratios between methods.
"""

from __future__ import annotations

from typing import Any

from xlsent.train.collate import Batch
from xlsent.train.objectives import Objectives


def encoder_flops(config: Any, tokens: int, seq: int, layers: int | None = None) -> float:
    """Forward + backward FLOPs of `layers` (default: all) encoder layers of `config` (a
    transformers config) over `tokens` tokens in sequences of `seq`."""
    h = config.hidden_size
    layers = config.num_hidden_layers if layers is None else layers
    per_layer = 4 * h * h + 2 * h * config.intermediate_size  # attention projections + MLP
    return 6 * layers * per_layer * tokens + 12 * layers * h * seq * tokens


def head_flops(config: Any, positions: int, rows: int | None = None) -> float:
    """Forward + backward FLOPs of an MLM head (dense h×h, then h×V) at `positions`; `rows`:
    V, the rows of its output layer (default the whole vocabulary)."""
    h = config.hidden_size
    return 6 * positions * (h * h + h * (config.vocab_size if rows is None else rows))


def rtl_rows(objectives: Objectives) -> int | None:
    """The rows of the RTL head's output layer: its vocabulary's ids (None: no RTL head)."""
    if objectives.rtl is None:
        return None
    vocabulary = objectives.rtl.vocabulary
    return objectives.encoder.config.vocab_size if vocabulary is None else len(vocabulary)


def model_flops(objectives: Objectives, batch: Batch) -> dict[str, float]:
    """The model FLOPs of one micro-batch, per component: `encoder`, and `awp`, `rtl`, `tlm`
    where the method has them."""
    config = objectives.encoder.config
    out = {"encoder": encoder_flops(config, int(batch.mask.sum()), batch.ids.shape[1])}
    if objectives.mlm is not None and batch.awp is not None:
        copies = int(batch.awp.mask.sum())
        out["awp"] = encoder_flops(config, copies, batch.awp.ids.shape[1]) + head_flops(
            config, len(batch.awp.targets)
        )
    if objectives.rtl is not None:
        n = batch.n_pairs
        source = int(batch.mask[:n, 1:].sum())
        targets = int(batch.rtl.mask.sum())
        width = 2 * (batch.ids.shape[1] - 1)
        layers = len(objectives.rtl.layers)
        out["rtl"] = encoder_flops(config, source + targets, width, layers) + head_flops(
            config, targets, rtl_rows(objectives)
        )
    if batch.lm is not None:  # TLM (tr-tlm): its own pass over the concatenated pairs
        out["tlm"] = encoder_flops(
            config, int(batch.lm.mask.sum()), batch.lm.ids.shape[1]
        ) + head_flops(config, len(batch.lm.targets))
    return out
