"""Loading and validating the workflow configuration.

The JSON schema (`workflow/schemas/config.schema.yaml`) holds every key with its default and
description. Validation fills the defaults and turns the first violation into one sentence
that names the key and says what to do, e.g. "config key `corpus.max_pair` is not known
(did you mean `corpus.max_pairs`?)".

Everything the config alone decides is checked before any job runs, so that a mistake costs a
second, not the hours of corpus and alignment work before the job that trips on it:
`validate` holds the rules between keys (pure, the same everywhere), `check_paths` the files
and directories the config names (on the machine that plans the run), and `config_warnings`
the settings that run but probably not as meant.
"""

from __future__ import annotations

import copy
import difflib
import functools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from xlsent import languages
from xlsent.corpus.sources import SOURCES
from xlsent.errors import XlsentError


class ConfigError(XlsentError):
    pass


# Run methods: those that train an encoder (`train` settings, a `model`), and those that train
# word vectors per language pair (`bisent2vec` settings; Bi-Sent2vec and its CBOW baseline).
ENCODER_METHODS = ("tr", "wacse", "dap")
WORD_VECTOR_METHODS = ("bisent2vec", "fasttext-cbow")
# The keys of a settings block that the program its job runs does not take: the job's
# resources, which the scheduler gives it (threads; gpus, whose processes torchrun starts),
# and settings of other jobs (bisent2vec.tfidf is the Tatoeba evaluation's). The one list
# the rules, the commands and the tests use.
NOT_PROGRAM_SETTINGS = {"train": ("threads", "gpus"), "bisent2vec": ("threads", "tfidf")}
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


def _message(error: jsonschema.ValidationError, root: Sequence[str] = ()) -> str:
    """One sentence for a schema violation; `root` is where the validated object sits in the
    config (a run's merged settings are validated on their own)."""
    where = _key([*root, *error.absolute_path])
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(error.schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in allowed]
        if allowed and unknown:
            parent = where
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
    """Validate `config` in place (defaults filled) and check the rules between keys.

    Pure (it opens no file the config names): every process that parses the workflow, a
    cluster job's included, gets the same answer. The files are `check_paths`'s.
    """
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = _with_defaults(jsonschema.Draft202012Validator)(schema)
    # The shallowest error first: an unknown section explains everything below it.
    errors = sorted(validator.iter_errors(config), key=lambda e: len(e.absolute_path))
    if errors:
        raise ConfigError(_message(errors[0]))
    _check_languages(config)
    _check_references(config)
    _check_word_vector_runs(config, schema)
    _check_encoder_runs(config, schema)
    _check_models(config)
    _check_corpus(config)
    return config


def _check_languages(config: dict) -> None:
    """Codes and group names wherever the config takes them, each under its own key."""
    specs = {
        "languages": config["languages"],
        "evaluate.tatoeba.languages": config["evaluate"]["tatoeba"]["languages"],
    }
    for key, spec in specs.items():
        if spec is None:
            continue
        try:
            languages.resolve(spec)
        except languages.UnknownLanguageError as err:
            raise ConfigError(f"config key `{key}`: {err}") from None
    groups = {
        "tables.groups": config["tables"]["groups"],
        "tables.ablation.groups": config["tables"]["ablation"]["groups"],
    }
    for key, names in groups.items():
        for group in names:
            if group not in languages.GROUPS:
                raise ConfigError(
                    f"config key `{key}`: unknown group {group!r}; use group names: "
                    f"{', '.join(languages.GROUPS)}"
                )


def _check_references(config: dict) -> None:
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
    """A word-vector run's settings (global block + its overrides) against the schema, the
    languages it is evaluated on, and the BLI dictionaries' languages."""
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
    word_vector_runs = runs_of(config, WORD_VECTOR_METHODS)
    evaluated = config["evaluate"]["tatoeba"]["languages"]
    if (
        word_vector_runs
        and evaluated is not None
        and not set(languages.resolve(evaluated)) & set(langs)
    ):
        raise ConfigError(
            "config key `evaluate.tatoeba.languages`: none of them is in `languages`, but the "
            f"word-vector runs ({', '.join(word_vector_runs)}) evaluate each language with its "
            "own en-xx model, trained for `languages` only: evaluate at least one language of "
            "`languages`"
        )
    for lang in config["evaluate"]["bli"]["dictionaries"]:
        if lang not in langs:
            raise ConfigError(
                f"config key `evaluate.bli.dictionaries.{lang}`: {lang!r} is not one of "
                f"`languages` ({', '.join(langs)}); a dictionary is evaluated on that "
                "language's en-xx models"
            )


