"""Loading and validating the workflow configuration.

The JSON schema (`workflow/schemas/config.schema.yaml`) holds every key with its default and
description. Validation fills the defaults and turns the first violation into one sentence
that names the key and says what to do, e.g. "config key `corpus.max_pair` is not known
(did you mean `corpus.max_pairs`?)".
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from xlsent import languages
from xlsent.errors import XlsentError


class ConfigError(XlsentError):
    pass


# Run methods: those that train an encoder (`train` settings, a `model`), and those that train
# word vectors per language pair (`bisent2vec` settings; Bi-Sent2vec and its CBOW baseline).
ENCODER_METHODS = ("tr", "wacse", "dap")
WORD_VECTOR_METHODS = ("bisent2vec", "fasttext-cbow")
# Keys of the `bisent2vec` block that are the workflow's, not the trainer's.
BISENT2VEC_WORKFLOW_KEYS = ("threads", "tfidf")
BLI_DIRECTIONS = ("en2xx", "xx2en")


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
    _check_word_vector_runs(config, schema)
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
        if run["method"] not in ENCODER_METHODS:
            continue  # checked by _check_word_vector_runs
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


def _check_word_vector_runs(config: dict, schema: dict) -> None:
    """A word-vector run's settings (global block + its overrides) against the schema, and
    the BLI dictionaries' languages."""
    block = schema["properties"]["bisent2vec"]
    validator = _with_defaults(jsonschema.Draft202012Validator)(block)
    for name, run in config["runs"].items():
        if run["method"] not in WORD_VECTOR_METHODS:
            continue
        if run.get("train"):
            raise ConfigError(
                f"config key `runs.{name}.train` applies to encoder runs (tr, wacse, dap); a "
                f"{run['method']} run's settings go under `runs.{name}.bisent2vec`"
            )
        merged = {**config["bisent2vec"], **run["bisent2vec"]}
        errors = sorted(validator.iter_errors(merged), key=lambda e: len(e.absolute_path))
        if errors:
            error = errors[0]
            if error.validator == "additionalProperties":
                allowed = list(block["properties"])
                unknown = sorted(set(run["bisent2vec"]) - set(allowed))
                close = difflib.get_close_matches(unknown[0], allowed, n=1) if unknown else []
                hint = f" (did you mean `{close[0]}`?)" if close else ""
                raise ConfigError(
                    f"config key `runs.{name}.bisent2vec.{unknown[0] if unknown else '?'}`"
                    f"{hint} is not a bisent2vec setting; settings are: {', '.join(allowed)}"
                )
            key = ".".join(str(p) for p in error.absolute_path)
            where = f"runs.{name}.bisent2vec" if key in run["bisent2vec"] else "bisent2vec"
            raise ConfigError(f"config key `{where}.{key}`: {error.message}")
    langs = languages.resolve(config["languages"])
    for lang in config["evaluate"]["bli"]["dictionaries"]:
        if lang not in langs:
            raise ConfigError(
                f"config key `evaluate.bli.dictionaries.{lang}`: {lang!r} is not one of "
                f"`languages` ({', '.join(langs)}); a dictionary is evaluated on that "
                "language's en-xx models"
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


def runs_of(config: dict, methods: Sequence[str]) -> list[str]:
    """The names of the runs whose method is one of `methods`, in config order."""
    return [run for run, spec in config["runs"].items() if spec["method"] in methods]


def bisent2vec_settings(config: dict, run: str) -> dict:
    """A word-vector run's settings: the global `bisent2vec` block and the run's overrides."""
    spec = config["runs"][run]
    if spec["method"] not in WORD_VECTOR_METHODS:
        raise ValueError(f"run {run!r} ({spec['method']}) is not a Bi-Sent2vec or fastText run")
    return {**config["bisent2vec"], **spec["bisent2vec"]}


def trainer_settings(config: dict, run: str, seed: int) -> dict:
    """What the trainer takes (`xlsent bisent2vec-train --settings`): the run's settings
    without the workflow's own keys (threads, tfidf), and the seed."""
    settings = bisent2vec_settings(config, run)
    trainer = {k: v for k, v in settings.items() if k not in BISENT2VEC_WORKFLOW_KEYS}
    return {**trainer, "seed": seed}


@dataclass(frozen=True)
class BliDictionary:
    """One test dictionary of `evaluate.bli.dictionaries`, for one language and direction.

    `kind` is `muse` (a local file), `url` (a MUSE file to download) or `freedict` (a dictd
    dictionary to convert); `reverse` swaps its pairs (xx2en from an en→xx dictionary).
    """

    lang: str
    direction: str
    kind: str
    location: str
    reverse: bool


def _dictionary(lang: str, direction: str, source: str, reverse: bool) -> BliDictionary:
    if source.startswith("freedict:"):
        return BliDictionary(lang, direction, "freedict", source.removeprefix("freedict:"), reverse)
    if source.startswith(("http://", "https://")):
        return BliDictionary(lang, direction, "url", source, reverse)
    return BliDictionary(lang, direction, "muse", source, reverse)


def bli_dictionaries(config: dict) -> list[BliDictionary]:
    """Every (language, direction) with a test dictionary, in config order."""
    out = []
    for lang, source in config["evaluate"]["bli"]["dictionaries"].items():
        if isinstance(source, str):
            out.append(_dictionary(lang, "en2xx", source, reverse=False))
            out.append(_dictionary(lang, "xx2en", source, reverse=True))
        else:
            for direction in BLI_DIRECTIONS:
                if direction in source:
                    out.append(_dictionary(lang, direction, source[direction], reverse=False))
    return out
