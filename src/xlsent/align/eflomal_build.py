"""Build eflomal's C aligner with a seed: PyPI's source of eflomal 2.0.0 and our patch.

The released eflomal (2.0.0 on PyPI, the C sources of upstream's newest commit too) seeds its
sampler from /dev/urandom and hands the samplers their states in whatever order OpenMP's
threads arrive, so two runs on the same input give different links. csrc/eflomal/seed.patch
adds a `-x SEED` flag and hands the states out in sampler order (its README says how): the
same input, seed and sampler count give the same links byte for byte, on any number of
threads.

The repository holds only that patch. A build takes the sdist from PyPI, checks it against
the SHA-256 pinned here, unpacks its src/, applies the patch with `patch` and compiles
eflomal.c, which includes the other files, in one compiler call. The workflow downloads the
sdist on the login node (rule eflomal_download) and compiles it to a fixed path (rule
eflomal_build, which reruns when the patch changes); elsewhere (tests, benchmarks, a script)
`default_binary` does both once into the checkout's build/eflomal/, under a name that
carries the digest of the source, patch and flags.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from xlsent.download import download
from xlsent.failures.errors import XlsentError
from xlsent.io import sha256_file

log = logging.getLogger(__name__)

PATCH = Path(__file__).resolve().parents[3] / "csrc" / "eflomal" / "seed.patch"
BUILD_DIR = PATCH.parents[2] / "build" / "eflomal"
# PyPI's sdist of eflomal 2.0.0: its src/ is upstream's newest commit (1fe2a43, January 2025).
# Fetched by its URL (xlsent.download), not with `pip download`, which prepares an sdist's
# metadata and so first installs its build requirements (Cython, numpy: a build from source
# under --no-binary).
SDIST_URL = (
    "https://files.pythonhosted.org/packages/3d/7d/"
    "46c02594ebaf7b2f27c671c9d5d517895cf8e58046e41bed95a2cb8394a4/eflomal-2.0.0.tar.gz"
)
SDIST_SHA256 = "b71183dcf85bf4f59f44ef7a59f5268df1c17c0c8d8093f77b220025ffdba100"
SDIST_NAME = SDIST_URL.rsplit("/", 1)[1]
SDIST_SOURCES = "eflomal-2.0.0/src"  # the directory of the C sources inside the sdist
# Upstream's flags (src/Makefile: -Ofast = -O3 -ffast-math) without -march=native: a binary
# built on one node then runs, with the same arithmetic, on every node of a cluster.
FLAGS = ("-O3", "-ffast-math", "-std=gnu99", "-Wall", "-Wno-unused-function", "-fopenmp")


class EflomalError(XlsentError):
    """A build or run of the eflomal binary that failed; the message says why."""


def fetch_sdist(dest: str | os.PathLike[str]) -> Path:
    """The sdist at `dest`: kept if it has the pinned SHA-256 (one placed there by hand on a
    machine without the internet), else downloaded there, whole or not at all."""
    dest = Path(dest)
    if dest.is_file() and sha256_file(dest) == SDIST_SHA256:
        return dest
    hint = (
        f"Where files.pythonhosted.org cannot be reached, download {SDIST_URL} elsewhere and "
        f"place it at {dest}."
    )
    download(SDIST_URL, dest, expected_sha256=SDIST_SHA256, hint=hint)
    return dest


def _patch_file(patch: str | os.PathLike[str]) -> Path:
    path = Path(patch)
    if not path.is_file():
        raise EflomalError(
            f"{path} is missing: eflomal's patch is in the checkout's csrc/eflomal (an "
            "installed xlsent package does not ship it)"
        )
    return path


def build_digest() -> str:
    """SHA-256 over what a build is made of: the sdist's digest, the compiler flags, the patch."""
    digest = hashlib.sha256(f"{SDIST_SHA256}\0{' '.join(FLAGS)}\0".encode())
    digest.update(_patch_file(PATCH).read_bytes())
    return digest.hexdigest()


def _unpack(sdist: Path, root: Path) -> None:
    """The files of the sdist's src/, written to root/src once the sdist is the pinned one."""
    digest = sha256_file(sdist)
    if digest != SDIST_SHA256:
        raise EflomalError(
            f"{sdist} has SHA-256 {digest}, not {SDIST_SHA256} (eflomal 2.0.0's sdist on PyPI): "
            f"delete it and run again to download it, or place the file of {SDIST_URL} there"
        )
    src = root / "src"
    src.mkdir()
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parent, _, name = member.name.rpartition("/")
            if member.isfile() and parent == SDIST_SOURCES:
                (src / name).write_bytes(tar.extractfile(member).read())


def _apply(patch: Path, root: Path) -> None:
    """Apply `patch` (paths a/src/…) in `root`; every hunk must match, without fuzz."""
    tool = shutil.which("patch")
    if tool is None:
        raise EflomalError(
            "no `patch` program: eflomal is built from PyPI's source and csrc/eflomal/seed.patch; "
            "install it (apt-get install patch, or use the conda env envs/cpp.yaml)"
        )
    args = [tool, "--batch", "--forward", "--fuzz=0", "--strip=1", f"--input={patch.resolve()}"]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=root)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise EflomalError(
            f"{patch} does not apply to eflomal 2.0.0's src/ (exit {proc.returncode}):\n{tail}"
        )


def _compiler() -> list[str]:
    """$CC (a conda env's compiler sets it), else cc or gcc on PATH."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise EflomalError(
            "no C compiler: eflomal is compiled with a C99 compiler and OpenMP; install one "
            "(apt-get install gcc, or use the conda env envs/cpp.yaml) or set CC"
        )
    return shlex.split(compiler)


def compile_binary(
    out: str | os.PathLike[str],
    sdist: str | os.PathLike[str],
    patch: str | os.PathLike[str] = PATCH,
) -> Path:
    """Compile eflomal from `sdist` and `patch` to `out`, which appears only once complete (a
    failed or killed build leaves none, and its unpacked sources go with it).

    $CFLAGS (before ours, so ours win) and $LDFLAGS are used as make would: a conda env's
    LDFLAGS carry the run path to its OpenMP library, so the binary runs from other envs too.
    """
    patch, out = _patch_file(patch), Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".eflomal-build-", dir=out.parent) as tmp:
        _unpack(Path(sdist), Path(tmp))
        _apply(patch, Path(tmp))
        partial = Path(tmp) / "eflomal"
        args = [
            *_compiler(),
            *shlex.split(os.environ.get("CFLAGS", "")),
            *FLAGS,
            # Paths relative to `tmp`, where it runs: assert's __FILE__ is then the same in
            # every build, and so are the binary's bytes (a rebuild realigns nothing).
            "-o",
            partial.name,
            "src/eflomal.c",
            *shlex.split(os.environ.get("LDFLAGS", "")),
            "-lm",
        ]
        log.info("compiling eflomal: %s", shlex.join(args))
        proc = subprocess.run(args, capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
            raise EflomalError(f"compiling eflomal failed (exit {proc.returncode}):\n{tail}")
        os.replace(partial, out)
    return out


def default_binary() -> Path:
    """The checkout's eflomal build for this source, patch and flags, made on first use (the
    sdist downloaded once into build/eflomal/)."""
    binary = BUILD_DIR / f"eflomal-{build_digest()[:16]}"
    if not binary.is_file():
        compile_binary(binary, fetch_sdist(BUILD_DIR / SDIST_NAME))
    return binary
