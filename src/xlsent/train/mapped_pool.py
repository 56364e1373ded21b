"""The training pool written once to flat files and memory-mapped by every training process,
so that the processes of a node share one copy of it in the page cache.

Read into each process's own memory, the pool costs every process of a node its full size (at
30M pairs about 5 GB for TR and 16 GB for WACSE) and more: what the reader allocated on the
way (`benchmarks/train_memory.py`). Here the job's first process (global rank 0) reads the
input files once, a batch of rows at a time (`xlsent.train.data.BATCH_ROWS`), and appends
each array to a raw file under the run's checkpoint directory (`{checkpoints}/pool/`: it
survives a killed job, and a rerun reuses it); every process then
maps the files read-only (`np.memmap`) and gets the same `Pairs` / `WordAligned` of `Ragged`
arrays, byte for byte, as the in-memory loaders of `xlsent.train.data` return. A batch's rows
are gathered by fancy indexing, which copies them out of the map; nothing writes the pool
(a read-only map refuses it), so the truncation of WACSE's word spans is done as the files are
written.

The pool is valid only for the inputs and the length limit it was written from: its
`manifest.json` holds the kind of pool, `max_length`, each language's input file's size and
modification time (nanoseconds), and each array's dtype and shape. A pool whose manifest does
not match, or whose files are missing or of the wrong size, is written again; never trusted.
It is written under a temporary name and renamed whole (`xlsent.io.atomic_path`, which also
removes what a killed writer left), so a pool directory is either complete or absent. The
other processes wait at a barrier while the first writes it; the checkpoint directory is
shared by all of them already (each reads the checkpoint it resumes from there).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from xlsent.failures.errors import XlsentError
from xlsent.failures.kill_points import kill_point
from xlsent.io import atomic_path, write_json
from xlsent.ragged import Ragged
from xlsent.train import distributed
from xlsent.train.data import (
    Arrays,
    Pairs,
    WordAligned,
    add_counts,
    pair_parts,
    pairs_of,
    with_negatives,
    word_aligned_of,
    word_aligned_parts,
)

log = logging.getLogger(__name__)

# The pool's directory inside a run's checkpoint directory, and its manifest.
POOL = "pool"
MANIFEST = "manifest.json"
# The layout of the files; a change of it makes every pool written before stale.
FORMAT = 1


# The pool a batch of rows at a time: (language, arrays, statistics), what `_write` appends;
# from the input files, the length limit and the cap on each language's pairs.
Parts = Callable[[dict[str, Path], int, int | None], Iterator[tuple[str, Arrays, dict[str, int]]]]


class PoolError(XlsentError):
    """A pool that the first process wrote and another process cannot use."""


def mapped_pairs(
    paths: dict[str, Path],
    max_length: int,
    checkpoints: Path,
    world: distributed.World,
    negatives: dict[str, Path] | None = None,
    max_pairs: int | None = None,
) -> Pairs:
    """The pairs `xlsent.train.data.load_pairs(paths, max_length, max_pairs)` reads,
    memory-mapped from the pool under `checkpoints` (written first if it is missing or
    stale); with `negatives` (the hard-negative stage's files of the same pairs), each pair's
    mined negatives too (`with_negatives`)."""
    arrays, _ = _shared(
        "pairs", paths, max_length, checkpoints, world, pair_parts, negatives, max_pairs
    )
    return pairs_of(arrays, tuple(sorted(paths)))


def mapped_word_aligned(
    paths: dict[str, Path],
    max_length: int,
    checkpoints: Path,
    world: distributed.World,
    negatives: dict[str, Path] | None = None,
    max_pairs: int | None = None,
) -> tuple[Pairs, WordAligned, dict[str, dict[str, int]]]:
    """What `xlsent.train.data.load_word_aligned(paths, max_length)` reads (each language's
    pairs capped at `max_pairs`, as `mapped_pairs`), memory-mapped from the pool under
    `checkpoints` (written first if it is missing or stale); `negatives` as `mapped_pairs`."""
    arrays, stats = _shared(
        "word_aligned",
        paths,
        max_length,
        checkpoints,
        world,
        word_aligned_parts,
        negatives,
        max_pairs,
    )
    return pairs_of(arrays, tuple(sorted(paths))), word_aligned_of(arrays), stats


def _shared(
    kind: str,
    paths: dict[str, Path],
    max_length: int,
    checkpoints: Path,
    world: distributed.World,
    parts: Parts,
    negatives: dict[str, Path] | None = None,
    max_pairs: int | None = None,
) -> tuple[Arrays, dict[str, dict[str, int]]]:
    """The pool's arrays and per-language statistics: the first process writes the pool if
    there is none written from these inputs, the others wait for it, every process maps it."""
    directory = Path(checkpoints) / POOL
    identity = _identity(kind, paths, max_length, negatives, max_pairs)
    opened = _open(directory, identity) if world.main else None
    if world.main and opened is None:
        started = time.perf_counter()
        rows = parts(paths, max_length, max_pairs)
        _write(directory, identity, rows if negatives is None else with_negatives(rows, negatives))
        log.info("wrote the training pool %s in %.1f s", directory, time.perf_counter() - started)
    elif world.main:
        log.info("the training pool %s was written from these inputs: mapped as it is", directory)
    distributed.barrier(world)
    if opened is None:
        opened = _open(directory, identity)
    if opened is None:
        raise PoolError(
            f"the training pool {directory}, which the first process wrote, is missing or does "
            f"not match this process's inputs and max_length {max_length}: an input changed "
            "as the job started (run the same command again), or this node does not see the "
            "files of the first node (the checkpoint directory must be on a file system that "
            "every node of the job shares)"
        )
    return opened


def remove_pool(checkpoints: Path) -> None:
    """Remove the pool under `checkpoints`, once the run is exported: at 30M pairs it is 4 GiB
    (TR) to 14 GiB (WACSE) of disk a run and seed, and cheap to write again."""
    shutil.rmtree(Path(checkpoints) / POOL, ignore_errors=True)


def _identity(
    kind: str,
    paths: dict[str, Path],
    max_length: int,
    negatives: dict[str, Path] | None = None,
    max_pairs: int | None = None,
) -> dict:
    """What a pool must have been written from: its kind, the length limit, each language's
    input file as it is now (size and modification time), and where the pool has them, its
    cap on a language's pairs and the hard-negative files (a pool without them keeps the
    identity it had before they existed)."""
    identity = {
        "format": FORMAT,
        "kind": kind,
        "max_length": max_length,
        "inputs": _files(paths),
    }
    if max_pairs is not None:
        identity["max_pairs"] = max_pairs
    if negatives is not None:
        identity["negatives"] = _files(negatives)
    return identity


def _files(paths: dict[str, Path]) -> dict[str, dict[str, int]]:
    """Each language's file as it is now: its size and modification time."""
    files = {}
    for lang in sorted(paths):
        stat = Path(paths[lang]).stat()
        files[lang] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    return files


