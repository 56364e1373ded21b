"""Every setting has one home, the config schema: the dataclasses that carry settings into
the programs have exactly the schema's keys, less what their program does not take (the
schema's `x-program: false`: `xlsent.config.NOT_PROGRAM_SETTINGS`), and the schema's
defaults, which they write nowhere (`xlsent.defaults.schema_defaults`); config.yaml holds
only what differs from those defaults; a command's `--settings` names a key it does not
know."""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import re

import pytest
import yaml
from support import ROOT

from xlsent.align.simalign import SimAlignConfig
from xlsent.align.statistical import EflomalConfig
from xlsent.align.wspalign import WSPAlignConfig
from xlsent.arguments import settings_object
from xlsent.bisent2vec.mapped import MappedSettings
from xlsent.bisent2vec.trainer import Bisent2vecSettings
from xlsent.cli import main
from xlsent.config import (
    NOT_PROGRAM_SETTINGS,
    clean_settings,
    encoding_settings,
    load,
    program_settings,
    run_max_length,
)
from xlsent.config.runs import LEFT_OUT_AT_DEFAULT
from xlsent.corpus.clean_base import CleanConfig
from xlsent.corpus.sample import SampleConfig
from xlsent.dictionaries import SplitSettings
from xlsent.evaluate import TATOEBA_TEXTS, EncodingSettings
from xlsent.evaluate.mining_set import MiningSetSettings
from xlsent.hard_negatives.encode import PoolEncoding
from xlsent.hard_negatives.mine import MiningSettings
from xlsent.methods import ALIGN_METHODS
from xlsent.models.encoder import SHAPE_KEYS
from xlsent.train.dualpivot import DualPivotSettings
from xlsent.train.settings import TrainSettings

SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())["properties"]


def _block(path: str) -> dict:
    """The properties of the schema's block at `path` ("evaluate.bucc.heldout")."""
    schema = {"properties": SCHEMA}
    for part in path.split("."):
        schema = schema["properties"][part]
    return schema["properties"]


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
        # Every key the trainer takes: those left out of a job's settings at their defaults too.
        {
            k: v
            for k, v in _defaults(SCHEMA["train"]["properties"]).items()
            if k not in NOT_PROGRAM_SETTINGS["train"]
        },
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
        {
            "batch_size": "rows per batch in memory, not a result setting",
            "per_source_cap": "corpus.per_source_cap, which style dap's clean job draws",
            "seed": "corpus.seed, the seed of that draw",
        },
    ),
    # The sample job's settings object (`xlsent sample --settings`).
    "corpus (sampling)": (
        SampleConfig,
        program_settings("corpus", _defaults(SCHEMA["corpus"]["properties"])),
        {"batch_size": "rows per batch in memory, not a result setting"},
    ),
    # The alignment job's settings object of each aligner (`xlsent align-shard --settings`).
    **{
        f"align.{method}": (
            cls,
            program_settings(f"align.{method}", _defaults(_block(f"align.{method}"))),
            {},
        )
        for method, cls in (
            ("eflomal", EflomalConfig),
            ("wspalign", WSPAlignConfig),
            ("simalign", SimAlignConfig),
        )
    },
    # The hard-negative stage's jobs (`xlsent hard-negatives-encode`, `hard-negatives`).
    "hard_negatives.encode": (
        PoolEncoding,
        program_settings("hard_negatives.encode", _defaults(_block("hard_negatives.encode"))),
        {},
    ),
    "hard_negatives.mine": (MiningSettings, _defaults(_block("hard_negatives.mine")), {}),
}


@pytest.mark.parametrize("block", list(CASES))
def test_settings_dataclasses_have_the_schemas_keys_and_defaults(block):
    cls, schema, extra = CASES[block]
    fields = _fields(cls)
    assert set(fields) - set(extra) == set(schema), f"{cls.__name__} and `{block}` differ"
    differ = {key: (fields[key], schema[key]) for key in schema if fields[key] != schema[key]}
    assert not differ, f"{cls.__name__} defaults that are not the schema's: {differ}"


@pytest.mark.parametrize("block", list(CASES))
def test_a_settings_dataclass_writes_no_default_of_the_schemas(block):
    """A default is written once, in the schema: the dataclass's field has none of its own
    (`schema_defaults` gives it the schema's)."""
    cls, schema, _ = CASES[block]
    source = inspect.getsource(cls)
    written = [key for key in schema if re.search(rf"^    {key}: [^=\n]+ = ", source, re.M)]
    assert not written, f"{cls.__name__} writes defaults of `{block}`: {written}"


def test_the_job_resources_are_schema_keys():
    """What the programs do not take is named once, and names real keys."""
    for block, keys in NOT_PROGRAM_SETTINGS.items():
        assert set(keys) <= set(_block(block)), block


