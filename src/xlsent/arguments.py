"""Command-line arguments as the workflow's rules pass them, shared by the subcommands
(`xlsent.commands`) and the corpus sources that read their own flags
(`xlsent.corpus.sources`): a flag required only in some uses, per-language paths, and a
model's text prefixes."""

from __future__ import annotations

import argparse
from pathlib import Path

from xlsent.errors import XlsentError


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
