"""xlsent.download against a real HTTP server on 127.0.0.1 that can drop, ignore Range or fail."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support import ROOT, SHARED

from xlsent.download import DownloadError, download, part_path, sidecar_path

PATH = "/data/l10n.en-kk.kk.gz"


def _payload() -> bytes:
    """A real gzip file from the shared data, or (without it) a real source file of the repo."""
    shared = SHARED / "l10n" / "l10n.en-kk.kk.gz"
    if shared.is_file():
        return shared.read_bytes()
    return (ROOT / "src" / "xlsent" / "languages.py").read_bytes()


@dataclass
class Behaviour:
    """What the server does; tests change it between calls."""

    data: bytes
    cut_after: int = 0  # with `cuts` > 0: send only this many body bytes, then hang up
    cuts: int = 0  # how many of the next GET responses are cut
    ignore_range: bool = False
    status: int | None = None  # answer every request with this status and no body
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)  # method, path, Range

    def ranges(self) -> list[str | None]:
        return [rng for method, _, rng in self.seen if method == "GET"]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # keep pytest output clean
        pass

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def _answer(self, send_body: bool) -> None:
        b = self.server.behaviour
        rng = self.headers.get("Range")
        b.seen.append((self.command, self.path, rng))
        if b.status is not None:
            self._empty(b.status)
            return
        if self.path != PATH:
            self._empty(404)
            return
        start = 0
        if rng and not b.ignore_range:
            match = re.fullmatch(r"bytes=(\d+)-", rng)
            assert match, f"the client sent an unexpected Range header {rng!r}"
            start = int(match.group(1))
            if start >= len(b.data):
                self._empty(416, {"Content-Range": f"bytes */{len(b.data)}"})
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(b.data) - 1}/{len(b.data)}")
        else:
            self.send_response(200)
            self.send_header("Accept-Ranges", "none" if b.ignore_range else "bytes")
        body = b.data[start:]
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not send_body:
            return
        if b.cuts > 0:
            b.cuts -= 1
            # Promise the whole body in Content-Length, deliver part of it, then hang up.
            self.wfile.write(body[: b.cut_after])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def _empty(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    behaviour: Behaviour


@pytest.fixture
def server() -> Iterator[tuple[str, Behaviour]]:
    """(URL of the served file, its behaviour), on a free port of 127.0.0.1."""
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.behaviour = Behaviour(_payload())
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}{PATH}", httpd.behaviour
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _fetch(url: str, dest: Path, **kwargs: object) -> dict:
    # No waiting between retries in tests; small chunks so a cut lands inside the stream.
    return download(url, dest, backoff=0, chunk_size=4096, **kwargs)  # type: ignore[arg-type]


def test_plain_download_writes_the_bytes_and_a_sidecar(server, tmp_path):
    url, behaviour = server
    dest = tmp_path / "sub" / "kk.gz"
    record = _fetch(url, dest)
    assert dest.read_bytes() == behaviour.data
    sha = hashlib.sha256(behaviour.data).hexdigest()
    sidecar = json.loads(sidecar_path(dest).read_text())
    assert sidecar == record
    assert record["sha256"] == sha
    assert record["size"] == len(behaviour.data)
    assert record["url"] == url
    assert record["file"] == "kk.gz"
    assert (record["attempts"], record["resumes"]) == (1, 0)
    assert record["downloaded_at"]
    assert not part_path(dest).exists()
    assert behaviour.ranges() == [None]


def test_dropped_connection_is_resumed_with_a_range_request(server, tmp_path):
    url, behaviour = server
    cut = len(behaviour.data) // 3
    behaviour.cut_after, behaviour.cuts = cut, 1
    dest = tmp_path / "kk.gz"
    record = _fetch(url, dest)
    assert behaviour.ranges() == [None, f"bytes={cut}-"]
    assert dest.read_bytes() == behaviour.data
    assert record["sha256"] == hashlib.sha256(behaviour.data).hexdigest()
    assert (record["attempts"], record["resumes"]) == (2, 1)


def test_part_left_by_a_killed_run_is_resumed_and_hashed_whole(server, tmp_path):
    url, behaviour = server
    dest = tmp_path / "kk.gz"
    keep = len(behaviour.data) // 2
    part_path(dest).write_bytes(behaviour.data[:keep])
    record = _fetch(url, dest)
    assert behaviour.ranges() == [f"bytes={keep}-"]
    assert dest.read_bytes() == behaviour.data
    # The hash covers the bytes from the earlier run too, not only the resumed tail.
    assert record["sha256"] == hashlib.sha256(behaviour.data).hexdigest()
    assert (record["attempts"], record["resumes"]) == (1, 1)


def test_server_ignoring_range_restarts_from_zero(server, tmp_path):
    url, behaviour = server
    behaviour.ignore_range = True
    cut = len(behaviour.data) // 4
    behaviour.cut_after, behaviour.cuts = cut, 1
    dest = tmp_path / "kk.gz"
    record = _fetch(url, dest)
    # The client asked to resume; the server answered 200 with the whole file, which must
    # replace the part rather than be appended to it.
    assert behaviour.ranges() == [None, f"bytes={cut}-"]
    assert dest.read_bytes() == behaviour.data
    assert record["size"] == len(behaviour.data)
    assert record["sha256"] == hashlib.sha256(behaviour.data).hexdigest()
    assert record["resumes"] == 0


def test_complete_part_answered_416_is_finished_without_refetching(server, tmp_path):
    url, behaviour = server
    dest = tmp_path / "kk.gz"
    part_path(dest).write_bytes(behaviour.data)  # killed after the last byte, before the rename
    record = _fetch(url, dest)
    assert behaviour.ranges() == [f"bytes={len(behaviour.data)}-"]
    assert dest.read_bytes() == behaviour.data
    assert record["sha256"] == hashlib.sha256(behaviour.data).hexdigest()


def test_stale_part_longer_than_the_file_is_discarded(server, tmp_path):
    url, behaviour = server
    dest = tmp_path / "kk.gz"
    part_path(dest).write_bytes(behaviour.data + b"left over from another file")
    _fetch(url, dest)
    assert behaviour.ranges() == [f"bytes={len(behaviour.data) + 27}-", None]
    assert dest.read_bytes() == behaviour.data


def test_404_fails_at_once_naming_the_url(server, tmp_path):
    url, behaviour = server
    missing = url.replace(PATH, "/data/nope.gz")
    dest = tmp_path / "nope.gz"
    with pytest.raises(DownloadError) as info:
        _fetch(missing, dest, retries=3, hint="Fix the manifest.")
    message = str(info.value)
    assert missing in message
    assert "HTTP 404" in message
    assert "Fix the manifest." in message
    assert len(behaviour.seen) == 1  # no retries
    assert not dest.exists()
    assert not sidecar_path(dest).exists()
    assert not part_path(dest).exists()


def test_repeated_500_exhausts_retries_and_leaves_no_file(server, tmp_path):
    url, behaviour = server
    behaviour.status = 500
    dest = tmp_path / "kk.gz"
    with pytest.raises(DownloadError) as info:
        _fetch(url, dest, retries=2)
    assert url in str(info.value)
    assert "3 attempts" in str(info.value)
    assert "HTTP 500" in str(info.value)
    assert len(behaviour.seen) == 3
    assert not dest.exists()
    assert not sidecar_path(dest).exists()
    assert not part_path(dest).exists()  # nothing was received, so there is nothing to keep


def test_bytes_from_failed_attempts_are_kept_for_the_next_run(server, tmp_path):
    url, behaviour = server
    step = len(behaviour.data) // 5
    behaviour.cut_after, behaviour.cuts = step, 100
    dest = tmp_path / "kk.gz"
    with pytest.raises(DownloadError) as info:
        _fetch(url, dest, retries=1)
    assert str(part_path(dest)) in str(info.value)
    assert not dest.exists()
    assert part_path(dest).read_bytes() == behaviour.data[: 2 * step]

    behaviour.cuts = 0  # the network is back
    record = _fetch(url, dest)
    assert behaviour.ranges()[-1] == f"bytes={2 * step}-"
    assert dest.read_bytes() == behaviour.data
    assert record["sha256"] == hashlib.sha256(behaviour.data).hexdigest()
    assert not part_path(dest).exists()


def test_existing_download_is_not_fetched_again(server, tmp_path):
    url, behaviour = server
    dest = tmp_path / "kk.gz"
    first = _fetch(url, dest)
    behaviour.seen.clear()
    assert _fetch(url, dest) == first
    assert behaviour.seen == []


def test_existing_file_that_no_longer_matches_its_record_is_fetched_again(server, tmp_path):
    url, behaviour = server
    dest = tmp_path / "kk.gz"
    _fetch(url, dest)
    corrupted = bytearray(dest.read_bytes())
    corrupted[10] ^= 0xFF
    dest.write_bytes(bytes(corrupted))
    behaviour.seen.clear()
    _fetch(url, dest)
    assert behaviour.ranges() == [None]
    assert dest.read_bytes() == behaviour.data


def test_expected_sha256_is_enforced(server, tmp_path):
    url, behaviour = server
    good = hashlib.sha256(behaviour.data).hexdigest()
    ok = tmp_path / "ok.gz"
    assert _fetch(url, ok, expected_sha256=good.upper())["sha256"] == good

    bad = tmp_path / "bad.gz"
    with pytest.raises(DownloadError) as info:
        _fetch(url, bad, expected_sha256="0" * 64)
    assert good in str(info.value) and url in str(info.value)
    assert not bad.exists()
    assert not part_path(bad).exists()
    assert not sidecar_path(bad).exists()
