"""The runs a training benchmark can time (`--methods`) and each one's `TrainSettings`."""

from __future__ import annotations

from pathlib import Path

import harness
import yaml

from xlsent.config import validate
from xlsent.config.runs import NOT_PROGRAM_SETTINGS
from xlsent.train.settings import TrainSettings

SCHEMA = harness.ROOT / "workflow/schemas/config.schema.yaml"
DEMO_CONFIG = harness.ROOT / "resources/demo/config.yaml"
PAPER_CONFIG = harness.ROOT / "config.yaml"

# What each benchmarked run is; the config's run of that name adds its overrides.
RUNS = {
    "tr": {"method": "tr"},
    "wacse": {"method": "wacse"},
    "dap": {"method": "dap"},
    # DAP Table 1's TR + TLM baseline: TR + tlm_weight·TLM on the same pairs.
    "tr-tlm": {"method": "tr-tlm"},
    "tr-awp": {"method": "wacse", "wacse_weights": (0.8, 0.2, 0.0)},
    "tr-wtr": {"method": "wacse", "wacse_weights": (0.8, 0.0, 0.2)},
    # TR's negatives within each micro-batch instead of the whole batch (cached TR): the same
    # steps without the second encoder pass, when --micro-batch is below --batch.
    "tr-micro": {"method": "tr", "negatives": "micro_batch"},
    "wacse-micro": {"method": "wacse", "negatives": "micro_batch"},
    # AWP's exact eq. 4: every aligned word masked in its own copy (one sampled word: wacse).
    "wacse-exact": {"method": "wacse", "awp_samples": 0},
    # RTL's softmax over the whole vocabulary (the paper's eq. 4), not the English ids.
    "dap-all": {"method": "dap", "rtl_vocabulary": "all"},
}
# Runs that take another config run's overrides (their own settings on top).
CONFIG_RUN = {"dap-all": "dap"}
# multilingual-e5-small fine-tuned: the demo config's me5-tr's learning rate.
ME5_LR = 2e-5


def load_config(path: Path) -> dict:
    """A workflow config, validated (the schema's defaults filled in)."""
    return validate(yaml.safe_load(path.read_text()), SCHEMA)


def run_settings(config: dict, run: str, **overrides) -> TrainSettings:
    """The config's `train` block, the run's method (and its config overrides), `overrides`."""
    settings = {**config["train"], **RUNS[run]}
    spec = config["runs"].get(CONFIG_RUN.get(run, run))
    if spec is not None and spec["method"] == RUNS[run]["method"]:
        settings.update(spec.get("train") or {})
        settings.update(RUNS[run])
    settings = {k: v for k, v in settings.items() if k not in NOT_PROGRAM_SETTINGS["train"]}
    return TrainSettings(**{**settings, "seed": 0, **overrides})


def me5_settings(config: dict, run: str, freeze: bool, **overrides) -> TrainSettings:
    """The `me5` shape's settings: the demo config's `train` block, the run's method (its
    `RUNS` entry: the demo's runs' overrides are the scratch model's, left out, so `dap` has
    DAP's 2-layer RTL head), lr 2e-5 (the config's me5-tr), max_length 32, `freeze`."""
    settings = {k: v for k, v in config["train"].items() if k not in NOT_PROGRAM_SETTINGS["train"]}
    return TrainSettings(
        **{
            **settings,
            **RUNS[run],
            "seed": 0,
            "lr": ME5_LR,
            "max_length": 32,
            "freeze_word_embeddings": freeze,
            **overrides,
        }
    )


def described(settings: TrainSettings) -> dict:
    """The settings that tell the benchmarked runs apart, for the JSON."""
    keys = (
        "method",
        "wacse_weights",
        "awp_samples",
        "rtl_layers",
        "rtl_weight",
        "rtl_vocabulary",
        "pooler",
        "lr",
        "freeze_word_embeddings",
    )
    return {k: getattr(settings, k) for k in keys}