def _write(
    directory: Path, identity: dict, parts: Iterator[tuple[str, Arrays, dict[str, int]]]
) -> None:
    """Append each batch of rows to the pool's files, then write its manifest."""
    with atomic_path(directory) as tmp:
        tmp.mkdir()
        files = _Files(tmp)
        stats: dict[str, dict[str, int]] = {lang: {} for lang in identity["inputs"]}
        for lang, part, counts in parts:
            files.add(part)
            add_counts(stats, lang, counts)
            kill_point("train.pool")  # a pool half written: the next job writes it again
        write_json(tmp / MANIFEST, {**identity, "arrays": files.layout(), "stats": stats})


class _Files:
    """A pool's arrays appended part by part to one raw file each (`{name}.bin`): a Ragged
    as `{name}.values` and `{name}.offsets`, the offsets continued across the parts."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._arrays: dict[str, tuple[np.dtype, tuple[int, ...]]] = {}  # dtype, shape
        self._ends: dict[str, int] = {}  # per Ragged: the values written so far

    def add(self, part: Arrays) -> None:
        for name, array in part.items():
            if not isinstance(array, Ragged):
                self._append(name, array)
                continue
            end = self._ends.get(name)
            # The first part's offsets start at 0; a later part's continue where the last ended.
            offsets = array.offsets if end is None else array.offsets[1:] + end
            self._append(f"{name}.offsets", offsets)
            self._append(f"{name}.values", array.values)
            self._ends[name] = (end or 0) + len(array.values)

    def _append(self, name: str, array: np.ndarray) -> None:
        dtype, shape = self._arrays.get(name, (array.dtype, (0, *array.shape[1:])))
        if array.dtype != dtype or array.shape[1:] != shape[1:]:
            raise ValueError(f"{name}: a part of {array.dtype} {array.shape}, not {dtype} {shape}")
        with open(self.directory / f"{name}.bin", "ab") as f:
            np.ascontiguousarray(array).tofile(f)
        self._arrays[name] = (dtype, (shape[0] + len(array), *shape[1:]))

    def layout(self) -> dict[str, dict]:
        """Each file's dtype and shape, for the manifest."""
        return {
            name: {"dtype": dtype.str, "shape": list(shape)}
            for name, (dtype, shape) in self._arrays.items()
        }


def _open(directory: Path, identity: dict) -> tuple[Arrays, dict] | None:
    """The pool's arrays, mapped read-only, and its statistics; None if there is no pool
    written from `identity` whose files are all there, whole."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        if {key: manifest.get(key) for key in identity} != identity:
            return None
        flat = {name: _mapped(directory, name, spec) for name, spec in manifest["arrays"].items()}
        if any(array is None for array in flat.values()):
            return None
        arrays, stats = _assembled(flat), dict(manifest["stats"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no manifest, or not one this module wrote
    return (arrays, stats) if _consistent(arrays) else None


def _mapped(directory: Path, name: str, spec: dict) -> np.ndarray | None:
    """The file of array `name`, mapped read-only; None if it is not of the manifest's size."""
    dtype, shape = np.dtype(spec["dtype"]), tuple(spec["shape"])
    path = directory / f"{name}.bin"
    size = path.stat().st_size
    if size != dtype.itemsize * int(np.prod(shape)):
        return None
    # numpy cannot map an empty file; an empty array (a pool without links) maps nothing.
    return np.memmap(path, dtype, "r", shape=shape) if size else np.zeros(shape, dtype)


def _assembled(flat: dict[str, np.ndarray]) -> Arrays:
    """The files' arrays with each `{name}.values` and `{name}.offsets` as one Ragged."""
    arrays: Arrays = {}
    for name, array in flat.items():
        base, _, part = name.partition(".")
        if part == "values":
            arrays[base] = Ragged(array, flat[f"{base}.offsets"])
        elif not part:
            arrays[name] = array
    return arrays


def _consistent(arrays: Arrays) -> bool:
    """Whether every Ragged's offsets span its values and every array has a row per pair."""
    pairs = len(arrays.get("lang", ()))
    for array in arrays.values():
        if isinstance(array, Ragged):
            offsets = array.offsets
            if len(offsets) != pairs + 1 or offsets[0] != 0 or offsets[-1] != len(array.values):
                return False
    return "lang" in arrays