def _multiples_near(value: int, unit: int) -> str:
    """The multiples of `unit` either side of `value` ("768 or 1024"), for a message."""
    below = value // unit * unit
    return " or ".join(str(n) for n in (below, below + unit) if n)


def _train_key(config: dict, run: str, name: str) -> str:
    """The key a run's training setting comes from: its own override or the global block."""
    return f"runs.{run}.train.{name}" if name in config["runs"][run]["train"] else f"train.{name}"


def _check_encoder_runs(config: dict, schema: dict) -> None:
    """Each encoder run's settings as its trainer gets them (the global `train` block and the
    run's overrides): the overrides' values against the schema, then the rules between keys
    that the trainer, or the evaluation after it, would only enforce once its job runs."""
    validator = jsonschema.Draft202012Validator(schema["properties"]["train"])
    n_langs = len(languages.resolve(config["languages"]))
    max_pairs = config["corpus"]["max_pairs"]
    for run in runs_of(config, ENCODER_METHODS):
        spec = config["runs"][run]
        settings = {**config["train"], **spec["train"]}
        errors = sorted(validator.iter_errors(settings), key=lambda e: len(e.absolute_path))
        if errors:
            raise ConfigError(_message(errors[0], root=("runs", run, "train")))

        key = functools.partial(_train_key, config, run)
        # One process per GPU (torchrun) only when gpus > 1; each takes a micro-batch a step.
        gpus = max(1, settings["gpus"])
        micro = settings["micro_batch_size"]
        step = micro * gpus
        per_step = (
            f"`{key('micro_batch_size')}` × `{key('gpus')}` ({micro} × {gpus} = {step} pairs, "
            "a micro-batch per GPU)"
            if gpus > 1
            else f"`{key('micro_batch_size')}` ({micro})"
        )
        batch = settings["batch_size"]
        if batch % step:
            raise ConfigError(
                f"config key `{key('batch_size')}` ({batch}) must be a multiple of {per_step}, "
                "as an optimizer step accumulates whole micro-batches: set it to "
                f"{_multiples_near(batch, step)}, or change the micro-batch size"
            )
        if step > max_pairs * n_langs:
            raise ConfigError(
                f"config key `corpus.max_pairs` ({max_pairs}) allows at most "
                f"{max_pairs * n_langs} training pairs over {n_langs} language(s), fewer than "
                f"the one micro-batch of {per_step} that the trainer needs: raise "
                "corpus.max_pairs or lower the micro-batch size"
            )
        if spec["method"] == "wacse" and not any(settings["wacse_weights"]):
            raise ConfigError(
                f"config key `{key('wacse_weights')}` is all zeros, so run {run!r} would train "
                "nothing: give at least one objective a positive weight, e.g. the paper's "
                "[0.8, 0.1, 0.1]"
            )
        model = config["models"][spec["model"]]
        if model["init"] != "scratch":
            continue  # a pretrained model's depth and positions are its checkpoint's
        layers = model["num_hidden_layers"]
        if spec["method"] == "dap" and settings["rtl_layers"] > layers:
            raise ConfigError(
                f"config key `{key('rtl_layers')}` ({settings['rtl_layers']}) exceeds the {layers} "
                f"layers of model {spec['model']!r} (`models.{spec['model']}.num_hidden_layers`), "
                f"whose last layers DAP's RTL head copies: set it to at most {layers}"
            )
        length = config["evaluate"]["max_length"]
        if length is not None and length > settings["max_length"]:
            raise ConfigError(
                f"config key `evaluate.max_length` ({length}) exceeds `{key('max_length')}` "
                f"({settings['max_length']}) of run {run!r}, whose scratch model has position "
                f"embeddings for {settings['max_length']} tokens only: set it to at most "
                f"{settings['max_length']}, or leave it null (each run's own train.max_length)"
            )


def _check_models(config: dict) -> None:
    """A scratch model's shape, which XLM-R's attention refuses only when a train job builds
    it (after the corpus, the tokenizer and the alignment)."""
    for name, model in config["models"].items():
        if model["init"] != "scratch":
            continue
        hidden, heads = model["hidden_size"], model["num_attention_heads"]
        if hidden % heads:
            raise ConfigError(
                f"config key `models.{name}.hidden_size` ({hidden}) must be a multiple of "
                f"`models.{name}.num_attention_heads` ({heads}), each head taking an equal "
                f"share of it: set it to {_multiples_near(hidden, heads)}, or change the number "
                "of heads"
            )


