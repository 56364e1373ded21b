"""Loading and validating the workflow configuration.

The JSON schema (`workflow/schemas/config.schema.yaml`) holds every key with its default and
description. Validation fills the defaults and turns the first violation into one sentence
that names the key and says what to do, e.g. "config key `corpus.max_pair` is not known
(did you mean `corpus.max_pairs`?)".
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from xlsent import languages


class ConfigError(ValueError):
    pass


def _with_defaults(validator_class: type) -> type:
    """A validator that fills `default`s into the instance as it validates.

    Open mappings (`models`, `runs`) get their entries' defaults too: their values are
    validated through `properties` like any other object, and so are `if`/`then` branches
    (scratch-only model keys get defaults only for scratch models).
    """
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        for name, sub in properties.items():
            if isinstance(instance, dict) and "default" in sub and name not in instance:
                instance[name] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def _key(path: Any) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _message(error: jsonschema.ValidationError) -> str:
    where = _key(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(error.schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in allowed]
        if allowed and unknown:
            parent = _key(error.absolute_path)
            prefix = "" if parent == "(top level)" else parent + "."
            hints = []
            for key in unknown:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean `{prefix}{close[0]}`?)" if close else ""
                hints.append(f"`{prefix}{key}`{hint}")
            return (
                f"config key {', '.join(hints)} is not known; keys allowed under "
                f"`{parent}`: {', '.join(allowed)}"
            )
    description = error.schema.get("description", "") if isinstance(error.schema, dict) else ""
    if error.validator == "not" and description:  # jsonschema's own text repeats the schema
        return f"config key `{where}`: {description}"
    return f"config key `{where}`: {error.message}" + (f" ({description})" if description else "")


def validate(config: dict, schema_path: str | Path) -> dict:
    """Validate `config` in place (defaults filled) and check cross-key references."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = _with_defaults(jsonschema.Draft202012Validator)(schema)
    # The shallowest error first: an unknown section explains everything below it.
    errors = sorted(validator.iter_errors(config), key=lambda e: len(e.absolute_path))
    if errors:
        raise ConfigError(_message(errors[0]))
    _check_references(config)
    return config


def _check_references(config: dict) -> None:
    try:
        languages.resolve(config["languages"])
        if config["evaluate"]["tatoeba"]["languages"] is not None:
            languages.resolve(config["evaluate"]["tatoeba"]["languages"])
        for group in [*config["tables"]["groups"], *config["tables"]["ablation"]["groups"]]:
            if group not in languages.GROUPS:
                raise ConfigError(
                    f"config key `tables.groups`: unknown group {group!r}; groups are "
                    f"{', '.join(languages.GROUPS)}"
                )
    except languages.UnknownLanguageError as err:
        raise ConfigError(f"config key `languages`: {err}") from None
    if config["corpus"]["source"] == "local" and not config["corpus"]["local"]["dir"]:
        raise ConfigError(
            "config key `corpus.local.dir` must be set when `corpus.source` is local: the "
            "directory holding the Moses files"
        )
    for name, model in config["models"].items():
        if model["init"] == "pretrained" and "path" not in model:
            raise ConfigError(
                f"config key `models.{name}.path` is required for a pretrained model: a hub "
                "id (e.g. xlm-roberta-base) or a local directory"
            )
    for name in config["tables"]["ablation"]["runs"]:
        if name not in config["runs"]:
            raise ConfigError(
                f"config key `tables.ablation.runs`: {name!r} is not one of `runs` "
                f"({', '.join(config['runs'])})"
            )
    for name, run in config["runs"].items():
        if run["model"] not in config["models"]:
            raise ConfigError(
                f"config key `runs.{name}.model`: {run['model']!r} is not one of `models` "
                f"({', '.join(config['models'])})"
            )
        unknown = set(run["train"]) - set(config["train"])
        if unknown:
            raise ConfigError(
                f"config key `runs.{name}.train.{sorted(unknown)[0]}` is not a training "
                f"setting; settings are: {', '.join(config['train'])}"
            )


def load(path: str | Path, schema_path: str | Path) -> dict:
    return validate(yaml.safe_load(Path(path).read_text()) or {}, schema_path)


@dataclass(frozen=True)
class RunSeed:
    run: str
    seed: int


def run_seeds(config: dict) -> Iterator[RunSeed]:
    for run, spec in config["runs"].items():
        for seed in spec["seeds"]:
            yield RunSeed(run, seed)


def train_settings(config: dict, run: str, seed: int) -> dict:
    """The run's training settings: the global `train` block, the run's overrides, the seed."""
    spec = config["runs"][run]
    return {**config["train"], **spec["train"], "method": spec["method"], "seed": seed}
