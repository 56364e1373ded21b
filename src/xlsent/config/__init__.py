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
from types import ModuleType

# Re-exported (`as`: a name of the package, whose `__all__` is computed when asked).
from xlsent.failures.errors import ConfigError as ConfigError
from xlsent.failures.errors import not_found as not_found

# The modules whose names (each module's `__all__`) the package gives, the cheapest to import
# first. A name is imported when first used (PEP 562), so that a job that looks up one setting
# (`xlsent.config.runs`) does not import jsonschema and the rest of validation: every job of
# the workflow starts the `xlsent` command, and on the demo's 2 cores its imports are a good
# part of a short job. A module's new name goes in its own `__all__`, and nowhere else.
_MODULES = ("runs", "outputs", "warnings", "paths", "checks")


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def __getattr__(name: str) -> object:
    if name == "__all__":
        given = [each for home in _MODULES for each in _module(home).__all__]
        return ["ConfigError", "not_found", *sorted(given)]
    for home in _MODULES:
        module = _module(home)
        if name in module.__all__:
            value = getattr(module, name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})
