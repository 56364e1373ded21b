"""Parallel text as the corpus stage reads it: line-aligned English/foreign byte streams.

A `Bitext` is one corpus of one language pair (e.g. Tanzil en-kk). Sources (OPUS zips, local
Moses files, the embedded demo data) all produce bitexts; cleaning consumes them without
caring where they came from. Lines stay bytes until cleaning so that invalid UTF-8 is
counted there, with its file and line, instead of crashing a reader.
"""

from __future__ import annotations

import gzip
import io
import itertools
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pyarrow as pa

from xlsent.corpus.lines import Facts, read_lines
from xlsent.failures.errors import XlsentError
from xlsent.io import file_error

# What reading a truncated or corrupt gzip file or zip member raises (BadGzipFile is an
# OSError; zipfile raises EOFError for a member that ends early, BadZipFile for a bad CRC).
_DAMAGED = (EOFError, zlib.error, gzip.BadGzipFile, zipfile.BadZipFile)
_LINES_BATCH = 10_000  # pairs read at a time when `Bitext.lines` yields them one by one


class CorpusError(XlsentError):
    """Bad corpus input that cannot be skipped line by line; the message says how to fix it."""


@dataclass(frozen=True)
class Bitext:
    corpus: str  # the corpus name written to the `source` column, e.g. "Tanzil"
    en_origin: str  # where the English side lives, for messages (a path or zip member)
    xx_origin: str
    _open_en: Callable[[], IO[bytes]]
    _open_xx: Callable[[], IO[bytes]]
    zip_path: Path | None = None  # the zip both sides are members of, for messages

    def batches(
        self, size: int, facts: Facts | None = None
    ) -> Iterator[tuple[int, pa.StructArray, pa.StructArray]]:
        """Yield (line number of the first pair, English lines, foreign lines), up to `size`
        pairs a batch, as struct arrays: the lines without their ends (`line`, binary_view)
        and the fields `facts` computes for each (see `xlsent.corpus.lines`).

        Both sides are read in blocks; a batch ends where a block of either side does, so
        that no line is copied. Errors are those a line-by-line reading of both sides side by
        side would raise, at the same place: a side that cannot be opened; a side that ends
        before the other (a CorpusError naming both); a side whose compressed data is
        truncated or corrupt (a CorpusError naming it and the lines read whole before the
        damage). When a side is damaged where the other ends, the damage is reported, the
        English side's first. Every pair before the error is yielded first.
        """
        if size < 1:
            raise ValueError(f"batch size must be positive, got {size}")
        with (
            _Side(self, self._open_en, self.en_origin, facts) as en,
            _Side(self, self._open_xx, self.xx_origin, facts) as xx,
        ):
            while (a := en.peek(size)) is not None and (b := xx.peek(size)) is not None:
                n = min(len(a), len(b))
                yield en.lines + 1, a.slice(0, n), b.slice(0, n)
                en.consume(n)
                xx.consume(n)
            # One side has no line left: line `paired + 1` is where a line-by-line reading
            # would have stopped, and what it found there decides the error.
            paired = en.lines
            at_end = [side for side in (en, xx) if side.peek(1) is None]
            for side in at_end:
                if side.failure is not None:
                    raise side.failure
            if len(at_end) == 1:
                shorter, longer = (en, xx) if at_end[0] is en else (xx, en)
                raise CorpusError(
                    f"{shorter.origin} ends after {paired} lines but {longer.origin} goes on: "
                    "the two sides of a Moses corpus must have the same number of lines. "
                    "Re-extract both files from the same download (or fix the one that was "
                    "cut off)."
                )

    def lines(self) -> Iterator[tuple[int, bytes, bytes]]:
        """Yield (1-based line number, English line, foreign line) without line endings.

        A side that cannot be read (permissions, a truncated or corrupt file) fails with a
        CorpusError naming it, the line reached and the fix, not with gzip's or zipfile's
        exception, which names no file.
        """
        for first, en, xx in self.batches(_LINES_BATCH):
            en_lines, xx_lines = en.field("line").to_pylist(), xx.field("line").to_pylist()
            yield from zip(itertools.count(first), en_lines, xx_lines)

    @property
    def origin(self) -> str:
        return f"{self.en_origin} + {self.xx_origin}"

    def _open(self, opener: Callable[[], IO[bytes]], origin: str) -> IO[bytes]:
        try:
            return opener()
        except _DAMAGED as err:  # a zip member's header is read when it is opened
            raise self._damaged(origin, 0, err) from err
        except OSError as err:
            error = file_error(err, err.filename or origin, "read", CorpusError)
            if error is None:
                raise
            raise error from err

    def _damaged(self, origin: str, lineno: int, err: Exception) -> CorpusError:
        """The error for a side whose compressed data ends early or is corrupt."""
        stream = "gzip stream" if self.zip_path is None else "compressed data"
        if isinstance(err, EOFError):
            what = f"the {stream} ends early"
        else:
            what = f"the {stream} is corrupt ({err})"
        where = f"after line {lineno}" if lineno else "before its first line"
        if self.zip_path is None:
            fix = (
                "the file is truncated or corrupt: copy or download it again; "
                f"`gzip -t {origin}` checks a file"
            )
        else:
            fix = (
                f"the zip is truncated or corrupt: delete {self.zip_path} and rerun the workflow: "
                "the download rule (opus_download) fetches it again"
            )
        return CorpusError(f"{origin}: {what} {where} ({fix})")


