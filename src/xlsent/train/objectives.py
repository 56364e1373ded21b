"""What a run optimises, per micro-batch: the method's losses on one shared-weight encoder.

- `tr`: L = L_TR (the spine's dual encoder); with `tr_margin` LaBSE's additive margin, with
  `hard_negatives` each pair's mined English negatives among its candidates (a pass of their
  own over the micro-batch's negatives), as in every method with TR.
- `wacse`: L = α·L_TR + β·L_AWP + γ·L_WTR (WACSE eq. 11; `wacse_weights` = (α, β, γ), by
  default the paper's); a zero weight skips its objective (TR+AWP, TR+WTR ablations).
- `dap`: L = L_TR + w·L_RTL (DAP eq. 7; `rtl_weight` 0.8, the weight the released code's
  0.1 has on 8 GPUs: `xlsent.losses.rtl`); RTL's softmax over the English token ids that the
  trainer passes (`rtl_vocabulary: english`, DAP's code) or over every id.
- `mlm`: L = L_MLM on monolingual sentences (pretraining, `xlsent.losses.mlm`).
- `tlm`: L = L_TLM on concatenated pairs; `tr-tlm`: L = L_TR + w·L_TLM (DAP Table 1's TR+TLM
  baseline; `tlm_weight`), the pairs laid out as XLM's or as DAP's code (`tlm_input`).

Which losses a method has, what weighs each and which head each trains is the method's row
(`xlsent.methods.METHODS`); this module computes them.

A micro-batch of N pairs is encoded as 2N sentences in one pass (the N non-English sides,
then their N English translations); TR uses their sentence vectors (the model's pooling,
`xlsent.models.sentence`), WTR the same pass's word vectors, RTL the non-English token
states, and AWP one more pass over masked copies. MLM
and TLM encode their own corrupted sequences; the MLM head is one per encoder (AWP predicts
with the head an `mlm` run trained, when the run starts from one).
The batch arrives built (`collator`, `xlsent.train.collate`); here the encoder and the heads
run and the losses (`xlsent.losses`, pure tensor functions) are called and weighed.

Beside its losses a pass leaves diagnostics in `Objectives.diagnostics`, which the step adds
up over its micro-batches and the log reports (`xlsent.train.step.accumulate`): with AWP, the
mean cross-entropy of one AWP term and the batch's links per sentence, the two factors of
eq. 5's logged estimate (`xlsent.losses.awp`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from xlsent.losses.awp import aligned_word_prediction_loss, term_cross_entropy
from xlsent.losses.mlm import masked_lm_loss
from xlsent.losses.rtl import representation_translation_loss
from xlsent.losses.tr import Gather, negative_slots, translation_ranking_loss
from xlsent.losses.wtr import word_translation_ranking_loss
from xlsent.methods import ENCODER_METHODS, METHODS
from xlsent.models.mlm_head import mlm_head
from xlsent.models.rtl_head import RTLHead, first_position
from xlsent.models.sentence import SentenceSettings, pool
from xlsent.train.collate import Batch, Collator, Tokens
from xlsent.train.settings import TrainSettings

# A diagnostic of one pass: (numerator, denominator), which a step sums over its micro-batches
# before dividing. A 2-vector when computed on the device (read with the step's losses, once),
# two numbers when the host knows them already (reading them from the device would wait).
Diagnostic = torch.Tensor | tuple[float, float]


class Objectives(nn.Module):
    """The encoder and the heads its method trains; `forward(batch)` is the loss, and
    `collator` builds the batches that its losses read."""

    def __init__(
        self,
        encoder: nn.Module,
        settings: TrainSettings,
        tokens: Tokens,
        language_ids: dict[str, int] | None = None,
        pretrained_dir: str | None = None,
        gather: Gather | None = None,
        rtl_vocabulary: np.ndarray | None = None,
    ):
        """`rtl_vocabulary`: the token ids RTL's output layer keeps (`dap`; the trainer passes
        the English training side's under `rtl_vocabulary: english`); None: every id."""
        super().__init__()
        if settings.method not in ENCODER_METHODS:
            raise ValueError(
                f"unknown method {settings.method!r}; methods: {', '.join(ENCODER_METHODS)}"
            )
        self.encoder = encoder
        self.settings = settings
        self._compiled = compiled(encoder) if settings.compile else None
        # The model's pooling, which the trainer records in its config (`SentenceSettings`).
        self.pooling = SentenceSettings.read(encoder.config).pooling
        self.gather = gather
        # The last `forward`'s diagnostics (`Diagnostic`), by the name the log gives them.
        self.diagnostics: dict[str, Diagnostic] = {}
        method = METHODS[settings.method]
        # Each loss's weight, by its objective (the method's row: `Method.losses`).
        self.weights = method.weights(settings)
        self.lm = method.language_model
        if settings.hard_negatives and "tr" not in self.weights:
            raise ValueError(
                f"train.hard_negatives: method {settings.method!r} has no TR to rank them"
            )
        self.mlm = (
            mlm_head(encoder.config, encoder.get_input_embeddings(), pretrained_dir)
            if self.weights.get("awp") or self.lm
            else None
        )
        self.rtl = (
            RTLHead(
                encoder,
                settings.rtl_layers,
                tokens.mask,
                pretrained_dir,
                rtl_vocabulary,
                max_length=settings.max_length,
            )
            if "rtl" in self.weights
            else None
        )
        self.collator = Collator(
            tokens,
            language_ids,
            ranking="tr" in self.weights,
            wtr=bool(self.weights.get("wtr")),
            awp_samples=settings.awp_samples if self.weights.get("awp") else None,
            rtl=self.rtl is not None,
            lm=self.lm,
            mlm_probability=settings.mlm_probability,
            vocab_size=encoder.config.vocab_size,
            tlm_input=settings.tlm_input,
            hard_negatives=settings.hard_negatives,
        )
        # The checkpoint's pooler is never read: no gradient for DDP to wait for, and the
        # export keeps it as it was loaded.
        if getattr(encoder, "pooler", None) is not None:
            encoder.pooler.requires_grad_(False)
        self.mlp = None
        if settings.pooler == "mlp":
            # DAP's code (SimCSE's mlp_only_train, its `cls.mlp`) trains TR through a freshly
            # initialised dense + tanh over the sentence vector (CLS there), a module of its
            # own beside the encoder: evaluation drops it, and the export never holds it.
            # skip_init: the dense layer's only draw is the model's own initialisation.
            width = encoder.config.hidden_size
            dense = torch.nn.utils.skip_init(nn.Linear, width, width)
            encoder._init_weights(dense)
            self.mlp = nn.Sequential(OrderedDict(dense=dense, activation=nn.Tanh()))

    def forward(
        self, batch: Batch, tr_grads: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The weighted loss of `batch` (on this module's device) and its unweighted parts.

        `tr_grads` ((2N + M)×d, `xlsent.train.cached_tr`): the gradient of the whole batch's
        weighted TR loss with respect to this micro-batch's sentence vectors (and its M hard
        negatives'), computed beforehand. The TR term is then ⟨vectors, tr_grads⟩, whose
        gradient with respect to the parameters is that of the batch's TR loss through this
        micro-batch; its value is not a loss, and `parts` holds no "tr".
        """
        s, n = self.settings, batch.n_pairs
        loss, parts = torch.zeros(()), {}
        self.diagnostics = {}
        if batch.ids is not None:
            hidden = self.encode(batch.ids, batch.mask, batch.types)
            vectors = self.sentence_vectors(hidden, batch.mask)
            hard = None if batch.hard is None else self._negative_vectors(batch, hidden)
            if tr_grads is None:
                negatives, present = (None, None)
                if hard is not None:
                    negatives, present = negative_slots(hard, batch.hard.index)
                parts["tr"] = translation_ranking_loss(
                    vectors[:n],
                    vectors[n:],
                    s.temperature,
                    s.direction,
                    self.gather,
                    margin=s.tr_margin,
                    negatives=negatives,
                    negatives_mask=present,
                )
                loss = self.weights["tr"] * parts["tr"]
            else:
                if hard is not None:
                    vectors = torch.cat([vectors, hard])
                loss = (vectors.float() * tr_grads).sum()
            if self.weights.get("wtr"):
                parts["wtr"] = self._wtr(batch, hidden)
            if self.weights.get("awp"):
                parts["awp"] = self._awp(batch, hidden)
            if self.rtl is not None:
                parts["rtl"] = self._rtl(batch, hidden)
        if self.lm is not None:
            parts[self.lm] = self._language_model(batch)
        loss = loss + sum(self.weights[name] * parts[name] for name in parts if name != "tr")
        return loss, parts

    def sentence_vectors(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """TR's sentence vectors: the model's pooling of the last hidden states (B×T×d) over
        `mask` (B×T), through the freshly initialised MLP (dense + tanh) with `pooler: mlp`
        (training only: evaluation takes the pooled vector)."""
        vectors = pool(hidden, mask, self.pooling)
        return vectors if self.mlp is None else self.mlp(vectors)

    def embed(self, batch: Batch) -> torch.Tensor:
        """The sentence vectors (2N×d) of `batch`, as `forward` computes them, and after them
        its M hard negatives' ((2N + M)×d), as `forward` encodes them: after the pairs."""
        hidden = self.encode(batch.ids, batch.mask, batch.types)
        vectors = self.sentence_vectors(hidden, batch.mask)
        if batch.hard is None:
            return vectors
        return torch.cat([vectors, self._negative_vectors(batch, hidden)])

    def _negative_vectors(self, batch: Batch, hidden: torch.Tensor) -> torch.Tensor:
        """TR's sentence vectors (M×d) of the batch's hard negatives: a pass of their own,
        each padded to their own longest (`hidden`: the pairs' states, for an empty one)."""
        hard = batch.hard
        if not len(hard.ids):
            return hidden.new_zeros(0, hidden.shape[-1])
        return self.sentence_vectors(self.encode(hard.ids, hard.mask, hard.types), hard.mask)

    def encode(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        types: torch.Tensor | None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Last hidden states of a padded batch, computed in `length_groups` passes over
        length-sorted groups of rows, each padded only to its own longest row. Attention never
        sees padding, so the states are those of one pass; the saving is the padding.
        `positions`: each token's position counted from 0 (TLM restarts them), by default
        its column. A row's length is up to its last real token: `tlm_input: dap` rows hold
        padding between their two sides. With `compile`, the passes are the compiled
        forward's (`compiled`)."""
        if positions is not None:
            positions = self._position_ids(positions, mask)
        groups = self.settings.length_groups

        def part_of(tensor: torch.Tensor | None, rows, width: int) -> torch.Tensor | None:
            return None if tensor is None else tensor[rows, :width]

        run = self._compiled or self.encoder
        if groups <= 1:
            return run(
                input_ids=ids, attention_mask=mask, token_type_ids=types, position_ids=positions
            ).last_hidden_state
        lengths = (mask * torch.arange(1, mask.shape[1] + 1, device=mask.device)).amax(1)
        hidden = None
        for part in torch.argsort(lengths).chunk(groups):
            width = int(lengths[part].max())
            states = run(
                input_ids=ids[part, :width],
                attention_mask=mask[part, :width],
                token_type_ids=part_of(types, part, width),
                position_ids=part_of(positions, part, width),
            ).last_hidden_state
            if hidden is None:
                hidden = states.new_zeros(*ids.shape, states.shape[-1])
            hidden[part, :width] = states
        return hidden

    def _position_ids(self, positions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The encoder's position ids of positions counted from 0: XLM-R and RoBERTa number
        real tokens from padding_idx + 1 and give padding padding_idx; BERT counts from 0."""
        first = first_position(self.encoder.embeddings)
        if first == 0:
            return positions
        return torch.where(mask.bool(), positions + first, first - 1)  # padding: padding_idx

    def _language_model(self, batch: Batch) -> torch.Tensor:
        """MLM or TLM: the corrupted sequences encoded, the MLM head at the chosen positions."""
        lm = batch.lm
        hidden = self.encode(lm.ids, lm.mask, lm.types, lm.positions)
        states = hidden[lm.predict[:, 0], lm.predict[:, 1]]
        return masked_lm_loss(self.mlm(states), lm.targets)

    def _wtr(self, batch: Batch, hidden: torch.Tensor) -> torch.Tensor:
        """WTR over the word vectors of the pass that gave the sentence vectors."""
        n, wtr = batch.n_pairs, batch.wtr
        words = word_vectors(hidden, wtr.pool)
        return word_translation_ranking_loss(
            words[:n],
            wtr.valid[:n],
            words[n:],
            wtr.valid[n:],
            wtr.links,
            self.settings.wtr_temperature,
        )

    def _awp(self, batch: Batch, hidden: torch.Tensor) -> torch.Tensor:
        """AWP: one more encoder pass, over the masked copies, and the MLM head at the masked
        positions. Its diagnostics: the mean cross-entropy of a term over the micro-batch's
        predictions (from the same logits, without gradient) and its links per sentence."""
        awp = batch.awp
        sentences = 2 * batch.n_pairs
        if awp is None:  # no aligned word in this micro-batch: no term, no link
            # Its sentences count all the same, in the step's links per sentence.
            self.diagnostics["awp_term_ce"] = hidden.new_zeros(2, dtype=torch.float32)
            self.diagnostics["awp_links_per_sentence"] = (0.0, float(sentences))
            return hidden.sum() * 0.0
        masked = self.encode(awp.ids, awp.mask, awp.types)
        states = masked[awp.predict[:, 0], awp.predict[:, 1]]
        logits = self.mlm(states)
        self.diagnostics["awp_term_ce"] = term_cross_entropy(logits, awp.targets, awp.terms)
        # The count back from the collator's ratio, so that micro-batches add as links.
        links = awp.links_per_sentence * sentences
        self.diagnostics["awp_links_per_sentence"] = (links, float(sentences))
        return aligned_word_prediction_loss(logits, awp.targets, awp.weights, batch.n_pairs)

    def _rtl(self, batch: Batch, hidden: torch.Tensor) -> torch.Tensor:
        """RTL: the head reads the non-English token states after CLS (DAP's f*(x)) and
        predicts the English tokens (each target id as its row of the head's output layer)."""
        n = batch.n_pairs
        logits = self.rtl(hidden[:n, 1:], batch.mask[:n, 1:], batch.rtl.mask)
        return representation_translation_loss(logits, self.rtl.target_rows(batch.rtl.targets))


def compiled(encoder: nn.Module) -> Callable[..., Any]:
    """`encoder`'s forward compiled by torch.compile (`train.compile`), for the training passes
    (`Objectives.encode`); the module itself stays as it is, for dev P@1 and the export, and
    its state dict keeps its names (a compiled module would prefix them).

    Shapes are dynamic: every micro-batch is padded to its own longest row, and a graph per
    width would recompile for every new one. Random numbers are eager PyTorch's
    (`fallback_random`): inductor's own draw other dropout masks from the same random state
    (gradient caching's replay holds either way, both passes seeding from it), and the run
    would then differ from the uncompiled one by more than rounding."""
    return torch.compile(encoder.forward, dynamic=True, options={"fallback_random": True})


def word_vectors(hidden: torch.Tensor, pool: torch.Tensor) -> torch.Tensor:
    """Word vectors (S×W×d) from token states (S×T×d) and averaging weights (S×W×T): each
    word's mean subword state (`xlsent.train.collate.word_pooling`)."""
    return torch.bmm(pool.to(hidden.dtype), hidden)
