"""One row per method (`xlsent.methods.METHODS`), which the schema, the trainer, the config
checks and the docs agree with; one place per default (the schema, `xlsent.defaults`)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml
from support import ROOT

from xlsent import defaults, losses
from xlsent.defaults import schema_defaults
from xlsent.methods import (
    DUALPIVOT_METHODS,
    ENCODER,
    ENCODER_METHODS,
    LANGUAGE_MODELLING,
    METHODS,
    WORD_VECTOR_METHODS,
    taking,
)
from xlsent.train.settings import TrainSettings, trains_a_head

SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
RUN = SCHEMA["properties"]["runs"]["additionalProperties"]


def test_the_schemas_methods_are_the_rows():
    """`runs.*.method`'s enum, and the branches that give each kind its settings block."""
    assert RUN["properties"]["method"]["enum"] == list(METHODS)
    dualpivot, mapped = (branch["if"]["properties"]["method"] for branch in RUN["allOf"])
    assert dualpivot["enum"] == list(DUALPIVOT_METHODS)
    assert [mapped["const"]] == list(taking("mapped"))
    assert RUN["if"]["properties"]["method"]["enum"] == list(WORD_VECTOR_METHODS)
    assert list(taking("bisent2vec")) == list(WORD_VECTOR_METHODS)
    assert list(taking("train")) == list(ENCODER_METHODS)
    assert list(taking("dualpivot")) == list(DUALPIVOT_METHODS)


@pytest.mark.parametrize("name", list(METHODS))
def test_a_rows_settings_are_schema_keys(name):
    """Its blocks are the schema's, each weight a key of its (first) block, and each loss a
    module of `xlsent.losses` (TLM is MLM's loss on joined pairs)."""
    method = METHODS[name]
    blocks = SCHEMA["properties"]
    assert set(method.blocks) <= set(blocks)
    for loss in method.losses:
        if loss.weight:
            key = loss.weight.partition(".")[0]
            assert key in blocks[method.blocks[0]]["properties"], (name, key)
        module = "mlm" if loss.objective in LANGUAGE_MODELLING else loss.objective
        assert (Path(losses.__file__).parent / f"{module}.py").exists(), (name, module)


def test_the_rows_weights_and_heads_are_the_methods():
    """What the trainer and the config checks read of a row, for the paper's settings and the
    WACSE ablations."""
    train = defaults.defaults("train")
    weights = {name: METHODS[name].weights(train) for name in ENCODER_METHODS}
    assert weights == {
        "tr": {"tr": 1.0},
        "wacse": {"tr": 0.8, "awp": 0.1, "wtr": 0.1},
        "dap": {"tr": 1.0, "rtl": 0.8},
        "mlm": {"mlm": 1.0},
        "tlm": {"tlm": 1.0},
        "tr-tlm": {"tr": 1.0, "tlm": 1.0},
    }
    assert [name for name in ENCODER_METHODS if METHODS[name].ranks(train)] == [
        "tr",
        "wacse",
        "dap",
        "tr-tlm",
    ]
    assert not METHODS["wacse"].ranks({"wacse_weights": [0.0, 0.5, 0.5]})
    assert [name for name in METHODS if METHODS[name].pretraining] == ["mlm", "tlm"]
    assert [name for name in METHODS if METHODS[name].needs_links] == ["wacse"]
    assert [name for name in METHODS if METHODS[name].monolingual] == ["mlm"]
    assert [name for name in METHODS if METHODS[name].chooses_a_layer] == ["dualpivot-layer"]
    assert [name for name in METHODS if METHODS[name].binary] == ["bisent2vec"]
    # A head of an optional loss trains only at a weight above 0 (TR + WTR has none); the
    # `mlp` pooler is a head of every method.
    heads = {name: trains_a_head(name, {**train, "pooler": "cls"}) for name in ENCODER_METHODS}
    assert [name for name, has in heads.items() if has] == ["wacse", "dap", "mlm", "tlm", "tr-tlm"]
    tr_wtr = {**train, "wacse_weights": [0.8, 0.0, 0.2]}
    assert not trains_a_head("wacse", tr_wtr)
    assert trains_a_head("wacse", {**tr_wtr, "pooler": "mlp"})
    ablation = TrainSettings(seed=0, method="wacse", wacse_weights=(0.8, 0.0, 0.2))
    assert ablation.trains_a_head is False
    # Every encoder method has a loss, and only encoder methods have these heads.
    assert all(METHODS[name].losses for name in ENCODER_METHODS)
    assert {loss.head for m in METHODS.values() if m.kind == ENCODER for loss in m.losses} == {
        None,
        "mlm",
        "rtl",
    }


def test_the_method_map_in_the_docs_names_every_method():
    """development.md's "Finding a method's parts" has a row for each method, by its name."""
    text = (ROOT / "docs" / "development.md").read_text()
    section = text[text.index("## Finding a method's parts") : text.index("Which run kind")]
    named = [
        name
        for line in section.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"`([\w-]+)`", line.split("|")[1])
    ]
    assert [name for name in named if name in METHODS] == list(METHODS)


def test_a_settings_dataclass_takes_its_defaults_from_the_schema():
    """`schema_defaults`: a field named as a key of the block gets its default (a list as a
    tuple), another block's by its full key; a default written in the class is refused."""

    @dataclasses.dataclass(frozen=True)
    @schema_defaults("train", other="corpus.seed")
    class Settings:
        seed: int
        wacse_weights: tuple[float, float, float]
        max_length: int
        other: int

    assert Settings(seed=1) == Settings(1, (0.8, 0.1, 0.1), 32, 0)
    assert Settings(seed=1).max_length == defaults.defaults("train")["max_length"]
    refused = (
        r"Twice.max_length writes a default: its one place is the schema \(`train\.max_length`\)"
    )
    with pytest.raises(TypeError, match=refused):

        @schema_defaults("train")
        class Twice:
            max_length: int = 32


def test_no_module_compares_a_method_name():
    """Code asks a method's row, not its name (`== "wacse"`, `in ("mlm", "tlm")`)."""
    names = "|".join(re.escape(name) for name in METHODS)
    compared = re.compile(
        rf"method\S* *(==|!=) *\"({names})\"|method\S* +(not )?in +[(\[]\"({names})\""
    )
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "workflow").rglob("*.smk")]
    found = {
        str(path.relative_to(ROOT))
        for path in files
        if path.name != "methods.py" and compared.search(path.read_text())
    }
    assert not found
