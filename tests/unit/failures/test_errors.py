"""Every expected file failure is one line naming the file and the fix, on real broken files.

Covered: truncated or corrupt gzip corpus files and OPUS zips, permission denied on an input or
an output, a write that hits a file size limit or a full file system, and the temporaries of
writers killed mid-way. Nothing is mocked: each bad file, limit or file system is made for real.

What the environment allows decides some of the set-ups. As root, chmod denies nothing, so the
permission tests run the command as `nobody` (setpriv, from util-linux) on files chmod-ed
against it; as another user they run it as that user. The full-disk case needs root to mount
a tiny tmpfs, so it is a parameter only there; the file size limit (RLIMIT_FSIZE, which any
user may lower) is the write-failure case everywhere.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import clean_demo, clean_kk_args, file_size_limit

from xlsent.corpus.bitext import CorpusError, moses_files
from xlsent.corpus.readers import demo
from xlsent.corpus.readers.opus import bitext_from_zip
from xlsent.dictionaries import DictionaryError, freedict_pairs
from xlsent.io import OutputError, atomic_path, write_json

ROOT = os.geteuid() == 0
NOBODY = 65534


def _kk_sides() -> tuple[list[bytes], list[bytes]]:
    """The English and Kazakh lines of the embedded demo data (real human translations)."""
    en, kk = [], []
    for bitext in demo.bitexts("kk", 0.2):
        for _, a, b in bitext.lines():
            en.append(a)
            kk.append(b)
    return en, kk


def _text(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def _lines_before_failure(path: Path) -> int:
    """How many lines gzip itself yields from `path` before it raises."""
    count = 0
    with contextlib.suppress(EOFError, OSError, zlib.error), gzip.open(path, "rb") as f:
        for _ in f:
            count += 1
    return count


def _one_error_line(stderr: str) -> str:
    """The CLI's single error line (its log line), after checking there is no traceback."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, stderr
    return errors[0]


def _python(
    *args: str | Path, as_nobody: bool = False, preexec_fn: Callable[[], None] | None = None
) -> subprocess.CompletedProcess:
    """Run `python ARGS` (as `nobody` if asked and root) and capture its output."""
    command = [sys.executable, *map(str, args)]
    if as_nobody and ROOT:
        setpriv = shutil.which("setpriv")
        assert setpriv, "running as root: these tests need setpriv (util-linux) to drop privileges"
        command = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # nothing but the outputs is written
    return subprocess.run(
        command, capture_output=True, text=True, env=env, cwd="/", preexec_fn=preexec_fn
    )


def _xlsent(
    *args: str | Path, as_nobody: bool = False, preexec_fn: Callable[[], None] | None = None
) -> subprocess.CompletedProcess:
    return _python("-m", "xlsent.cli", *args, as_nobody=as_nobody, preexec_fn=preexec_fn)


@pytest.fixture
def shared_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory the command's user can enter: as root, not under tmp_path (mode 0700)."""
    if not ROOT:
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="xlsent-file-errors-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        shutil.rmtree(directory)