def _check_corpus(config: dict) -> None:
    """The sampling keys together: dev_pairs > 0 with dev_fraction 0 asks for a dev set that
    is never drawn, so every language stops at its `sample` job's dev minimum (or trains with
    no dev pair to select a checkpoint by)."""
    corpus = config["corpus"]
    if corpus["dev_fraction"] == 0 and corpus["dev_pairs"] > 0:
        raise ConfigError(
            "config key `corpus.dev_fraction` is 0, so no language gets a dev pair although "
            f"`corpus.dev_pairs` asks for up to {corpus['dev_pairs']} (the dev set is "
            "min(dev_fraction·N, dev_pairs)): set dev_fraction above 0 (e.g. 0.1), or "
            "dev_pairs to 0 if no dev set is meant"
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


def program_settings(block: str, settings: dict) -> dict:
    """The settings of block `block` ("train", "bisent2vec") that its program takes: all
    but `NOT_PROGRAM_SETTINGS[block]`."""
    return {k: v for k, v in settings.items() if k not in NOT_PROGRAM_SETTINGS[block]}


def trainer_settings(config: dict, run: str, seed: int) -> dict:
    """What the Bi-Sent2vec trainer takes (`xlsent bisent2vec-train --settings`): the run's
    program settings and the seed."""
    return {**program_settings("bisent2vec", bisent2vec_settings(config, run)), "seed": seed}


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


def config_warnings(config: dict) -> list[str]:
    """Settings of a validated `config` that run, but probably not as meant: one line each.

    Not errors: a short test run rightly lowers `max_steps` alone, and the trainer copes (it
    evaluates at the last step whatever `eval_every` is). But with `eval_every` above
    `max_steps` the "best checkpoint by dev P@1" is simply the last step, and with
    `warmup_steps` above it the learning rate never reaches `lr`: worth a line before hours of
    training. (`checkpoint_every` above `max_steps` is not: it only means no resumable
    checkpoint before the end, and a preempted job still saves one.)
    """
    out = []
    for run in runs_of(config, ENCODER_METHODS):
        settings = {**config["train"], **config["runs"][run]["train"]}
        key = functools.partial(_train_key, config, run)
        steps = f"`{key('max_steps')}` ({settings['max_steps']})"
        if settings["eval_every"] > settings["max_steps"]:
            out.append(
                f"config key `{key('eval_every')}` ({settings['eval_every']}) is above {steps}: "
                "dev P@1 is measured at the last step only, so the exported model is the last "
                "one, not the best; lower eval_every to select among checkpoints"
            )
        if settings["warmup_steps"] > settings["max_steps"]:
            out.append(
                f"config key `{key('warmup_steps')}` ({settings['warmup_steps']}) is above "
                f"{steps}: the learning rate is still warming up when training stops and never "
                "reaches train.lr; lower warmup_steps"
            )
    return list(dict.fromkeys(out))  # runs that inherit the same global keys: said once


def check_paths(config: dict, workflow_dir: str | Path) -> None:
    """Check that the files and directories a validated `config` names exist, as the jobs
    will open them: relative to the working directory, and the files the workflow may ship
    (`corpus.opus.manifest`, BLI dictionaries) relative to `workflow_dir` too, as common.smk's
    `shipped()` finds them.

    Apart from `validate` because the answer depends on the machine: the process that plans
    the run checks (a cluster job's node may not see the login node's paths, nor need them).
    Only what the planned jobs read is checked, so that a model no run uses, or dictionaries
    without a word-vector run, may name another machine's paths; hub ids and URLs are left
    to their download, which alone can tell.
    """
    workflow_dir = Path(workflow_dir)
    langs = languages.resolve(config["languages"])
    # The corpus source checks what its settings name (xlsent.corpus.sources).
    SOURCES[config["corpus"]["source"]].check(
        config, langs, shipped=lambda path: str(_shipped(path, workflow_dir))
    )
    for run in runs_of(config, ENCODER_METHODS):
        name = config["runs"][run]["model"]
        model = config["models"][name]
        if model["init"] == "pretrained":
            _check_local_model(
                f"models.{name}.path",
                model["path"],
                "a directory saved by save_pretrained, or a hub id (e.g. xlm-roberta-base) "
                "where there is network",
            )
    if config["align"]["method"] == "wspalign":
        _check_local_model(
            "align.wspalign.model",
            config["align"]["wspalign"]["model"],
            "a WSPAlign checkpoint directory, or a hub id (qiyuw/WSPAlign-xlm-base) where "
            "there is network; or set align.method: eflomal, which needs neither",
        )
    _check_tatoeba_dir(config, langs)
    if runs_of(config, WORD_VECTOR_METHODS):  # BLI evaluates word-vector runs only
        _check_bli_dictionaries(config, workflow_dir)


def _not_found(path: str | Path, kind: str) -> str:
    """`directory X does not exist` or `X is not a directory`, for a message."""
    if Path(path).exists():
        return f"{path} is not a {kind}"
    # Only the model keys reach a shell that expands `~`; the others take the path as it is.
    home = " (`~` is not expanded here: write the full path)" if str(path)[:1] == "~" else ""
    return f"{kind} {path} does not exist{home}"


def _shipped(path: str, workflow_dir: Path) -> Path:
    """Where the workflow looks for a file it may ship (common.smk's `shipped()`): as given,
    if it exists there or is absolute, else relative to the workflow."""
    given = Path(path)
    return given if given.exists() or given.is_absolute() else workflow_dir / path


def _check_local_model(key: str, path: str, fix: str) -> None:
    """A model path that is clearly local (absolute, `./`, `../`, `~`) must be a directory;
    anything else may be a hub id (`xlm-roberta-base`, `org/name`) and is left alone."""
    if not path.startswith(("./", "../", "~")) and not os.path.isabs(path):
        return
    directory = Path(path).expanduser()  # the fetch rules' shell expands `~`
    if not directory.is_dir():
        raise ConfigError(
            f"config key `{key}`: {_not_found(directory, 'directory')}: point it at {fix}"
        )


def _check_tatoeba_dir(config: dict, langs: list[str]) -> None:
    """A user's Tatoeba directory holds the files of every evaluated language."""
    directory = config["evaluate"]["tatoeba"]["dir"]
    if not directory or directory.startswith("results/"):
        return  # downloaded, or written by the workflow (the demo's held-out test set)
    evaluated = languages.resolve(config["evaluate"]["tatoeba"]["languages"] or langs)
    if not runs_of(config, ENCODER_METHODS):  # word-vector runs: the languages they trained
        evaluated = [lang for lang in evaluated if lang in langs]
    if not Path(directory).is_dir():
        raise ConfigError(
            f"config key `evaluate.tatoeba.dir`: {_not_found(directory, 'directory')}: point "
            "it at a directory in the LASER layout (tatoeba.{xxx}-eng.{xxx} and "
            "tatoeba.{xxx}-eng.eng), or leave it null to download the files"
        )
    missing = {}
    for lang in evaluated:
        iso3 = languages.get(lang).iso3
        names = [f"tatoeba.{iso3}-eng.{side}" for side in (iso3, "eng")]
        absent = [name for name in names if not (Path(directory) / name).is_file()]
        if absent:
            missing[lang] = absent
    if missing:
        listed = ", ".join(f"{lang} ({', '.join(names)})" for lang, names in missing.items())
        raise ConfigError(
            f"config key `evaluate.tatoeba.dir`: {directory} lacks the Tatoeba files of "
            f"{listed}: put the LASER files there, point evaluate.tatoeba.dir at the "
            f"directory that holds them, or leave {', '.join(missing)} out of "
            "`evaluate.tatoeba.languages`"
        )


def _check_bli_dictionaries(config: dict, workflow_dir: Path) -> None:
    """The local dictionary files, FreeDict's index beside its dictionary included."""
    sources = config["evaluate"]["bli"]["dictionaries"]
    for d in bli_dictionaries(config):
        key = f"evaluate.bli.dictionaries.{d.lang}"
        if not isinstance(sources[d.lang], str):
            key += f".{d.direction}"
        if d.kind == "url":
            continue
        path = _shipped(d.location, workflow_dir)
        if d.kind == "muse" and not path.is_file():
            raise ConfigError(
                f"config key `{key}`: {_not_found(path, 'file')}: fix the path, give an "
                "http(s) URL, or remove the entry"
            )
        if d.kind == "freedict":
            stem = path.name.removesuffix(".dz").removesuffix(".dict")
            index = path.with_name(f"{stem}.index")
            if not path.is_file():
                raise ConfigError(
                    f"config key `{key}`: FreeDict {_not_found(path, 'file')}: install it "
                    "(`apt-get install dict-freedict-eng-deu`, or the package of your "
                    "language pair) or fix the path"
                )
            if not index.is_file():
                raise ConfigError(
                    f"config key `{key}`: the index of FreeDict dictionary {path}, "
                    f"{_not_found(index, 'file')}: reinstall its package, or put the .index "
                    "file beside the dictionary"
                )
