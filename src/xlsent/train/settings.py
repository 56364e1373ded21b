"""What the trainer is given: the run's `train` settings (`TrainSettings`, parsed from the
schema's `train` block by `xlsent.arguments.settings_object`) and its model entry as the
trainer builds it (`ModelSpec`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xlsent.models.sentence import SentenceSettings


@dataclass(frozen=True)
class TrainSettings:
    seed: int
    method: str = "tr"
    max_length: int = 32
    lr: float = 5e-5
    head_lr: float | None = None
    weight_decay: float = 0.01
    warmup_steps: int = 0
    max_grad_norm: float = 1.0
    batch_size: int = 1024
    micro_batch_size: int = 256
    max_steps: int = 100_000
    freeze_word_embeddings: bool = False
    freeze_encoder: bool = False
    eval_every: int = 2000
    checkpoint_every: int = 2000
    log_every: int = 50
    peak_tflops: float | None = None
    tensorboard: bool = False
    temperature: float = 0.05
    direction: str = "fwd"
    negatives: str = "batch"
    tr_margin: float = 0.0
    hard_negatives: int = 0
    dev_max_pairs: int | None = None
    max_pairs: int | None = None
    device: str = "auto"
    precision: str = "bf16"
    compile: bool = False
    pooler: str = "cls"
    length_groups: int = 1
    length_window: int = 0
    language_embeddings: bool = False
    wacse_weights: tuple[float, float, float] = (0.8, 0.1, 0.1)
    awp_samples: int = 1
    wtr_temperature: float = 0.05
    rtl_weight: float = 0.8
    rtl_layers: int = 2
    rtl_vocabulary: str = "english"
    mlm_probability: float = 0.15
    language_sampling: float = 0.3
    tlm_weight: float = 1.0
    tlm_input: str = "xlm"

    def __post_init__(self) -> None:
        object.__setattr__(self, "wacse_weights", tuple(self.wacse_weights))  # JSON gives lists
        for key, allowed in (("rtl_vocabulary", RTL_VOCABULARIES), ("tlm_input", TLM_INPUTS)):
            if getattr(self, key) not in allowed:
                raise ValueError(
                    f"train.{key} is {getattr(self, key)!r}, not one of {', '.join(allowed)}"
                )

    @property
    def pretraining(self) -> bool:
        """Whether the run only models language (it exports its last step, with its head)."""
        return self.method in PRETRAINING

    @property
    def trains_a_head(self) -> bool:
        """Whether the method trains a head beside the encoder (`trains_a_head`)."""
        return trains_a_head(self.method, self.wacse_weights, self.pooler)

    @property
    def sentences_per_pair(self) -> int:
        """Sentences a micro-batch draws per pair of micro_batch_size: MLM's are sentences."""
        return 2 if self.method == "mlm" else 1


PRETRAINING = ("mlm", "tlm")

# Keys that cannot change a number the training computes: how often it logs and saves (a
# resumed run continues exactly), what it reports its speed against, where it writes its
# curves. A checkpoint is resumed whatever they are (`identity`).
REPORTING = ("log_every", "checkpoint_every", "peak_tflops", "tensorboard")
# Keys whose default is the behaviour from before they existed: a job's settings leave them
# out at that default (`xlsent.config.runs.program_settings`), so that a version adding one
# plans no finished job again (a rule's params decide its reruns) and resumes every
# interrupted one.
LEFT_OUT_AT_DEFAULT = {
    "head_lr": None,
    "freeze_encoder": False,
    "peak_tflops": None,
    "tensorboard": False,
    "compile": False,
    "length_window": 0,
    "tr_margin": 0.0,
    "hard_negatives": 0,
    "max_pairs": None,
}
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


def trains_a_head(method: str, wacse_weights: Sequence[float], pooler: str) -> bool:
    """Whether a run trains a head beside the encoder: the MLM head of a language-modelling
    objective or of WACSE's AWP (weight β above 0), DAP's RTL head, the `mlp` pooler. With
    `freeze_encoder` the heads are all that trains."""
    language_modelling = method in ("mlm", "tlm", "tr-tlm")
    awp = method == "wacse" and wacse_weights[1] > 0
    return language_modelling or awp or method == "dap" or pooler == "mlp"


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
