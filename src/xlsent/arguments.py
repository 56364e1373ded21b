"""Command-line arguments as the workflow's rules pass them, shared by the subcommands
(`xlsent.commands`) and the corpus sources that read their own flags
(`xlsent.corpus.sources`): a flag required only in some uses, per-language paths, a model's
text prefixes, and a job's settings (`--settings`, one JSON object) as the dataclass of the
program it runs (`settings_object`)."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
from pathlib import Path
from typing import Any, TypeVar

from xlsent.failures.errors import XlsentError

T = TypeVar("T")


class UsageError(XlsentError):
    """A flag missing for the way the command was called (e.g. --binary with bisent2vec)."""


def require(args: argparse.Namespace, when: str, *dests: str) -> None:
    """Stop unless the flags of `dests` were given: those needed only in some uses (`when`).

    argparse cannot say "required with --source demo"; the rules pass these flags exactly
    in those uses, so a missing one is a hand-written command's mistake, named in one line.
    """
    missing = [f"--{dest.replace('_', '-')}" for dest in dests if getattr(args, dest) is None]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise UsageError(f"{' and '.join(missing)} {verb} required {when}")


def lang_paths(items: list[str]) -> dict[str, Path]:
    """`KEY=PATH` arguments (LANG=PATH, CORPUS=PATH, LABEL=PATH) as a mapping.

    The rules pass per-language inputs this way, so one flag carries them all in one order.
    """
    out = {}
    for item in items:
        key, sep, path = item.partition("=")
        if not sep:
            raise SystemExit(f"expected KEY=PATH, got {item!r}")
        out[key] = Path(path)
    return out


def add_prefix(p: argparse.ArgumentParser) -> None:
    """The model's text prefix of each side (`models.*.prefix`), put before every sentence
    (by subwords and by word-spans alike: the same ids)."""
    p.add_argument("--en-prefix", required=True, help="before every English sentence ('': none)")
    p.add_argument("--xx-prefix", required=True, help="before every other-language sentence")


def parsed_prefix(args: argparse.Namespace) -> dict[str, str]:
    """The prefixes of `add_prefix`, per side."""
    return {"en": args.en_prefix, "xx": args.xx_prefix}


def settings_object(
    cls: type[T],
    values: dict[str, Any],
    block: str,
    error: type[XlsentError] = UsageError,
) -> T:
    """`cls` (a settings dataclass) from `values`, a command's `--settings` JSON.

    The rules pass a schema block, validated and with its defaults filled, so a key the
    dataclass lacks, or a field without a default that is missing, is a program and schema
    out of step or a hand-written command's typo: either fails as `error`, naming the key
    (and the closest known one) instead of a TypeError from the constructor. `block`: the
    settings' name in the message.
    """
    known = [f.name for f in dataclasses.fields(cls)]
    for key in values:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise error(f"unknown {block} setting {key!r}{hint}; known: {', '.join(sorted(known))}")
    missing = [
        f.name
        for f in dataclasses.fields(cls)
        if f.name not in values
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise error(f"{block} settings lack {', '.join(missing)}")
    return cls(**values)
