"""What both cleanings build on: `xlsent.corpus.clean` (every pair filtered, then the repeats
dropped) and `xlsent.corpus.capped` (DAP's, with the per-source cap drawn before the token
filters).

A cleaning's settings (`CleanConfig`), each style's filters in order (`FILTERS`) and the
statistic of its character cleanup (`CHANGED`); how a batch's dropped pairs are counted and
located (`account`), and a language that kept none stopped (`check_kept`); the schema of the
cleaned pairs (`CORPUS_SCHEMA`), and the scratch directory beside them (`scratch`), whose
write failures name the output (`naming`).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from xlsent.corpus import dap_filters, pair_filters
from xlsent.corpus.bitext import CorpusError
from xlsent.defaults import schema_defaults
from xlsent.io import OutputError, describe_os_error

log = logging.getLogger(__name__)

# Each style's filters, in order: its per-pair filters, then those over the whole corpus.
FILTERS = {
    "words": (*pair_filters.FILTERS, "length_ratio", "duplicate"),
    "dap": (*dap_filters.FILTERS, "duplicate"),
}
# The statistic that counts the pairs whose text a style's character cleanup changed.
CHANGED = {"words": "control_chars_replaced", "dap": "characters_removed"}
CORPUS_SCHEMA = pa.schema(
    [("id", pa.int64()), ("en", pa.string()), ("xx", pa.string()), ("source", pa.string())]
)
SENTENCES = ("en", "xx")  # its columns of text that seldom repeats (`io.ParquetWriter`)
EXAMPLES = 5  # locations kept per filter in the stats, for a human to look at


@dataclass(frozen=True)
@schema_defaults("corpus.clean", per_source_cap="corpus.per_source_cap", seed="corpus.seed")
class CleanConfig:
    """The config's `corpus.clean` (the schema's keys and defaults), with `tokenizer` the
    fetched model's directory rather than its name; `batch_size` is no setting. `xlsent
    clean` builds it from `--settings` (`xlsent.config.clean_settings`) and
    `--tokenizer-dir`."""

    min_tokens: int
    max_length_ratio: float  # style words
    style: str
    tokenizer: str | Path | None  # style dap: a directory holding its tokenizer.json
    # Style dap: `corpus.per_source_cap` and `corpus.seed`, the cap drawn before the token
    # filters (`xlsent.corpus.capped`); None: every pair is filtered, the cap is the sample's.
    per_source_cap: int | None
    seed: int
    batch_size: int = 100_000


def check_kept(stats: dict, lang: str) -> None:
    """Stop, saying what to check, when no pair of `lang` survived cleaning: the fix of what
    dropped most of them (`_FIXES`), of files without a line, or else a look at the files."""
    if stats["kept"] == 0:
        origins = ", ".join(s["origin"] for s in stats["sources"].values()) or "no source"
        dropped = stats["dropped"]
        if stats["read"] == 0:
            fix = "The files hold no line: copy or download them again"
        else:
            fix = _FIXES.get(
                max(dropped, key=dropped.get), f"Check that the files hold {lang}-English text"
            )
        raise CorpusError(
            f"{lang}: no pair survived cleaning (read {stats['read']} from {origins}; "
            f"dropped {dropped}). {fix}, or remove the language from `languages`."
        )


# What to change when one filter dropped most pairs of a language that kept none.
_FIXES = {
    "too_short": "Lower corpus.clean.min_tokens (the pairs are shorter)",
    "invalid_utf8": "Convert the files to UTF-8 (iconv -f THEIR-ENCODING -t UTF-8)",
}


@contextlib.contextmanager
def scratch(out_path: Path) -> Iterator[Path]:
    """A scratch directory beside `out_path` for the passes, removed at the end (and at the
    start, if a killed run left one)."""
    scratch = out_path.with_name(f".{out_path.name}.pass1")
    with naming(out_path):
        out_path.parent.mkdir(parents=True, exist_ok=True)
        _remove(scratch)
        scratch.mkdir()
    try:
        yield scratch
    finally:
        _remove(scratch)


@contextlib.contextmanager
def naming(out_path: Path) -> Iterator[None]:
    """Around writes to the scratch directory: a failure the user can fix (a full disk, a file
    size limit) names `out_path`, whose directory the scratch files are in."""
    try:
        yield
    except OSError as err:
        fix = describe_os_error(err, out_path)
        if fix is None:
            raise
        raise OutputError(f"cannot write {out_path}: {fix}", out_path) from err


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)  # the first pass's file of an earlier version


def account(
    reason: np.ndarray,
    names: tuple[str, ...],
    first: int,
    origin: str,
    dropped: dict,
    examples: dict[str, list[str]],
    utf8: Sequence[tuple[str, np.ndarray]] = (),
) -> None:
    """Count a batch's dropped pairs per filter (`reason` indexes `names` from 1), and keep
    the first locations of each. `utf8`: each side's origin and which of its lines are valid
    UTF-8 (the `utf8` line fact), so that a line dropped as not UTF-8 names the file with the
    bad bytes, not both files of the pair (`origin`)."""
    counts = np.bincount(reason, minlength=len(names) + 1)
    # Filters in the order of their first drop, as a pair-by-pair loop would meet them.
    hits = sorted((int(np.argmax(reason == code)), code) for code in np.flatnonzero(counts[1:]) + 1)
    for _, code in hits:
        name = names[code - 1]
        dropped[name] += int(counts[code])
        rows = np.flatnonzero(reason == code)

        def located(row: int, name: str = name) -> str:
            if name != "invalid_utf8":
                return origin
            return " + ".join(side for side, valid in utf8 if not valid[row]) or origin

        if name == "invalid_utf8":
            for row in rows:
                log.warning("%s line %d is not valid UTF-8; skipped", located(row), first + row)
        seen = examples.setdefault(name, [])
        seen.extend(f"{located(row)}:{first + row}" for row in rows[: EXAMPLES - len(seen)])
