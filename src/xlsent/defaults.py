"""The config schema (`workflow/schemas/config.schema.yaml`) as the programs read it: the one
place a setting's default is written, and what its key is to a job.

- `schema_defaults`: a class decorator that gives a settings dataclass (`TrainSettings`,
  `SampleConfig`, …) the schema's default of each of its fields that is a key of its block;
  the dataclass writes none of its own.
- `not_program_settings`: the keys annotated `x-program: false`, by block: those the program
  its job runs does not take (the job's resources, which the scheduler gives it; settings of
  other jobs).
- `left_out_at_default`: the keys annotated `x-left-out-at-default: true`, by block, with
  their defaults: keys whose default is the behaviour from before they existed, which a job's
  settings leave out at that default (a rule's params decide its reruns).

The schema is read once a process, when first asked (a job that never builds a settings
object never reads it). It sits beside the package in the checkout, where every environment
of the workflow installs the package (`pip install -e`).
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import yaml

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
PROGRAM = "x-program"
LEFT_OUT_AT_DEFAULT = "x-left-out-at-default"

T = TypeVar("T")


@functools.cache
def read_schema(path: Path) -> dict:
    """The config schema at `path`, read once a process (by libyaml where PyYAML has it: a
    seventh of the time; every Snakemake process validates the config against it)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(), Loader=loader)


def schema() -> dict:
    """The workflow's config schema (`SCHEMA`)."""
    return read_schema(SCHEMA)


def properties(block: str) -> dict[str, dict]:
    """The keys of the schema's `block` ("train", "evaluate.bucc.heldout"), each its schema."""
    node = schema()
    for part in block.split("."):
        node = node["properties"][part]
    return node["properties"]


def defaults(block: str) -> dict[str, Any]:
    """The default of each key of `block` that has one (a copy)."""
    return {
        key: copy.deepcopy(spec["default"])
        for key, spec in properties(block).items()
        if "default" in spec
    }


def schema_defaults(block: str, **elsewhere: str) -> Callable[[type[T]], type[T]]:
    """A class decorator, put under `@dataclass`: each annotated field of the class that is a
    key of the schema's `block` gets that key's default (a list as a tuple); `elsewhere`
    names a field's key in another block, in full (`seed="corpus.seed"`). A field that writes
    a default of its own for such a key is refused: the schema is its one place."""

    def give(cls: type[T]) -> type[T]:
        own = defaults(block)
        for name in inspect.get_annotations(cls):
            if name in elsewhere:
                parent, _, key = elsewhere[name].rpartition(".")
                value = defaults(parent)[key]
            elif name in own:
                value = own[name]
            else:
                continue
            if name in vars(cls):
                where = elsewhere.get(name, f"{block}.{name}")
                raise TypeError(
                    f"{cls.__name__}.{name} writes a default: its one place is the schema "
                    f"(`{where}`)"
                )
            setattr(cls, name, tuple(value) if isinstance(value, list) else value)
        return cls

    return give


def _blocks(node: dict, prefix: str = "") -> Iterator[tuple[str, dict[str, dict]]]:
    """Every block of the schema (an object with `properties`) by its dotted name, and its
    keys."""
    for key, spec in node.get("properties", {}).items():
        path = f"{prefix}.{key}" if prefix else key
        if "properties" in spec:
            yield path, spec["properties"]
            yield from _blocks(spec, path)


@functools.cache
def not_program_settings() -> dict[str, tuple[str, ...]]:
    """The keys of each block that its program does not take (`x-program: false`), by block;
    a block whose program takes every key is not listed."""
    marked = {
        block: tuple(key for key, spec in keys.items() if spec.get(PROGRAM) is False)
        for block, keys in _blocks(schema())
    }
    return {block: keys for block, keys in marked.items() if keys}


@functools.cache
def left_out_at_default() -> dict[str, dict[str, Any]]:
    """The keys of each block that a job's settings leave out at their default
    (`x-left-out-at-default: true`), with that default, by block."""
    marked = {
        block: {key: spec["default"] for key, spec in keys.items() if spec.get(LEFT_OUT_AT_DEFAULT)}
        for block, keys in _blocks(schema())
    }
    return {block: keys for block, keys in marked.items() if keys}
