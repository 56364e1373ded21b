"""The config's JSON schema: validation that fills the defaults, and its first violation as
one sentence naming the key (`workflow/schemas/config.schema.yaml` holds every key with its
default and description)."""

from __future__ import annotations

import copy
import difflib
from collections.abc import Sequence
from typing import Any

import jsonschema


def with_defaults(validator_class: type) -> type:
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


def error_message(error: jsonschema.ValidationError, root: Sequence[str] = ()) -> str:
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
