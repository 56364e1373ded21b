"""The config's JSON schema: validation that fills the defaults, and its first violation as
one sentence naming the key (`workflow/schemas/config.schema.yaml` holds every key with its
default and description)."""

from __future__ import annotations

import copy
import difflib
import re
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
            hints = [f"`{prefix}{key}`{_did_you_mean(key, allowed, prefix)}" for key in unknown]
            return (
                f"config key {', '.join(hints)} is not known; keys allowed under "
                f"`{parent}`: {', '.join(allowed)}"
            )
    description = error.schema.get("description", "") if isinstance(error.schema, dict) else ""
    about = f" ({description})" if description else ""
    if error.validator == "not" and description:  # jsonschema's own text repeats the schema
        return f"config key `{where}`: {description}"
    if error.validator == "enum" and isinstance(error.instance, str):
        # As Snakemake's own command line answers a misspelt option: the closest choice.
        # First, before the choices and the key's description (jsonschema's words otherwise).
        choices = error.validator_value
        hint = _did_you_mean(error.instance, [str(choice) for choice in choices])
        return f"config key `{where}`: {error.instance!r}{hint} is not one of {choices!r}{about}"
    needed = _members_needed(error)
    if needed:
        fix = _what_to_write(error, where)
        return f"config key `{where}` is empty, but it needs {needed}{fix}{about}"
    if error.validator == "type" and _yaml_float_string(error):
        number = _as_yaml_number(error.instance, error.validator_value)
        return (
            f"config key `{where}`: {error.message}: YAML reads `{error.instance}` as text (its "
            f"floats need a dot and a signed exponent): write `{number}`{about}"
        )
    return f"config key `{where}`: {error.message}{about}"


def _did_you_mean(word: str, choices: Sequence[str], prefix: str = "") -> str:
    """` (did you mean `{prefix}{choice}`?)` for the choice closest to a misspelt `word`
    (difflib's, as Snakemake's command line finds one), or nothing when none is close."""
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean `{prefix}{close[0]}`?)" if close else ""


def _members_needed(error: jsonschema.ValidationError) -> str | None:
    """ "at least one entry" (or N entries) when `error` is an empty list or mapping where the
    schema asks for members (minItems or minProperties, also in a branch of a oneOf)."""
    if error.instance not in ([], {}):
        return None
    if error.validator in ("minItems", "minProperties"):
        least = error.validator_value
    elif error.validator == "oneOf":
        arrays = [branch for branch in error.validator_value if branch.get("type") == "array"]
        least = max((branch.get("minItems", 0) for branch in arrays), default=0)
    else:
        return None
    if not least:
        return None
    return "at least one entry" if least == 1 else f"at least {least} entries"


def _what_to_write(error: jsonschema.ValidationError, where: str) -> str:
    """The fix of an empty key: its default to copy where it is a list or a word, else to
    leave the key out for its default."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    default = schema.get("default")
    if isinstance(default, list | str) and default:
        shown = "[" + ", ".join(map(str, default)) + "]" if isinstance(default, list) else default
        key = where.rsplit(".", 1)[-1]
        return f": write e.g. `{key}: {shown}` (its default), or leave the key out"
    return ": leave the key out for its default" if "default" in schema else ""


def _yaml_float_string(error: jsonschema.ValidationError) -> bool:
    """Whether `error` is a number in exponent notation that YAML 1.1 (PyYAML, which reads
    Snakemake's config files) took for a string: its floats need a dot and a signed exponent,
    so `2e-3` and `1.0e5` are text."""
    wanted = error.validator_value
    numeric = {"number", "integer"} & set([wanted] if isinstance(wanted, str) else wanted)
    return (
        bool(numeric) and isinstance(error.instance, str) and bool(_EXPONENT.match(error.instance))
    )


# A number in exponent notation: sign, whole digits, fraction digits, exponent sign and digits.
_EXPONENT = re.compile(r"^([-+]?)(?=\.?\d)(\d*)(?:\.(\d*))?[eE]([-+]?)(\d+)$")


def _as_yaml_number(text: str, wanted: str | list[str]) -> str:
    """`2e-3` → `2.0e-3`, `1e5` → `1.0e+5` (or `100000` where an integer is wanted): the same
    number as YAML 1.1 reads it."""
    sign, whole, fraction, exponent_sign, exponent = _EXPONENT.match(text).groups()  # type: ignore[union-attr]
    if "number" not in wanted and float(text).is_integer():
        return str(int(float(text)))
    return f"{sign}{whole or 0}.{fraction or 0}e{exponent_sign or '+'}{exponent}"
