# What several stages share: the config's names, the wildcards' constraints and the helpers
# the rule files call. Each stage's own names and input functions are in its <stage>_inputs.smk
# beside its rules (included before them by the Snakefile); every path under results/ is a
# pattern of xlsent.layout.
import json
import shlex
from pathlib import Path

from xlsent import languages, layout
from xlsent.config import (
    bli_dictionaries,
    final_outputs,
    program_settings,
    run_seeds,
    runs_of,
)
from xlsent.config import paths as config_paths
from xlsent.layout import lang_args, names_regex
from xlsent.methods import (
    ALIGN_METHODS,
    DUALPIVOT_METHODS,
    ENCODER_METHODS,
    METHODS,
    WORD_VECTOR_METHODS,
)
from xlsent.models import local_model

# Snakemake starts the ready job of the highest priority first: the path to the first
# training job (corpus, tokenizer, subwords), then training, then what fine-tuning reads
# (words, alignments, word spans); evaluations and word vectors fill the gaps. On the
# demo's 2 cores this decides the wall time: without it, the cores aligned and trained word
# vectors for 2.5 minutes while the first training job waited for the last language's sample.
PRIORITY = {"to_training": 30, "training": 20, "to_fine_tuning": 10}

CORPUS = config["corpus"]
ALIGN = config["align"]
TATOEBA = config["evaluate"]["tatoeba"]
LANGS = languages.resolve(config["languages"])
EVAL_LANGS = languages.resolve(TATOEBA["languages"] or config["languages"])
RUN_SEEDS = list(run_seeds(config))
TATOEBA_DIR = TATOEBA["dir"] or layout.TATOEBA_DIR
# Runs that train an encoder (train), a head over a frozen encoder (train_dualpivot), both
# evaluated as sentence encoders (eval_tatoeba); and runs that train word vectors per language
# pair (bisent2vec_train, eval_tatoeba_bisent2vec, eval_bli).
ENCODER_RUNS = runs_of(config, ENCODER_METHODS)
DUALPIVOT_RUNS = runs_of(config, DUALPIVOT_METHODS)
SENTENCE_ENCODER_RUNS = ENCODER_RUNS + DUALPIVOT_RUNS
WORD_VECTOR_RUNS = runs_of(config, WORD_VECTOR_METHODS)
# The test dictionaries of evaluate.bli: what eval_bli reads, and the seed part a mapped run
# fits on (bisent2vec_train).
BLI = bli_dictionaries(config)


wildcard_constraints:
    lang="[a-z]{2}",
    split="train|dev",
    model="[a-z][a-z0-9_-]*",
    run="[a-z][a-z0-9_-]*",
    seed=r"\d+",
    corpus="[A-Za-z0-9_-]+",
    aligner="|".join(ALIGN_METHODS),
    shard=r"\d{4}",
    direction="en2xx|xx2en",


def shipped(path):
    """A config path as the workflow finds it (xlsent.config.paths.shipped)."""
    return str(config_paths.shipped(path, workflow.basedir))


def as_json(obj):
    """A stable JSON rendering of settings, for params (staleness) and --settings flags."""
    return json.dumps(obj, sort_keys=True)


def model_of(run):
    return config["runs"][run]["model"]


def model_spec(model):
    return config["models"][model]


def run_method(run):
    return config["runs"][run]["method"]


def method_of(run):
    """The row of a run's method (`xlsent.methods.METHODS`): what its training reads and
    takes."""
    return METHODS[run_method(run)]


def local_files(path):
    """The files of a local model directory (xlsent.models.local_model), so that a changed,
    added or removed file copies it again and reruns what reads the copy; none for a hub id
    or a bundled model (`model_source`). Read by fetch_model (a model of `models`) and
    fetch_aligner (WSPAlign's checkpoint).

    Inputs rather than a fingerprint param: a file that appears or disappears changes the
    input set, a file written since the copy is newer than it, and a small file (config.json)
    touched without a change reruns nothing, its checksum being the same. Files over Snakemake's
    --max-checksum-file-size (the weights) count by time alone; a file replaced by an older
    copy (cp -p, rsync -a) is not seen (docs/configuration.md: touch it)."""
    directory = local_model.local_dir(path)
    if directory is None:
        return []
    return [str(file) for file in local_model.model_files(directory)]


def tatoeba_files(langs):
    """The LASER files of `langs` in the Tatoeba directory: what the evaluations, the demo's
    test set (its outputs), the mining set and the figures read."""
    return [
        f"{TATOEBA_DIR}/tatoeba.{iso3}-eng.{side}"
        for iso3 in (languages.get(lang).iso3 for lang in langs)
        for side in (iso3, "eng")
    ]