@pytest.fixture(scope="module")
def clean_kk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real cleaned Kazakh corpus (about 35 KB of Parquet) for `xlsent sample` to read."""
    path = tmp_path_factory.mktemp("clean") / "clean.parquet"
    clean_demo("kk", path)
    return path


def _sample_args(clean_path: Path, out: Path) -> list[str | Path]:
    settings = {
        "max_pairs": 100000,
        "dev_pairs": 100,
        "dev_fraction": 0.1,
        "seed": 0,
        "min_train_pairs": 500,
        "min_dev_pairs": 50,
        "min_pairs_action": "error",
        "per_source_cap": None,
        "mining_pairs": 0,
    }
    return [
        "sample",
        "--lang",
        "kk",
        "--settings",
        json.dumps(settings),
        "--clean",
        clean_path,
        "--train",
        out / "train.parquet",
        "--dev",
        out / "dev.parquet",
        "--stats",
        out / "stats.json",
        "--mining",
        out / "mining.parquet",
    ]


# -- damaged gzip corpus files -------------------------------------------------------------------
def _damage(data: bytes, how: str) -> bytes:
    if how == "truncated":
        return data[: len(data) // 2]
    if how == "garbled":  # bytes in the middle of the deflate stream overwritten
        middle = len(data) // 2
        return (
            data[:middle]
            + bytes(b ^ 0xFF for b in data[middle : middle + 64])
            + data[middle + 64 :]
        )
    return b"this is no gzip data at all\n" * 50  # "garbage": a .gz name on something else


@pytest.mark.parametrize(
    ("how", "what", "cause"),
    [
        ("truncated", "the gzip stream ends early after line", EOFError),
        # Inflating garbled data fails, or it inflates to bytes whose CRC does not match.
        ("garbled", "the gzip stream is corrupt (", (zlib.error, gzip.BadGzipFile)),
        ("garbage", "the gzip stream is corrupt (Not a gzipped file", gzip.BadGzipFile),
    ],
)
def test_a_damaged_gzip_side_names_the_file_the_line_and_the_fix(
    tmp_path: Path, how: str, what: str, cause: type | tuple[type, ...]
) -> None:
    en, kk = _kk_sides()
    en_path = tmp_path / "Tanzil.en-kk.en.gz"
    en_path.write_bytes(gzip.compress(_text(en)))
    kk_path = tmp_path / "Tanzil.en-kk.kk.gz"
    kk_path.write_bytes(_damage(gzip.compress(_text(kk)), how))
    reached = _lines_before_failure(kk_path)
    assert reached < len(kk)

    with pytest.raises(CorpusError) as err:
        list(moses_files("Tanzil", en_path, kk_path).lines())
    message = str(err.value)
    where = f"after line {reached}" if reached else "before its first line"
    assert message.startswith(f"{kk_path}: {what}")
    assert message.endswith(
        f"{where} (the file is truncated or corrupt: copy or download it again; "
        f"`gzip -t {kk_path}` checks a file)"
    )
    assert "\n" not in message
    assert isinstance(err.value.__cause__, cause)


def test_a_truncated_gzip_is_one_line_from_the_cli_not_an_eoferror(tmp_path: Path) -> None:
    en, kk = _kk_sides()
    (tmp_path / "Tanzil.en-kk.en.gz").write_bytes(gzip.compress(_text(en)))
    kk_path = tmp_path / "Tanzil.en-kk.kk.gz"
    kk_path.write_bytes(_damage(gzip.compress(_text(kk)), "truncated"))
    out = tmp_path / "out"
    proc = _xlsent(*clean_kk_args(tmp_path, out))
    assert proc.returncode == 2
    line = _one_error_line(proc.stderr)
    assert (
        f"{kk_path}: the gzip stream ends early after line {_lines_before_failure(kk_path)} "
        "(the file is truncated or corrupt" in line
    )
    assert list(out.iterdir()) == []  # neither an output nor a temporary


# -- damaged OPUS zips ---------------------------------------------------------------------------
def _opus_zip(path: Path, compression: int) -> tuple[list[bytes], list[bytes]]:
    en, kk = _kk_sides()
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        archive.writestr("README", "Tanzil en-kk\n")
        archive.writestr("Tanzil.en-kk.en", _text(en))
        archive.writestr("Tanzil.en-kk.kk", _text(kk))
    return en, kk


def _garble_member(path: Path, member: str) -> None:
    """Overwrite 64 bytes in the middle of `member`'s data; the zip's directory stays intact."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    name_len, extra_len = struct.unpack(
        "<HH", data[info.header_offset + 26 : info.header_offset + 30]
    )
    middle = info.header_offset + 30 + name_len + extra_len + info.compress_size // 2
    data[middle : middle + 64] = bytes(b ^ 0x55 for b in data[middle : middle + 64])
    path.write_bytes(bytes(data))


def test_a_truncated_zip_says_to_delete_it_and_rerun(tmp_path: Path) -> None:
    path = tmp_path / "kk.zip"
    _opus_zip(path, zipfile.ZIP_DEFLATED)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(CorpusError) as err:
        bitext_from_zip(path, "Tanzil", "kk")
    assert str(err.value) == (
        f"{path} is not a readable zip archive (File is not a zip file); it may be cut off or "
        "an error page saved under that name: delete it and rerun the workflow to download it "
        "again (the download rule, opus_download, fetches a zip that is missing)"
    )


@pytest.mark.parametrize(
    ("compression", "what"),
    [
        # Deflated data that no longer inflates: zlib.error.
        (zipfile.ZIP_DEFLATED, "the compressed data is corrupt (Error -3 while decompressing"),
        # Stored data reads to the end, where the CRC does not match: BadZipFile.
        (zipfile.ZIP_STORED, "the compressed data is corrupt (Bad CRC-32 for file"),
    ],
)
def test_a_corrupt_zip_member_names_the_zip_the_member_and_the_line(
    tmp_path: Path, compression: int, what: str
) -> None:
    path = tmp_path / "kk.zip"
    _, kk = _opus_zip(path, compression)
    _garble_member(path, "Tanzil.en-kk.kk")
    bitext = bitext_from_zip(path, "Tanzil", "kk")  # the zip's directory is fine
    rows = 0
    with pytest.raises(CorpusError) as err:
        for _ in bitext.lines():
            rows += 1
    message = str(err.value)
    assert message.startswith(f"{path}:Tanzil.en-kk.kk: {what}")
    assert message.endswith(
        f"after line {rows} (the zip is truncated or corrupt: delete {path} and rerun the "
        "workflow: the download rule (opus_download) fetches it again)"
    )
    assert rows < len(kk)


