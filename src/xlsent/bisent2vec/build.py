"""Build the C++ trainer with CMake, once: a build whose sources have not changed is reused.

The build directory records a digest of every source file (and the build type) in
`xlsent-build.json`; `build` compares it before running CMake, so a workflow rule or a test
session that asks for the binary again costs a hash of a few files instead of a compile.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from xlsent.bisent2vec import Bisent2vecError
from xlsent.io import read_json, write_json

log = logging.getLogger(__name__)

SOURCE_DIR = Path(__file__).resolve().parents[3] / "csrc" / "bisent2vec"
BINARY = "bisent2vec"
STAMP = "xlsent-build.json"
LOCK = ".xlsent-build.lock"


def source_digest(source_dir: str | os.PathLike[str] = SOURCE_DIR) -> str:
    """SHA-256 over the relative paths and bytes of what the build reads.

    That is CMakeLists.txt and every file under src/ and tests/ (not the README).
    """
    root = Path(source_dir)
    files = [root / "CMakeLists.txt", *(root / "src").rglob("*"), *(root / "tests").rglob("*")]
    digest = hashlib.sha256()
    for path in sorted(p for p in files if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _cmake() -> str:
    cmake = shutil.which("cmake")
    if cmake is None:
        raise Bisent2vecError(
            "cmake is not on PATH; the Bi-Sent2vec trainer is built with CMake and a C++17 "
            "compiler: install them (apt-get install cmake g++, or use the conda env "
            "envs/cpp.yaml)"
        )
    return cmake


def _run(args: list[str], what: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, cwd=cwd)
    output = proc.stdout + proc.stderr
    for line in output.splitlines():
        log.debug("%s: %s", what, line)
    if proc.returncode != 0:
        tail = "\n".join(output.splitlines()[-30:])
        raise Bisent2vecError(f"{what} failed (exit {proc.returncode}): {' '.join(args)}\n{tail}")
    return output


@contextlib.contextmanager
def _locked(build_dir: Path) -> Iterator[None]:
    """One build at a time per directory (parallel jobs or test sessions asking at once)."""
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(build_dir / LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build(
    build_dir: str | os.PathLike[str],
    source_dir: str | os.PathLike[str] = SOURCE_DIR,
    *,
    jobs: int | None = None,
    build_type: str = "Release",
    force: bool = False,
) -> Path:
    """The path of the `bisent2vec` binary in `build_dir`, compiled first unless up to date."""
    source, out = Path(source_dir), Path(build_dir)
    if not (source / "CMakeLists.txt").is_file():
        raise Bisent2vecError(
            f"no CMakeLists.txt in {source}: the C++ sources of the trainer are missing "
            "(an installed xlsent package does not ship them; run from a checkout or pass "
            "the csrc/bisent2vec directory)"
        )
    binary = out / BINARY
    wanted = {"digest": source_digest(source), "build_type": build_type, "source": str(source)}
    stamp = out / STAMP
    with _locked(out):
        if not force and binary.is_file() and stamp.is_file():
            try:
                if read_json(stamp) == wanted:
                    log.info("%s is up to date", binary)
                    return binary
            except ValueError:
                pass
        cmake = _cmake()
        log.info("building %s from %s (%s)", binary, source, build_type)
        stamp.unlink(missing_ok=True)  # a failed build must not look current
        _run(
            [cmake, "-S", str(source), "-B", str(out), f"-DCMAKE_BUILD_TYPE={build_type}"],
            "cmake configure",
        )
        _run(
            [cmake, "--build", str(out), "--parallel", str(jobs or os.cpu_count() or 1)],
            "cmake build",
        )
        if not binary.is_file():
            raise Bisent2vecError(f"the build finished but {binary} does not exist")
        write_json(stamp, wanted)
    return binary


def run_ctest(build_dir: str | os.PathLike[str]) -> str:
    """Run the C++ unit tests of a build; their output, or Bisent2vecError if one fails."""
    ctest = shutil.which("ctest")
    if ctest is None:
        raise Bisent2vecError("ctest is not on PATH (it comes with cmake): install cmake")
    return _run([ctest, "--output-on-failure"], "ctest", cwd=Path(build_dir))
