"""What the trainer is given: the run's `train` settings (`TrainSettings`, parsed from the
schema's `train` block by `xlsent.arguments.settings_object`) and its model entry as the
trainer builds it (`ModelSpec`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlsent.defaults import left_out_at_default, schema_defaults
from xlsent.methods import METHODS, Method, setting
from xlsent.models.sentence import SentenceSettings


@dataclass(frozen=True)
@schema_defaults("train")
class TrainSettings:
    """The schema's `train` keys that the trainer takes, with the run's seed and method.
    Their defaults are the schema's (`schema_defaults`), written nowhere here."""

    seed: int
    method: str = "tr"  # the schema's default run's (`runs`); every job passes its own
    max_length: int
    lr: float
    head_lr: float | None
    weight_decay: float
    warmup_steps: int
    max_grad_norm: float
    batch_size: int
    micro_batch_size: int
    max_steps: int
    freeze_word_embeddings: bool
    freeze_encoder: bool
    eval_every: int
    checkpoint_every: int
    log_every: int
    peak_tflops: float | None
    tensorboard: bool
    temperature: float
    direction: str
    negatives: str
    tr_margin: float
    hard_negatives: int
    dev_max_pairs: int | None
    max_pairs: int | None
    device: str
    precision: str
    compile: bool
    pooler: str
    length_groups: int
    length_window: int
    language_embeddings: bool
    wacse_weights: tuple[float, float, float]
    awp_samples: int
    wtr_temperature: float
    rtl_weight: float
    rtl_layers: int
    rtl_vocabulary: str
    mlm_probability: float
    language_sampling: float
    tlm_weight: float
    tlm_input: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "wacse_weights", tuple(self.wacse_weights))  # JSON gives lists
        for key, allowed in (("rtl_vocabulary", RTL_VOCABULARIES), ("tlm_input", TLM_INPUTS)):
            if getattr(self, key) not in allowed:
                raise ValueError(
                    f"train.{key} is {getattr(self, key)!r}, not one of {', '.join(allowed)}"
                )

    @property
    def method_row(self) -> Method:
        """The run's method (`xlsent.methods.METHODS`)."""
        return METHODS[self.method]

    @property
    def pretraining(self) -> bool:
        """Whether the run only models language (it exports its last step, with its head)."""
        return self.method_row.pretraining

    @property
    def trains_a_head(self) -> bool:
        """Whether the method trains a head beside the encoder (`trains_a_head`)."""
        return trains_a_head(self.method, self)

    @property
    def sentences_per_pair(self) -> int:
        """Sentences a micro-batch draws per pair of micro_batch_size: monolingual methods'
        (MLM's) are sentences."""
        return 2 if self.method_row.monolingual else 1


# Keys that cannot change a number the training computes: how often it logs and saves (a
# resumed run continues exactly), what it reports its speed against, where it writes its
# curves. A checkpoint is resumed whatever they are (`identity`).
REPORTING = ("log_every", "checkpoint_every", "peak_tflops", "tensorboard")
# Keys whose default is the behaviour from before they existed (the schema's
# `x-left-out-at-default: true`), with that default: a job's settings leave them out at that
# default (`xlsent.config.runs.program_settings`), so that a version adding one plans no
# finished job again (a rule's params decide its reruns) and resumes every interrupted one.
LEFT_OUT_AT_DEFAULT = left_out_at_default()["train"]
# The fields added since checkpoints held `identity` (2026-11-29): a checkpoint written
# before hashed every other field (`xlsent.train.checkpoints.fingerprints`), and trained as
# each of them at its default does.
ADDED_SINCE_FIELD_HASH = (
    "peak_tflops",
    "tensorboard",
    "compile",
    "length_window",
    "tr_margin",
    "hard_negatives",
    "max_pairs",
)


def identity(settings: TrainSettings) -> dict:
    """What of `settings` a checkpoint must match to be resumed: every key that can change a
    number, as the job passes it (a key added at its default is left out, as before it
    existed)."""
    return {
        key: value
        for key, value in dataclasses.asdict(settings).items()
        if key not in REPORTING
        and not (key in LEFT_OUT_AT_DEFAULT and value == LEFT_OUT_AT_DEFAULT[key])
    }


def trains_a_head(method: str, settings: Mapping[str, Any] | TrainSettings) -> bool:
    """Whether a run of `method` with train `settings` (a config block or `TrainSettings`)
    trains a head beside the encoder: a head of its losses (`Method.heads`: the MLM head of a
    language-modelling objective or of WACSE's AWP at a weight above 0, DAP's RTL head), or
    the `mlp` pooler. With `freeze_encoder` the heads are all that trains."""
    return bool(METHODS[method].heads(settings)) or setting(settings, "pooler") == "mlp"


RTL_VOCABULARIES = ("english", "all")
TLM_INPUTS = ("xlm", "dap")


@dataclass(frozen=True)
class ModelSpec:
    """The run's model entry as the trainer builds it. `sentence`: the entry's pooling and
    prefix, which win over what a checkpoint it starts from records (`init_from`)."""

    init: str  # "pretrained" | "scratch"
    tokenizer_dir: Path
    pretrained_dir: Path | None = None
    shape: dict | None = None
    sentence: SentenceSettings = dataclasses.field(default_factory=SentenceSettings)