class _Side:
    """One side of a bitext, read in blocks. `peek(n)` shows up to n of its next lines (none
    only at its end: it ended, or `failure` ended it), `consume(n)` moves past them; `lines`
    counts the lines moved past."""

    def __init__(
        self,
        bitext: Bitext,
        opener: Callable[[], IO[bytes]],
        origin: str,
        facts: Facts | None,
    ):
        self.origin = origin
        self.lines = 0
        self.failure: CorpusError | None = None
        self._bitext, self._opener, self._facts = bitext, opener, facts
        self._stream = bitext._open(opener, origin)
        self._blocks = read_lines(self._stream, facts=facts)
        self._pending: list[pa.StructArray] = []  # lines split off blocks, not yet consumed
        self._done = False

    def __enter__(self) -> _Side:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()

    def peek(self, n: int) -> pa.StructArray | None:
        while not self._pending and not self._done:
            self._read_block()
        return self._pending[0].slice(0, n) if self._pending else None

    def consume(self, n: int) -> None:
        self.lines += n
        if n < len(self._pending[0]):
            self._pending[0] = self._pending[0].slice(n)
        else:
            self._pending.pop(0)

    def _read_block(self) -> None:
        try:
            lines = next(self._blocks)
        except StopIteration:
            self._done = True
        except _DAMAGED as err:
            self._done = True
            self._recover(err)
        else:
            self._pending.append(lines)

    def _recover(self, err: Exception) -> None:
        """Queue the lines that a line-by-line reading gets whole before the damage, beyond
        those split off blocks already; and set the error that reading raises as `failure`.

        A failed block read loses what it had decompressed of its block, so the reading is
        redone line by line (from a fresh stream: only a damaged side pays for it). The
        error then names the line at which reading line by line stops.
        """
        split = self.lines + sum(len(lines) for lines in self._pending)
        recovered: list[bytes] = []  # with their line ends
        whole = 0  # lines read whole
        try:
            with self._bitext._open(self._opener, self.origin) as stream:
                for whole, line in enumerate(stream, start=1):
                    if whole > split:
                        recovered.append(line if line.endswith(b"\n") else line + b"\n")
        except _DAMAGED as again:
            err = again
        self.failure = self._bitext._damaged(self.origin, whole, err)
        self.failure.__cause__ = err
        self._pending.extend(read_lines(io.BytesIO(b"".join(recovered)), facts=self._facts))


def _open_maybe_gzip(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def moses_files(corpus: str, en_path: Path, xx_path: Path) -> Bitext:
    """Two line-aligned Moses files, plain or gzip."""
    return Bitext(
        corpus,
        str(en_path),
        str(xx_path),
        lambda: _open_maybe_gzip(en_path),
        lambda: _open_maybe_gzip(xx_path),
    )


def moses_zip(corpus: str, zip_path: Path, en_member: str, xx_member: str) -> Bitext:
    """Two members of a zip archive as OPUS packs its Moses downloads."""

    def opener(member: str) -> Callable[[], IO[bytes]]:
        def open_member() -> IO[bytes]:
            archive = zipfile.ZipFile(zip_path)
            try:
                return _ClosingMember(archive, archive.open(member))
            except BaseException:
                archive.close()
                raise

        return open_member

    return Bitext(
        corpus,
        f"{zip_path}:{en_member}",
        f"{zip_path}:{xx_member}",
        opener(en_member),
        opener(xx_member),
        zip_path,
    )


def in_memory(corpus: str, origin: str, pairs: Iterable[tuple[str, str]]) -> Bitext:
    """Pairs already held as text (the embedded demo data)."""
    pairs = list(pairs)
    if any("\n" in a or "\n" in b for a, b in pairs):
        raise ValueError(f"{origin}: a segment contains a newline; collapse whitespace first")
    en = b"".join(a.encode() + b"\n" for a, _ in pairs)
    xx = b"".join(b.encode() + b"\n" for _, b in pairs)
    return Bitext(
        corpus, f"{origin} (en)", f"{origin} (xx)", lambda: io.BytesIO(en), lambda: io.BytesIO(xx)
    )


class _ClosingMember(io.BufferedReader):
    """A zip member stream that also closes its archive."""

    def __init__(self, archive: zipfile.ZipFile, member: IO[bytes]):
        super().__init__(member)  # type: ignore[arg-type]
        self._archive = archive

    def close(self) -> None:
        super().close()
        self._archive.close()