# -- permission denied ---------------------------------------------------------------------------
def test_an_unreadable_corpus_file_names_it_and_says_to_fix_its_permissions(
    shared_dir: Path,
) -> None:
    en, kk = _kk_sides()
    (shared_dir / "Tanzil.en-kk.en").write_bytes(_text(en))
    kk_path = shared_dir / "Tanzil.en-kk.kk"
    kk_path.write_bytes(_text(kk))
    kk_path.chmod(0o000)
    out = shared_dir / "out"
    out.mkdir(mode=0o777)
    out.chmod(0o777)  # the first pass writes beside the output before it reads
    proc = _xlsent(*clean_kk_args(shared_dir, out), as_nobody=True)
    assert proc.returncode == 2
    assert _one_error_line(proc.stderr).endswith(
        f"cannot read {kk_path}: permission denied: fix the permissions or ownership of "
        f"{kk_path} (or of its directory {shared_dir}) so that the user running xlsent can use it"
    )
    assert list(out.iterdir()) == []


def test_an_unwritable_output_directory_names_the_output(shared_dir: Path, clean_kk: Path) -> None:
    source = shared_dir / "clean.parquet"
    shutil.copy(clean_kk, source)
    source.chmod(0o644)
    out = shared_dir / "read-only"
    out.mkdir()
    out.chmod(0o555)
    proc = _xlsent(*_sample_args(source, out), as_nobody=True)
    assert proc.returncode == 2
    train = out / "train.parquet"
    assert _one_error_line(proc.stderr).endswith(
        f"cannot write {train}: permission denied: fix the permissions or ownership of {train} "
        f"(or of its directory {out}) so that the user running xlsent can use it"
    )
    assert list(out.iterdir()) == []


def test_an_unreadable_tatoeba_file_is_a_tatoeba_error_naming_it(shared_dir: Path) -> None:
    demo.write_heldout(["kk"], shared_dir, 0.2, max_pairs=50)
    kaz = shared_dir / "tatoeba.kaz-eng.kaz"
    kaz.chmod(0o000)
    code = (
        "import sys\n"
        "from xlsent.evaluate.tatoeba import TatoebaError, read_pairs\n"
        "try:\n"
        "    read_pairs(sys.argv[1], 'kk')\n"
        "except TatoebaError as err:\n"
        "    sys.exit(str(err))\n"
    )
    proc = _python("-c", code, shared_dir, as_nobody=True)
    assert proc.returncode == 1
    assert proc.stderr == (
        f"cannot read {kaz}: permission denied: fix the permissions or ownership of {kaz} (or of "
        f"its directory {shared_dir}) so that the user running xlsent can use it\n"
    )