def test_a_setting_left_out_at_its_default_reaches_the_program_once_set():
    """A key added with the old behaviour as its default changes no job's settings (so plans
    no finished job again) until a config sets it otherwise."""
    other = {None: 1e-3, False: True, "fp32": "bf16"}
    for block, keys in LEFT_OUT_AT_DEFAULT.items():
        defaults = _defaults(_block(block))
        assert {key: defaults[key] for key in keys} == keys, block
        assert not set(keys) & set(program_settings(block, defaults))
        for key, default in keys.items():
            changed = program_settings(block, {**defaults, key: other[default]})
            assert changed[key] == other[default]


def test_a_scratch_encoders_shape_keys_are_the_schemas():
    model = SCHEMA["models"]["additionalProperties"]
    scratch = model["then"]["properties"]
    shape = {key for key in scratch if key not in ("vocab_size", "tokenizer_sentences")}
    assert shape == set(SHAPE_KEYS)


def _restated(node: dict, schema: dict, path: str) -> list[str]:
    """The keys under `node` whose value is their schema default, as `a.b.c = value`."""
    found = []
    for key, value in node.items():
        prop = schema["properties"][key]
        where = f"{path}{key}"
        if "default" in prop and value == prop["default"]:
            found.append(f"{where} = {value!r}")
        elif isinstance(value, dict) and "properties" in prop:
            found.extend(_restated(value, prop, f"{where}."))
    return found


# Keys config.yaml may set to their schema default, each with its reason. None so far: a
# default's paper citation goes in the schema's description.
PINNED: dict[str, str] = {}


