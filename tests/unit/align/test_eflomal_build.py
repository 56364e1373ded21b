"""Building eflomal from PyPI's source and our patch: fetch, check, unpack, patch, compile.

Offline and in milliseconds: a stand-in sdist laid out as eflomal 2.0.0's (a one-line
src/eflomal.c), pinned in the real one's place, a patch that turns it into a program, and a
local HTTP server in PyPI's. The real source and patch are built by every test that aligns
(tests/unit/align/test_statistical.py checks what the patch is for).
"""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

from xlsent.align import eflomal_build
from xlsent.align.eflomal_build import EflomalError, compile_binary, fetch_sdist
from xlsent.download import DownloadError

PATCH = """our change
--- a/src/eflomal.c
+++ b/src/eflomal.c
@@ -1 +1,2 @@
-x
+#include <stdio.h>
+int main(void) { puts(__FILE__); return 3; }
"""


@pytest.fixture
def sdist(tmp_path, monkeypatch) -> Path:
    """A stand-in eflomal-2.0.0.tar.gz whose SHA-256 is the pinned one for the test."""
    path = tmp_path / "sdist" / eflomal_build.SDIST_NAME
    path.parent.mkdir()
    with tarfile.open(path, "w:gz") as tar:
        for name, text in [("src/eflomal.c", "x\n"), ("README.md", "not a source\n")]:
            member = tarfile.TarInfo(f"eflomal-2.0.0/{name}")
            member.size = len(text)
            tar.addfile(member, io.BytesIO(text.encode()))
    monkeypatch.setattr(
        eflomal_build, "SDIST_SHA256", hashlib.sha256(path.read_bytes()).hexdigest()
    )
    return path


@pytest.fixture
def patch(tmp_path) -> Path:
    path = tmp_path / "seed.patch"
    path.write_text(PATCH)
    return path


def test_a_build_unpacks_patches_and_compiles(sdist, patch, tmp_path) -> None:
    binary = compile_binary(tmp_path / "bin" / "eflomal", sdist, patch)
    run = subprocess.run([binary], capture_output=True, text=True)
    assert (run.returncode, run.stdout) == (3, "src/eflomal.c\n")  # the patched source
    assert list(binary.parent.iterdir()) == [binary]  # the unpacked sources are gone
    # The same bytes from another build elsewhere: no path of a build finds its way in.
    assert compile_binary(tmp_path / "other" / "eflomal", sdist, patch).read_bytes() == (
        binary.read_bytes()
    )


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("compiler fails", "compiling eflomal failed"),
        ("patch does not match", r"seed\.patch does not apply to eflomal 2\.0\.0's src/"),
        ("another sdist", r"has SHA-256 [0-9a-f]{64}, not [0-9a-f]{64} .*delete it"),
        ("no patch", r"seed\.patch is missing"),
    ],
)
def test_a_failed_build_says_why_and_leaves_nothing(
    sdist, patch, tmp_path, monkeypatch, case: str, message: str
) -> None:
    if case == "compiler fails":
        monkeypatch.setenv("CC", "false")
    elif case == "patch does not match":
        patch.write_text(PATCH.replace("-x", "-y"))
    elif case == "another sdist":
        monkeypatch.setattr(eflomal_build, "SDIST_SHA256", "0" * 64)
    else:
        patch.unlink()
    out = tmp_path / "bin"
    with pytest.raises(EflomalError, match=message):
        compile_binary(out / "eflomal", sdist, patch)
    assert not out.exists() or list(out.iterdir()) == []


def test_the_sdist_is_downloaded_checked_and_kept(sdist, static_server, tmp_path, monkeypatch):
    base, root = static_server
    (root / sdist.name).write_bytes(sdist.read_bytes())
    monkeypatch.setattr(eflomal_build, "SDIST_URL", f"{base}/{sdist.name}")
    dest = tmp_path / "downloads" / sdist.name
    assert fetch_sdist(dest).read_bytes() == sdist.read_bytes()
    # Once there (downloaded, or placed by hand), it is not fetched again.
    (root / sdist.name).unlink()
    sidecar = dest.with_name(dest.name + ".json")
    sidecar.unlink()
    assert fetch_sdist(dest) == dest


def test_a_failed_download_says_where_to_place_the_file(
    sdist, static_server, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(eflomal_build, "SDIST_URL", f"{static_server[0]}/{sdist.name}")
    dest = tmp_path / "downloads" / sdist.name
    with pytest.raises(DownloadError, match=rf"HTTP 404.*place it at {re.escape(str(dest))}"):
        fetch_sdist(dest)
    assert not dest.exists()
