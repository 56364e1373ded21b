"""Parallel text as the corpus stage reads it: line-aligned English/foreign byte streams.

A `Bitext` is one corpus of one language pair (e.g. Tanzil en-kk). Sources (OPUS zips, local
Moses files, the embedded demo data) all produce bitexts; cleaning consumes them without
caring where they came from. Lines stay bytes until cleaning so that invalid UTF-8 is
counted there, with its file and line, instead of crashing a reader.
"""

from __future__ import annotations

import gzip
import io
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import IO

from xlsent.errors import XlsentError
from xlsent.io import file_error

# What reading a truncated or corrupt gzip file or zip member raises (BadGzipFile is an
# OSError; zipfile raises EOFError for a member that ends early, BadZipFile for a bad CRC).
_DAMAGED = (EOFError, zlib.error, gzip.BadGzipFile, zipfile.BadZipFile)


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

    def lines(self) -> Iterator[tuple[int, bytes, bytes]]:
        """Yield (1-based line number, English line, foreign line) without line endings.

        A side that cannot be read (permissions, a truncated or corrupt file) fails with a
        CorpusError naming it, the line reached and the fix, not with gzip's or zipfile's
        exception, which names no file.
        """
        with (
            self._open(self._open_en, self.en_origin) as en,
            self._open(self._open_xx, self.xx_origin) as xx,
        ):
            sides = zip_longest(self._read(en, self.en_origin), self._read(xx, self.xx_origin))
            for lineno, (a, b) in enumerate(sides, start=1):
                if a is None or b is None:
                    longer, shorter = (
                        (self.xx_origin, self.en_origin)
                        if a is None
                        else (self.en_origin, self.xx_origin)
                    )
                    raise CorpusError(
                        f"{shorter} ends after {lineno - 1} lines but {longer} goes on: the two "
                        "sides of a Moses corpus must have the same number of lines. Re-extract "
                        "both files from the same download (or fix the one that was cut off)."
                    )
                yield lineno, _chomp(a), _chomp(b)

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

    def _read(self, stream: IO[bytes], origin: str) -> Iterator[bytes]:
        lineno = 0  # lines read whole, for the message
        try:
            for line in stream:
                lineno += 1
                yield line
        except _DAMAGED as err:
            raise self._damaged(origin, lineno, err) from err

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


def _chomp(line: bytes) -> bytes:
    if line.endswith(b"\n"):
        line = line[:-1]
    if line.endswith(b"\r"):
        line = line[:-1]
    return line


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
