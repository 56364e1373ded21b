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

Modules: `schema` (the schema's validation and messages), `checks` (`validate`, `load`),
`runs` (lookups in a validated config), `outputs` (the final outputs and each table's
results, the sentence sources of the encoder evaluations, BLI dictionaries, figures), `paths`
(`check_paths`), `warnings` (`config_warnings`).
"""

import importlib

from xlsent.failures.errors import ConfigError, not_found

# The module of each name below. A name is imported when first used (PEP 562), so that a job
# that looks up one setting (`xlsent.config.runs`) does not import jsonschema and the rest of
# validation: every job of the workflow starts the `xlsent` command, and on the demo's 2 cores
# its imports are a good part of a short job.
_HOMES = {
    "check_launch": "checks",
    "load": "checks",
    "validate": "checks",
    "BliDictionary": "outputs",
    "FIGURE_DEFAULTS": "outputs",
    "Figure": "outputs",
    "VECTOR_TASKS": "outputs",
    "bli_dictionaries": "outputs",
    "bli_results": "outputs",
    "bucc_results": "outputs",
    "compare_results": "outputs",
    "final_outputs": "outputs",
    "mteb_results": "outputs",
    "mteb_runs": "outputs",
    "retrieval_results": "outputs",
    "table_outputs": "outputs",
    "figures": "outputs",
    "vector_source": "outputs",
    "vector_sources": "outputs",
    "check_paths": "paths",
    "BLI_DIRECTIONS": "runs",
    "NOT_PROGRAM_SETTINGS": "runs",
    "RunSeed": "runs",
    "aligner_settings": "runs",
    "aligners": "runs",
    "bisent2vec_settings": "runs",
    "bisent2vec_trainer_settings": "runs",
    "clean_settings": "runs",
    "dualpivot_settings": "runs",
    "encoding_settings": "runs",
    "gpus_per_job": "runs",
    "group_arguments": "runs",
    "init_source": "runs",
    "mapped_settings": "runs",
    "max_positions": "runs",
    "processes_per_node": "runs",
    "program_settings": "runs",
    "retrieval_groups": "runs",
    "retrieval_languages": "runs",
    "run_aligner": "runs",
    "run_max_length": "runs",
    "run_seeds": "runs",
    "runs_of": "runs",
    "tatoeba_languages": "runs",
    "train_request": "runs",
    "train_settings": "runs",
    "training_processes": "runs",
    "transfer_pivots": "runs",
    "config_warnings": "warnings",
}

__all__ = ["ConfigError", "not_found", *sorted(_HOMES)]


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
