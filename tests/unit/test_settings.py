"""Every setting has one home, the config schema: the dataclasses that carry settings into
the programs have exactly the schema's keys, less what their program does not take
(`xlsent.config.NOT_PROGRAM_SETTINGS`), and the schema's defaults."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from support import ROOT

from xlsent.bisent2vec.mapped import MappedSettings
from xlsent.bisent2vec.trainer import Bisent2vecSettings
from xlsent.config import NOT_PROGRAM_SETTINGS, program_settings
from xlsent.corpus.clean import CleanConfig
from xlsent.corpus.sample import SampleConfig
from xlsent.models.encoder import SHAPE_KEYS
from xlsent.train.dualpivot import DualPivotSettings
from xlsent.train.loop import TrainSettings

SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())["properties"]


def _defaults(properties: dict) -> dict:
    return {key: prop["default"] for key, prop in properties.items()}


def _fields(cls: type) -> dict:
    """A dataclass's fields with defaults (lists for tuples, as the schema writes them)."""
    out = {}
    for field in dataclasses.fields(cls):
        value = field.default
        out[field.name] = list(value) if isinstance(value, tuple) else value
    return out


# (dataclass, its settings in the schema, fields that are not config settings)
CASES = {
    "train": (
        TrainSettings,
        program_settings("train", _defaults(SCHEMA["train"]["properties"])),
        {"seed": "the run's seed", "method": "the run's method"},
    ),
    "dualpivot": (
        DualPivotSettings,
        program_settings("dualpivot", _defaults(SCHEMA["dualpivot"]["properties"])),
        {"seed": "the run's seed", "method": "the run's method"},
    ),
    "bisent2vec": (
        Bisent2vecSettings,
        program_settings("bisent2vec", _defaults(SCHEMA["bisent2vec"]["properties"])),
        {"seed": "the run's seed"},
    ),
    "mapped": (MappedSettings, _defaults(SCHEMA["mapped"]["properties"]), {}),
    "corpus.clean": (
        CleanConfig,
        _defaults(SCHEMA["corpus"]["properties"]["clean"]["properties"]),
        {"batch_size": "rows per batch in memory, not a result setting"},
    ),
    "corpus (sampling)": (
        SampleConfig,
        {
            key: SCHEMA["corpus"]["properties"][key]["default"]
            for key in (
                "max_pairs",
                "dev_pairs",
                "dev_fraction",
                "seed",
                "min_train_pairs",
                "min_dev_pairs",
                "min_pairs_action",
                "per_source_cap",
            )
        },
        {"batch_size": "rows per batch in memory, not a result setting"},
    ),
}


@pytest.mark.parametrize("block", list(CASES))
def test_settings_dataclasses_have_the_schemas_keys_and_defaults(block):
    cls, schema, extra = CASES[block]
    fields = _fields(cls)
    assert set(fields) - set(extra) == set(schema), f"{cls.__name__} and `{block}` differ"
    differ = {key: (fields[key], schema[key]) for key in schema if fields[key] != schema[key]}
    assert not differ, f"{cls.__name__} defaults that are not the schema's: {differ}"


def test_the_job_resources_are_schema_keys():
    """What the programs do not take is named once, and names real keys."""
    for block, keys in NOT_PROGRAM_SETTINGS.items():
        assert set(keys) <= set(SCHEMA[block]["properties"]), block


def test_a_scratch_encoders_shape_keys_are_the_schemas():
    model = SCHEMA["models"]["additionalProperties"]
    scratch = model["then"]["properties"]
    shape = {key for key in scratch if key not in ("vocab_size", "tokenizer_sentences")}
    assert shape == set(SHAPE_KEYS)
