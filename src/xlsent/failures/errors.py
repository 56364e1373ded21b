"""The one base of every expected failure: bad input, a missing file, a failed download.

The CLI prints such an error as one actionable line and exits 2; any other exception is a
bug and keeps its traceback. Each stage derives its own errors from `XlsentError`.
"""

from __future__ import annotations

from pathlib import Path


class XlsentError(Exception):
    """An expected failure whose message names the file, line or key and says what to do."""


class ConfigError(XlsentError):
    """A config that cannot run; the message names the key and the fix. Raised before any
    job runs (`xlsent.config`), and by a corpus source's checks of its own keys."""


def not_found(path: str | Path, kind: str) -> str:
    """`directory X does not exist` or `X is not a directory`, for a message."""
    if Path(path).exists():
        return f"{path} is not a {kind}"
    # Only the model keys reach a shell that expands `~`; the others take the path as it is.
    home = " (`~` is not expanded here: write the full path)" if str(path)[:1] == "~" else ""
    return f"{kind} {path} does not exist{home}"
