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
from typing import TypeAlias

from xlsent.arguments import UsageError, lang_paths, require

# What `ArgumentParser.add_subparsers` returns (argparse names its class privately).
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

# One logger for every subcommand: its lines read `xlsent: ...` whichever stage runs.
log = logging.getLogger("xlsent")

# Re-exported: every subcommand module takes its argument helpers from here.
__all__ = ["Subparsers", "UsageError", "lang_paths", "log", "require", "resolve_device"]


def resolve_device(name: str) -> str:
    """`auto` (the config's evaluate.device default) as cuda when there is a GPU, else cpu.

    A CPU job of a cluster sees no GPU, so the same config evaluates wherever it runs.
    """
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name
