# Names shared by every rule file: languages, runs, wildcard patterns, helpers.
import json
import shlex

from xlsent import languages
from xlsent.config import run_seeds, train_settings

LANGS = languages.resolve(config["languages"])
EVAL_LANGS = languages.resolve(config["evaluate"]["tatoeba"]["languages"] or config["languages"])
RUN_SEEDS = list(run_seeds(config))
SPLITS = ["train", "dev"]


wildcard_constraints:
    lang="[a-z]{2}",
    split="train|dev",
    model="[a-z][a-z0-9_-]*",
    run="[a-z][a-z0-9_-]*",
    seed=r"\d+",
    corpus="[A-Za-z0-9_-]+",


def shipped(path):
    """A path from the config: as given if it exists, else relative to the workflow (for the
    files it ships under resources/ when Snakemake runs with another --directory)."""
    if Path(path).exists() or Path(path).is_absolute():
        return path
    return str(Path(workflow.basedir) / path)


def as_json(obj):
    """A stable JSON rendering of settings, for params (staleness) and --settings flags."""
    return json.dumps(obj, sort_keys=True)


def lang_args(pattern, langs, **wildcards):
    """`lang=path` arguments for the CLI, one per language."""
    return " ".join(
        shlex.quote(f"{lang}={pattern.format(lang=lang, **wildcards)}") for lang in langs
    )


def model_of(run):
    return config["runs"][run]["model"]


def model_spec(model):
    return config["models"][model]
