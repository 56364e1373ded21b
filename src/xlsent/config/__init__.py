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
`runs` (lookups in a validated config), `outputs` (BLI dictionaries, figures), `paths`
(`check_paths`), `warnings` (`config_warnings`).
"""

from xlsent.config.checks import load, validate
from xlsent.config.outputs import FIGURE_DEFAULTS, BliDictionary, Figure, bli_dictionaries, figures
from xlsent.config.paths import check_paths
from xlsent.config.runs import (
    ALIGN_METHODS,
    BLI_DIRECTIONS,
    DUALPIVOT_METHODS,
    ENCODER_METHODS,
    NOT_PROGRAM_SETTINGS,
    SENTENCE_ENCODER_METHODS,
    WORD_VECTOR_METHODS,
    RunSeed,
    aligner_settings,
    bisent2vec_settings,
    clean_settings,
    dualpivot_settings,
    encoding_settings,
    group_arguments,
    init_source,
    mapped_settings,
    max_positions,
    program_settings,
    retrieval_groups,
    retrieval_languages,
    run_max_length,
    run_seeds,
    runs_of,
    tatoeba_languages,
    train_settings,
    trainer_settings,
    transfer_pivots,
)
from xlsent.config.warnings import config_warnings
from xlsent.errors import ConfigError, not_found

__all__ = [
    "ALIGN_METHODS",
    "BLI_DIRECTIONS",
    "DUALPIVOT_METHODS",
    "ENCODER_METHODS",
    "FIGURE_DEFAULTS",
    "NOT_PROGRAM_SETTINGS",
    "SENTENCE_ENCODER_METHODS",
    "WORD_VECTOR_METHODS",
    "BliDictionary",
    "ConfigError",
    "Figure",
    "RunSeed",
    "aligner_settings",
    "bisent2vec_settings",
    "bli_dictionaries",
    "check_paths",
    "clean_settings",
    "config_warnings",
    "dualpivot_settings",
    "encoding_settings",
    "figures",
    "group_arguments",
    "init_source",
    "load",
    "mapped_settings",
    "max_positions",
    "not_found",
    "program_settings",
    "retrieval_groups",
    "retrieval_languages",
    "run_max_length",
    "run_seeds",
    "runs_of",
    "tatoeba_languages",
    "train_settings",
    "trainer_settings",
    "transfer_pivots",
    "validate",
]
