"""Atomic file output and the small readers/writers every stage shares.

Every output is written under a temporary name beside its final path and renamed into place
only when complete, so a killed job never leaves a file that looks finished.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def _temp_sibling(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path to write `path` (a file or a directory) to; publish on success."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    temp = _temp_sibling(final)
    _remove(temp)
    try:
        yield temp
    except BaseException:
        _remove(temp)
        raise
    if final.is_dir() and not final.is_symlink():
        shutil.rmtree(final)
    os.replace(temp, final)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    return json.loads(Path(path).read_text())


@contextlib.contextmanager
def parquet_writer(path: str | os.PathLike[str], schema: pa.Schema) -> Iterator[pq.ParquetWriter]:
    """A streaming Parquet writer (zstd) whose file appears only when closed without error."""
    with atomic_path(path) as tmp:
        writer = pq.ParquetWriter(tmp, schema, compression="zstd")
        try:
            yield writer
        finally:
            writer.close()


def write_parquet(path: str | os.PathLike[str], table: pa.Table) -> None:
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")
