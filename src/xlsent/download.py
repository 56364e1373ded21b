"""Resumable HTTP downloads of large files (OPUS zips, Tatoeba files, MUSE dictionaries).

Bytes go to `{dest}.part` and are renamed to `dest` only once complete and checked, so a file
at `dest` is always whole. A killed or dropped download leaves its `.part` behind and the next
call resumes it with an HTTP Range request instead of starting over. Beside each finished file
a sidecar `{dest}.json` records where it came from, its size and SHA-256; a later call that
finds both (and the file still matches) returns that record without touching the network.

Bytes are stored exactly as the server sends them (no transparent gzip decoding): a `.gz` file
stays gzip even when a server labels it `Content-Encoding: gzip`, and Content-Length and Range
offsets then count the same bytes that are on disk.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import requests
import urllib3
from tqdm import tqdm

from xlsent.failures.errors import XlsentError
from xlsent.io import read_json, sha256_file, write_json

logger = logging.getLogger(__name__)

# 408 and 429 are "try again later" answers, not mistakes in the URL, so they are retried
# like 5xx; every other 4xx means the request itself is wrong and retrying cannot help.
_RETRY_STATUSES = frozenset({408, 429})
_MAX_DELAY = 60.0
_HEADERS = {"Accept-Encoding": "identity", "User-Agent": "xlsent-downloader"}
_DEFAULT_HINT = (
    "Check the URL; if the file has moved or the server is unreachable from here, download it "
    "by hand and point the workflow at the local copy."
)


class DownloadError(XlsentError):
    """A download that cannot be completed; the message names the URL and what to do."""


class _Retryable(Exception):
    """A transient failure: try again, resuming from the bytes already on disk."""


# requests.ConnectionError also covers refused connections and DNS failures; urllib3 errors
# come from reading the body, e.g. a connection dropped in the middle of the file.
_TRANSIENT = (_Retryable, requests.ConnectionError, requests.Timeout, urllib3.exceptions.HTTPError)


def part_path(dest: str | os.PathLike[str]) -> Path:
    """Where an unfinished download of `dest` is kept."""
    dest = Path(dest)
    return dest.with_name(dest.name + ".part")


def sidecar_path(dest: str | os.PathLike[str]) -> Path:
    """The JSON record written beside a finished download."""
    dest = Path(dest)
    return dest.with_name(dest.name + ".json")


def download(
    url: str,
    dest: str | os.PathLike[str],
    *,
    retries: int = 5,
    timeout: float = 60,
    chunk_size: int = 1 << 20,
    expected_sha256: str | None = None,
    backoff: float = 1.0,
    hint: str | None = None,
) -> dict[str, Any]:
    """Download `url` to `dest`, resuming a `.part` left by an earlier attempt; return its record.

    Transient failures (connection errors, timeouts, 5xx, 408, 429) are retried up to `retries`
    times, waiting `backoff * 2**n` seconds (at most 60) and resuming each time. Other HTTP
    errors fail at once. `hint` is appended to error messages (e.g. how to get the file by
    hand). The record, also written to `{dest}.json`, has url, file, size, sha256,
    downloaded_at, attempts (requests made) and resumes (requests that continued from bytes
    already on disk).
    """
    if retries < 0:
        raise ValueError(f"retries must be >= 0, not {retries}")
    dest = Path(dest)
    hint = hint or _DEFAULT_HINT
    expected = expected_sha256.lower() if expected_sha256 else None
    existing = _existing_record(dest, url, expected)
    if existing is not None:
        logger.info(
            "%s is already downloaded (%d bytes); not fetching %s", dest, dest.stat().st_size, url
        )
        return existing
    # A stale sidecar must not vouch for whatever ends up at `dest` next.
    sidecar_path(dest).unlink(missing_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)

    part = part_path(dest)
    state = _State()
    attempts = retries + 1
    with requests.Session() as session:
        for attempt in range(1, attempts + 1):
            state.attempts = attempt
            try:
                if _attempt(session, url, part, state, timeout, chunk_size, hint):
                    break
            except _TRANSIENT as err:
                have = part.stat().st_size if part.exists() else 0
                if attempt == attempts:
                    kept = (
                        f"; the {have} bytes received are kept in {part} and the next run resumes "
                        "from there"
                        if have
                        else ""
                    )
                    raise DownloadError(
                        f"{url}: giving up after {attempt} attempts ({_describe(err)}){kept}. "
                        f"Run again later. {hint}"
                    ) from err
                delay = min(backoff * 2 ** (attempt - 1), _MAX_DELAY)
                logger.warning(
                    "%s: attempt %d of %d failed (%s); %d bytes on disk, retrying in %.0f s",
                    url,
                    attempt,
                    attempts,
                    _describe(err),
                    have,
                    delay,
                )
                time.sleep(delay)
        else:  # every attempt ended in a restart (inconsistent server answers)
            part.unlink(missing_ok=True)
            raise DownloadError(
                f"{url}: the server's answers stayed inconsistent with the partial download "
                f"after {attempts} attempts, so nothing was kept. Run again later. {hint}"
            )

    size = part.stat().st_size
    sha256 = state.sha256(part)
    if expected is not None and sha256 != expected:
        part.unlink()
        raise DownloadError(
            f"{url}: SHA-256 of the downloaded file is {sha256} but {expected} was expected; the "
            "download was deleted. Either the file on the server changed (update the expected "
            f"checksum after checking it) or the transfer was corrupted (run again). {hint}"
        )
    record = {
        "url": url,
        "file": dest.name,
        "size": size,
        "sha256": sha256,
        "downloaded_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "attempts": state.attempts,
        "resumes": state.resumes,
    }
    # Sidecar first, then the rename: if the process dies in between, the complete `.part`
    # is still there and the next run finishes from it without downloading again.
    write_json(sidecar_path(dest), record)
    os.replace(part, dest)
    logger.info("downloaded %s (%d bytes, sha256 %s) to %s", url, size, sha256, dest)
    return record


class _State:
    """What survives between attempts of one download call."""

    def __init__(self) -> None:
        self.attempts = 0
        self.resumes = 0
        self.total: int | None = None  # full size of the file, once a server has said
        self._hasher = hashlib.sha256()
        self._hashed = 0  # bytes of the part file that `_hasher` has seen

    def restart(self) -> None:
        self._hasher = hashlib.sha256()
        self._hashed = 0

    def sync(self, part: Path) -> int:
        """Make the hash cover exactly the bytes of `part`; return their number."""
        size = part.stat().st_size if part.exists() else 0
        if size != self._hashed:
            # The part came from an earlier process (or an interrupted write): hash it from disk.
            self._hasher = hashlib.sha256()
            self._hashed = 0
            if size:
                with open(part, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        self.update(block)
        return size

    def update(self, data: bytes) -> None:
        self._hasher.update(data)
        self._hashed += len(data)

    def sha256(self, part: Path) -> str:
        self.sync(part)
        return self._hasher.hexdigest()


def _attempt(
    session: requests.Session,
    url: str,
    part: Path,
    state: _State,
    timeout: float,
    chunk_size: int,
    hint: str,
) -> bool:
    """One request. True when `part` is complete; False to start over at once from zero."""
    offset = state.sync(part)
    headers = dict(_HEADERS)
    if offset:
        headers["Range"] = f"bytes={offset}-"
    with session.get(url, headers=headers, stream=True, timeout=timeout) as resp:
        status = resp.status_code
        if status == 416 and offset:
            return _range_not_satisfiable(session, url, resp, part, state, offset, timeout)
        if status >= 500 or status in _RETRY_STATUSES:
            raise _Retryable(f"HTTP {status} {resp.reason}")
        if status >= 400:
            raise DownloadError(
                f"{url}: HTTP {status} {resp.reason}; not retrying, since the server refused "
                f"the request itself. {hint}"
            )
        if status not in (200, 206):
            raise DownloadError(f"{url}: unexpected answer HTTP {status} {resp.reason}. {hint}")
        if status == 206:
            start, total = _content_range(resp.headers.get("Content-Range"))
            if start != offset:
                logger.warning(
                    "%s: asked for bytes from %d but the server sent from %s; starting over",
                    url,
                    offset,
                    start,
                )
                part.unlink(missing_ok=True)
                state.restart()
                return False
            mode = "ab" if offset else "wb"
            if offset:
                state.resumes += 1
                logger.info("%s: resuming at byte %d", url, offset)
        else:
            if offset:
                logger.warning(
                    "%s: the server ignored the Range request (HTTP 200); restarting from zero",
                    url,
                )
            offset = 0
            total = _int_header(resp, "Content-Length")
            mode = "wb"
            state.restart()
        if total is not None:
            state.total = total
        with (
            open(part, mode) as fh,
            tqdm(
                total=total,
                initial=offset,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=part.name.removesuffix(".part"),
                file=sys.stderr,
                disable=None,  # silent when stderr is not a terminal (Snakemake logs)
                leave=False,
            ) as bar,
        ):
            for chunk in resp.raw.stream(chunk_size, decode_content=False):
                fh.write(chunk)
                state.update(chunk)
                bar.update(len(chunk))
    size = part.stat().st_size
    if total is not None and size != total:
        if size < total:
            raise _Retryable(f"connection closed after {size} of {total} bytes")
        logger.warning("%s: got %d bytes but the file has %d; starting over", url, size, total)
        part.unlink()
        state.restart()
        return False
    return True


def _range_not_satisfiable(
    session: requests.Session,
    url: str,
    resp: requests.Response,
    part: Path,
    state: _State,
    offset: int,
    timeout: float,
) -> bool:
    """HTTP 416 to `Range: bytes={offset}-`: either the part is already whole, or it is stale."""
    # The server states the full size in `Content-Range: bytes */N`; failing that, use the
    # size a previous answer gave, and failing that, ask with HEAD.
    _, total = _content_range(resp.headers.get("Content-Range"))
    if total is None:
        total = state.total
    if total is None:
        total = _head_size(session, url, timeout)
    if total == offset:
        logger.info("%s: the %d bytes on disk are already the whole file", url, offset)
        state.resumes += 1
        state.total = total
        return True
    logger.warning(
        "%s: %s holds %d bytes but the file on the server has %s; starting over",
        url,
        part,
        offset,
        total if total is not None else "an unknown size",
    )
    part.unlink()
    state.restart()
    return False


def _head_size(session: requests.Session, url: str, timeout: float) -> int | None:
    try:
        with session.head(url, headers=_HEADERS, timeout=timeout, allow_redirects=True) as resp:
            return _int_header(resp, "Content-Length") if resp.ok else None
    except requests.RequestException:
        return None


_CONTENT_RANGE = re.compile(r"bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)")


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, full size) from a Content-Range header; None where absent or `*`."""
    match = _CONTENT_RANGE.match(value or "")
    if not match:
        return None, None
    start, total = match.groups()
    return (
        int(start) if start is not None else None,
        int(total) if total != "*" else None,
    )


def _int_header(resp: requests.Response, name: str) -> int | None:
    value = resp.headers.get(name, "")
    return int(value) if value.isdigit() else None


def _describe(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return text if len(text) <= 300 else text[:300] + "..."


def _existing_record(dest: Path, url: str, expected: str | None) -> dict[str, Any] | None:
    """The sidecar record of a finished download of `url` at `dest` that still matches it."""
    sidecar = sidecar_path(dest)
    if not (dest.is_file() and sidecar.is_file()):
        return None
    try:
        record = read_json(sidecar)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    reason = None
    if record.get("url") != url:
        reason = f"it was downloaded from {record.get('url')}"
    elif record.get("size") != dest.stat().st_size:
        reason = "its size differs from the record"
    elif expected is not None and record.get("sha256") != expected:
        reason = f"its recorded SHA-256 is not the expected {expected}"
    elif record.get("sha256") != sha256_file(dest):
        reason = "its content no longer matches the recorded SHA-256"
    if reason:
        logger.warning("%s exists but %s; downloading it again", dest, reason)
        return None
    return record