def test_the_paper_config_restates_no_default():
    """config.yaml holds what the paper setup changes, each with its reason; a restated
    default would hide which keys those are. A run's override of a block's setting is
    checked against the config's block (a run setting it to the block's value restates it)."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    restated = _restated(
        {k: v for k, v in config.items() if k not in ("runs", "models")}, {"properties": SCHEMA}, ""
    )
    for run, spec in config["runs"].items():
        for block in ("train", "dualpivot", "bisent2vec", "mapped"):
            for key, value in spec.get(block, {}).items():
                default = SCHEMA[block]["properties"][key]["default"]
                if value == config.get(block, {}).get(key, default):
                    restated.append(f"runs.{run}.{block}.{key} = {value!r}")
    assert [key for key in restated if key.partition(" =")[0] not in PINNED] == []


def test_sample_names_an_unknown_setting(tmp_path, caplog):
    settings = program_settings("corpus", _defaults(SCHEMA["corpus"]["properties"]))
    paths = {flag: str(tmp_path / flag) for flag in ("clean", "train", "dev", "stats", "mining")}
    argv = [
        "sample",
        "--lang",
        "kk",
        *(x for flag, path in paths.items() for x in (f"--{flag}", path)),
    ]
    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit) as stopped:
        main([*argv, "--settings", json.dumps({**settings, "max_pair": 10})])
    assert stopped.value.code == 2
    assert "unknown corpus setting 'max_pair' (did you mean 'max_pairs'?)" in caplog.text


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            "resources/demo/config.yaml",
            {"style": "words", "min_tokens": 1, "max_length_ratio": 3.0},
        ),
        (
            "config.yaml",
            {"style": "dap", "min_tokens": 4, "per_source_cap": 1_010_000, "seed": 0},
        ),
    ],
)
def test_clean_settings_hold_what_the_style_reads(config, expected):
    """`xlsent clean --settings`: max_length_ratio with style words only (changing it does not
    rerun style dap's clean jobs), never the tokenizer's model name (the rule passes its
    directory as --tokenizer-dir); with style dap, the corpus's per_source_cap and seed, which
    the clean job then draws. With that directory, the command builds the CleanConfig it built
    from its flags before (--style, --min-tokens, and the style's own flag), and the cap."""
    loaded = load(ROOT / config, ROOT / "workflow/schemas/config.schema.yaml")
    settings = clean_settings(loaded)
    assert settings == expected
    tokenizer = "results/pretrained/mbert" if expected["style"] == "dap" else None
    cfg = settings_object(CleanConfig, {**settings, "tokenizer": tokenizer}, "corpus.clean")
    clean = loaded["corpus"]["clean"]
    own = {"max_length_ratio": clean["max_length_ratio"], "tokenizer": tokenizer}
    field = "max_length_ratio" if clean["style"] == "words" else "tokenizer"
    flags = CleanConfig(min_tokens=clean["min_tokens"], style=clean["style"], **{field: own[field]})
    cap = {key: expected[key] for key in ("per_source_cap", "seed") if key in expected}
    assert cfg == dataclasses.replace(flags, **cap)


def test_clean_settings_leave_out_what_the_other_style_reads():
    clean = {"style": "dap", "min_tokens": 4, "max_length_ratio": 2.5, "tokenizer": "xlmr"}
    assert clean_settings({"corpus": {"clean": clean}}) == {"style": "dap", "min_tokens": 4}
    # Without a cap no cap, and no seed: a finished clean job of style dap does not rerun.
    uncapped = {"clean": clean, "per_source_cap": None, "seed": 3}
    assert clean_settings({"corpus": uncapped}) == {"style": "dap", "min_tokens": 4}
    words = {**clean, "style": "words"}
    assert clean_settings({"corpus": {"clean": words}}) == {
        "style": "words",
        "min_tokens": 4,
        "max_length_ratio": 2.5,
    }


@pytest.mark.parametrize(
    ("cls", "block"),
    [(MiningSetSettings, "evaluate.bucc.heldout"), (SplitSettings, "evaluate.bli")],
)
def test_the_evaluate_stages_settings_objects_have_the_schemas_keys(cls, block):
    """mining-set's and bli-split's `--settings`: their block less what the rule passes as
    an input (the default lives in the schema alone: the dataclasses have none)."""
    keys = program_settings(block, _defaults(_block(block)))
    assert [field.name for field in dataclasses.fields(cls)] == list(keys)
    assert settings_object(cls, keys, block) == cls(**keys)


def test_the_evaluations_encoding_settings_are_the_evaluate_blocks_scalars():
    """`--encoding` of every job that encodes carries the `evaluate` block's scalar keys but
    its resources (its objects are the tasks' own settings), `max_length` null resolved to
    the run's."""
    scalars = {k for k, p in SCHEMA["evaluate"]["properties"].items() if p["type"] != "object"}
    settings = scalars - set(NOT_PROGRAM_SETTINGS["evaluate"])
    assert {field.name for field in dataclasses.fields(EncodingSettings)} == settings
    config = load(ROOT / "resources/demo/config.yaml", ROOT / "workflow/schemas/config.schema.yaml")
    run = next(iter(config["runs"]))
    config["evaluate"]["max_length"] = None
    settings = settings_object(EncodingSettings, encoding_settings(config, run), "encoding")
    assert settings.max_length == run_max_length(config, run)
    config["evaluate"]["max_length"] = 77
    assert encoding_settings(config, run)["max_length"] == 77


def test_an_evaluation_names_an_unknown_encoding_setting(tmp_path, caplog):
    encoding = {"max_length": 16, "batch_size": 2, "devices": "cpu"}
    argv = ["encode", "--source", "tatoeba", "--dir", str(tmp_path), "--langs", "de"]
    argv += ["--model", str(tmp_path), "--threads", "1", "--out", str(tmp_path / "o")]
    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit) as stopped:
        main([*argv, "--encoding", json.dumps(encoding)])
    assert stopped.value.code == 2
    assert "unknown encoding setting 'devices' (did you mean 'device'?)" in caplog.text


def test_every_aligner_has_a_settings_object():
    """The schema's aligners are `ALIGN_METHODS` (the command's choices, the rules' wildcard),
    and each has its block and a case above."""
    align = SCHEMA["align"]["properties"]
    assert tuple(align["method"]["enum"]) == ALIGN_METHODS
    assert {f"align.{method}" for method in ALIGN_METHODS} <= set(CASES)
    assert set(ALIGN_METHODS) <= set(align)


def test_an_alignment_job_names_an_unknown_setting(tmp_path, caplog):
    """`align-shard --settings` is parsed by `settings_object`: a key the aligner does not
    take (here a resource, which the rules leave out) stops the job naming it."""
    settings = program_settings("align.wspalign", _defaults(_block("align.wspalign")))
    argv = ["align-shard", "--method", "wspalign", "--corpus", "c", "--words", "w"]
    argv += ["--index", "0", "--shard-size", "10", "--total", "10", "--threads", "1"]
    argv += ["--out", str(tmp_path / "s.arrow"), "--stats", str(tmp_path / "s.json")]
    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit) as stopped:
        main([*argv, "--settings", json.dumps({**settings, "gpus": 1})])
    assert stopped.value.code == 2
    assert "unknown align.wspalign setting 'gpus'" in caplog.text


def test_the_tatoeba_texts_are_the_schemas():
    """`--tatoeba-text`'s choices, which every command reading the Tatoeba files offers, are
    the schema's `evaluate.tatoeba.text`."""
    assert list(TATOEBA_TEXTS) == _block("evaluate.tatoeba")["text"]["enum"]
