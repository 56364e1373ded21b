"""The one base of every expected failure: bad input, a missing file, a failed download.

The CLI prints such an error as one actionable line and exits 2; any other exception is a
bug and keeps its traceback. Each stage derives its own errors from `XlsentError`.
"""

from __future__ import annotations


class XlsentError(Exception):
    """An expected failure whose message names the file, line or key and says what to do."""
