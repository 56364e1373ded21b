"""The subcommands of `xlsent`, one module per workflow stage.

Every module exposes `register(subparsers)`, which adds its subcommands in the order
`xlsent --help` lists them. Each subcommand is a pair of functions side by side: `_add_NAME`
declares its parser (`add_parser`, its arguments, `set_defaults(handler=NAME)`) and `NAME`
handles the parsed arguments, so a flag and the code that reads it are never far apart.

A flag that carries a config setting has no default here: the schema
(workflow/schemas/config.schema.yaml) is the one home of defaults, and the rules always pass
the setting, so the flag is required. Flags the rules pass only in some configurations (the
corpus source's, a scratch tokenizer's) are checked by the handler with `require`.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TypeAlias

from xlsent.errors import XlsentError

# What `ArgumentParser.add_subparsers` returns (argparse names its class privately).
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

# One logger for every subcommand: its lines read `xlsent: ...` whichever stage runs.
log = logging.getLogger("xlsent")


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


def resolve_device(name: str) -> str:
    """`auto` (the config's evaluate.device default) as cuda when there is a GPU, else cpu.

    A CPU job of a cluster sees no GPU, so the same config evaluates wherever it runs.
    """
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name