def test_a_truncated_freedict_dictionary_says_to_reinstall_it(tmp_path: Path) -> None:
    en, kk = _kk_sides()
    body = b"".join(a + b"\n" + b + b"\n" for a, b in zip(en, kk, strict=True))
    dict_path = tmp_path / "freedict-eng-kaz.dict.dz"
    data = gzip.compress(body)
    dict_path.write_bytes(data[: len(data) // 2])
    (tmp_path / "freedict-eng-kaz.index").write_text("word\tA\tZ\n")
    with pytest.raises(DictionaryError) as err:
        freedict_pairs(dict_path)
    assert str(err.value) == (
        f"{dict_path}: the dictzip data ends early or is corrupt (Compressed file ended before the "
        "end-of-stream marker was reached): reinstall the package it came from (`apt-get install "
        "--reinstall dict-freedict-eng-kaz`, or that of your language pair); "
        f"`gzip -t {dict_path}` checks the file"
    )


def test_an_unreadable_file_no_reader_names_is_still_one_line(shared_dir: Path) -> None:
    """The CLI's fallback: a PermissionError that reached main() still names its file."""
    stats = shared_dir / "shard-0000.json"
    write_json(stats, {"pairs": 1, "links": 0, "statuses": {"aligned": 1}})
    stats.chmod(0o000)
    out = shared_dir / "out"
    out.mkdir()
    out.chmod(0o777)
    proc = _xlsent(
        "align-manifest",
        "--method",
        "eflomal",
        "--lang",
        "kk",
        "--settings",
        "{}",
        "--out",
        out / "_SUCCESS",
        stats,
        as_nobody=True,
    )
    assert proc.returncode == 2
    assert _one_error_line(proc.stderr).endswith(
        f"{stats}: permission denied: fix the permissions or ownership of {stats} (or of its "
        f"directory {shared_dir}) so that the user running xlsent can use it"
    )


# -- a full disk, a file size limit --------------------------------------------------------------
def _file_size_limit(limit: int) -> None:
    """In the child before exec: writes beyond `limit` bytes fail with EFBIG (no SIGXFSZ)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@contextlib.contextmanager
def _tiny_tmpfs(mountpoint: Path, size: str) -> Iterator[Path]:
    mountpoint.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mountpoint], check=True)
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", mountpoint], check=True)


# The file size limit works for any user; mounting a tmpfs needs root.
WRITE_FAILURES = ["file-size-limit"] + (["full-tmpfs"] if ROOT else [])


@pytest.mark.parametrize("failure", WRITE_FAILURES)
def test_a_write_that_runs_out_of_room_names_the_output_and_the_fix(
    tmp_path: Path, clean_kk: Path, failure: str
) -> None:
    # `sample` writes train (about 30 KB) and dev (a few KB) at once; 16 KB holds neither.
    with contextlib.ExitStack() as stack:
        if failure == "full-tmpfs":
            out = stack.enter_context(_tiny_tmpfs(tmp_path / "full", "16k"))
            proc = _xlsent(*_sample_args(clean_kk, out))
            fix = (
                f"no space left on the device: free space on the file system of {out} or move "
                "results/ to a larger file system and leave a symlink in its place (`mv results "
                "/big/results && ln -s /big/results results`, docs/recovery.md)"
            )
        else:
            out = tmp_path / "out"
            proc = _xlsent(
                *_sample_args(clean_kk, out), preexec_fn=lambda: _file_size_limit(16 * 1024)
            )
            fix = (
                f"file too large for the file size limit (`ulimit -f`) or for the file system of "
                f"{out}: raise the limit, or move results/ to a file system that allows larger "
                "files and leave a symlink in its place (docs/recovery.md)"
            )
        assert proc.returncode == 2
        # Train is written first and fails, though dev's writer is open too (and innermost).
        assert _one_error_line(proc.stderr).endswith(f"cannot write {out / 'train.parquet'}: {fix}")
        assert list(out.iterdir()) == []  # no temporary left behind, no half output


def test_a_failed_file_inside_a_directory_output_names_the_directory(tmp_path: Path) -> None:
    model = tmp_path / "model"
    with (
        pytest.raises(OutputError) as err,
        file_size_limit(64 * 1024),
        atomic_path(model) as tmp,
    ):
        tmp.mkdir()
        write_json(tmp / "vectors.json", {"vectors": [[0.125] * 100] * 200})  # about 150 KB
    assert err.value.path == model
    assert str(err.value).startswith(f"cannot write {model}: file too large")
    assert isinstance(err.value.__cause__, OSError)
    assert list(tmp_path.iterdir()) == []


def test_cleanings_first_pass_names_the_output_when_it_runs_out_of_room(tmp_path: Path) -> None:
    """The first pass of `clean` writes a scratch file beside the output: its failure names the
    output, whose directory is the one that is full."""
    out = tmp_path / "clean.parquet"
    with pytest.raises(OutputError) as err, file_size_limit(8 * 1024):
        clean_demo("kk", out, batch_size=200)
    assert err.value.path == out
    assert str(err.value).startswith(f"cannot write {out}: file too large")
    assert list(tmp_path.iterdir()) == []


# -- temporaries of killed writers ---------------------------------------------------------------
def _killed_writer(final: Path) -> Path:
    """Start writing `final` through atomic_path in a process that SIGKILLs itself halfway."""
    code = (
        "import os, signal, sys\n"
        "from xlsent.io import atomic_path\n"
        "with atomic_path(sys.argv[1]) as tmp:\n"
        "    tmp.write_text('half of it')\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(final)], check=False)
    assert proc.returncode == -signal.SIGKILL
    (left,) = final.parent.glob(f".{final.name}.tmp-*")
    return left


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_atomic_path_removes_what_killed_writers_left(tmp_path: Path, kind: str) -> None:
    final = tmp_path / "stats.json"
    left = [_killed_writer(final)]
    old = tmp_path / ".stats.json.tmp-4242"  # a directory output's temporary, with content
    old.mkdir()
    (old / "part-0").write_text("half of it")
    left.append(old)
    # Not temporaries of this output: left alone.
    others = [".other.json.tmp-17", ".stats.json.tmp-mine", "stats.json.tmp-17", ".stats.json"]
    for name in others:
        (tmp_path / name).write_text("keep")

    if kind == "file":
        write_json(final, {"pairs": 3})
    else:
        with atomic_path(final) as tmp:
            tmp.mkdir()
            (tmp / "part-0").write_text("whole")

    assert all(not path.exists() for path in left)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([final.name, *others])
