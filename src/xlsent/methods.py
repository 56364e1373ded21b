"""The run methods of the schema's `runs.*.method`, one row each (`Method`, in `METHODS`), and
the word aligners: the one table the rules, the config checks, the commands, the trainer and
the docs read.

A row says what the code asks of a method, so that nothing compares a method's name: its kind
of run (an encoder trained, a head over a frozen encoder, word vectors per language pair), the
terms of its loss (`Loss`: the objective, the setting that weighs it, the head beside the
encoder it trains), what its training reads (pairs; their aligned words, which need the align
stage; monolingual sentences; the tokenize stage's words), and the settings blocks its runs
take. A new method is its losses (`xlsent.losses`), its row here, the schema's
`runs.*.method` enum (which `tests/unit/test_methods.py` keeps equal to the rows) and its
tests; `docs/development.md`'s table of the rows is generated from them (`xlsent.docs`).

Kinds: encoder methods (`train` settings, a `model`), dual-pivot methods that train a head
over a frozen encoder (`dualpivot` settings, a `model`), and word-vector methods per language
pair (`bisent2vec` settings; Bi-Sent2vec, its CBOW baseline and the mapping baseline, which
adds `mapped` settings).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ENCODER = "encoder"
DUALPIVOT = "dual-pivot"
WORD_VECTORS = "word vectors"

# What a run's training reads (`Method.data`).
PAIRS = "pairs"  # the subword pairs (a dual-pivot run: the pivot's)
ALIGNED_PAIRS = "aligned pairs"  # the pairs with their words and links (the align stage's)
SENTENCES = "sentences"  # the pairs' sides as monolingual sentences, language by language
WORDS = "words"  # the tokenize stage's words of each language pair (word vectors)

# The language-modelling objectives (their batches are corrupted sequences: MLM's sentences,
# TLM's joined pairs).
LANGUAGE_MODELLING = ("mlm", "tlm")


@dataclass(frozen=True)
class Loss:
    """A term of a method's loss. `objective`: its name in the log and in
    `xlsent.train.objectives.Objectives.weights` (a module of `xlsent.losses` computes it);
    `weight`: the run setting that weighs it (`rtl_weight`; `wacse_weights.1`: item 1 of
    that list), None for a weight of 1; `head`: the module beside the encoder (or the
    dual-pivot head) that it trains; `optional`: a zero weight leaves the term out, and its
    head with it (WACSE's ablations)."""

    objective: str
    weight: str | None = None
    head: str | None = None
    optional: bool = False

    def weight_in(self, settings: Mapping[str, Any] | object) -> float:
        """The term's weight under a run's `settings` (a config block or a settings object)."""
        if self.weight is None:
            return 1.0
        key, _, item = self.weight.partition(".")
        value = setting(settings, key)
        return value[int(item)] if item else value


@dataclass(frozen=True)
class Method:
    """A run method (the module docstring). `about`: what it trains, for the docs;
    `blocks`: the settings blocks its runs take (the global block and a run's overrides of
    it); `binary`: a word-vector method trained by the C++ Bi-Sent2vec trainer that the
    `bisent2vec_build` rule compiles (the others train with fastText)."""

    name: str
    kind: str
    about: str
    losses: tuple[Loss, ...] = ()
    data: str = PAIRS
    blocks: tuple[str, ...] = ()
    binary: bool = False

    @property
    def needs_links(self) -> bool:
        """Whether its training reads the word aligner's links (the align stage runs, and a
        run's `aligner` chooses whose)."""
        return self.data == ALIGNED_PAIRS

    @property
    def monolingual(self) -> bool:
        """Whether it trains on monolingual sentences, drawn language by language."""
        return self.data == SENTENCES

    @property
    def language_model(self) -> str | None:
        """Its language-modelling objective (`LANGUAGE_MODELLING`), if it has one."""
        names = [loss.objective for loss in self.losses if loss.objective in LANGUAGE_MODELLING]
        return names[0] if names else None

    @property
    def pretraining(self) -> bool:
        """Whether an encoder method only models language (the run exports its last step,
        with its head: `xlsent.train.loop`)."""
        return self.kind == ENCODER and all(
            loss.objective in LANGUAGE_MODELLING for loss in self.losses
        )

    @property
    def chooses_a_layer(self) -> bool:
        """A dual-pivot method without a loss: it trains nothing and chooses a frozen layer."""
        return self.kind == DUALPIVOT and not self.losses

    def has(self, objective: str) -> bool:
        """Whether one of its losses is `objective`."""
        return any(loss.objective == objective for loss in self.losses)

    def weights(self, settings: Mapping[str, Any] | object) -> dict[str, float]:
        """Each loss's weight under `settings`, by its objective, in the row's order."""
        return {loss.objective: loss.weight_in(settings) for loss in self.losses}

    def ranks(self, settings: Mapping[str, Any] | object) -> bool:
        """Whether TR ranks translations under `settings` (present, with a positive weight):
        what hard negatives need."""
        return any(loss.objective == "tr" and loss.weight_in(settings) > 0 for loss in self.losses)

    def heads(self, settings: Mapping[str, Any] | object) -> tuple[str, ...]:
        """The heads its losses train under `settings`, each once (an optional loss at weight
        0 trains none)."""
        heads = [
            loss.head
            for loss in self.losses
            if loss.head and not (loss.optional and not loss.weight_in(settings))
        ]
        return tuple(dict.fromkeys(heads))


def setting(settings: Mapping[str, Any] | object, key: str) -> Any:
    """`key` of a config block (a mapping) or of a settings object."""
    return settings[key] if isinstance(settings, Mapping) else getattr(settings, key)


_ROWS = (
    Method(
        "tr",
        ENCODER,
        "translation ranking (the dual encoder)",
        (Loss("tr"),),
        blocks=("train",),
    ),
    Method(
        "wacse",
        ENCODER,
        "WACSE: α·TR + β·AWP + γ·WTR (`wacse_weights`)",
        (
            Loss("tr", "wacse_weights.0"),
            Loss("awp", "wacse_weights.1", head="mlm", optional=True),
            Loss("wtr", "wacse_weights.2", optional=True),
        ),
        data=ALIGNED_PAIRS,
        blocks=("train",),
    ),
    Method(
        "dap",
        ENCODER,
        "DAP: TR + RTL",
        (Loss("tr"), Loss("rtl", "rtl_weight", head="rtl")),
        blocks=("train",),
    ),
    Method(
        "mlm",
        ENCODER,
        "masked language modelling (pretraining)",
        (Loss("mlm", head="mlm"),),
        data=SENTENCES,
        blocks=("train",),
    ),
    Method(
        "tlm",
        ENCODER,
        "translation language modelling (pretraining)",
        (Loss("tlm", head="mlm"),),
        blocks=("train",),
    ),
    Method(
        "tr-tlm",
        ENCODER,
        "TR + TLM (DAP Table 1's baseline)",
        (Loss("tr"), Loss("tlm", "tlm_weight", head="mlm")),
        blocks=("train",),
    ),
    Method(
        "dualpivot-sup",
        DUALPIVOT,
        "a head over a frozen encoder on the pivot's pairs (L_sup)",
        (Loss("triplet", head="dualpivot"),),
        blocks=("dualpivot",),
    ),
    Method(
        "dualpivot-unsup",
        DUALPIVOT,
        "a head over a frozen encoder, adversarial: its critic on L_disc, the head with F and G "
        "on −L_disc + λ·L_cycle",
        (Loss("critic", head="critic"), Loss("cycle", "cycle_weight", head="maps")),
        blocks=("dualpivot",),
    ),
    Method(
        "dualpivot-layer",
        DUALPIVOT,
        "the frozen layer whose mean-pooled states retrieve the pivot's dev pairs best",
        blocks=("dualpivot",),
    ),
    Method(
        "bisent2vec",
        WORD_VECTORS,
        "Bi-Sent2vec word vectors per language pair (the C++ trainer)",
        data=WORDS,
        blocks=("bisent2vec",),
        binary=True,
    ),
    Method(
        "fasttext-cbow",
        WORD_VECTORS,
        "fastText CBOW on both sides (the monolingual baseline)",
        data=WORDS,
        blocks=("bisent2vec",),
    ),
    Method(
        "mapped",
        WORD_VECTORS,
        "fastText on each side, mapped onto English (Procrustes, MUSE's refinement)",
        data=WORDS,
        blocks=("bisent2vec", "mapped"),
    ),
)
METHODS: dict[str, Method] = {method.name: method for method in _ROWS}


def of_kind(kind: str) -> tuple[str, ...]:
    """The names of the methods of `kind`, in the table's order."""
    return tuple(name for name, method in METHODS.items() if method.kind == kind)


def taking(block: str) -> tuple[str, ...]:
    """The names of the methods whose runs take the settings block `block`."""
    return tuple(name for name, method in METHODS.items() if block in method.blocks)


ENCODER_METHODS = of_kind(ENCODER)
DUALPIVOT_METHODS = of_kind(DUALPIVOT)
WORD_VECTOR_METHODS = of_kind(WORD_VECTORS)
# The runs whose model directory encodes sentences (`xlsent.models.load`).
SENTENCE_ENCODER_METHODS = ENCODER_METHODS + DUALPIVOT_METHODS
# The methods whose training reads a word aligner's links.
LINKED_METHODS = tuple(name for name, method in METHODS.items() if method.needs_links)
# The word aligners (`align.method`), each with its settings block `align.<method>`.
ALIGN_METHODS = ("wspalign", "eflomal", "simalign")
