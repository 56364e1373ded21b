"""A shard's finished blocks, kept across a kill, so that a killed alignment job resumes.

A neural aligner (WSPAlign, SimAlign) aligns its shard in blocks of `BLOCK_CHUNKS` of its
chunks, and each block goes to a scratch directory beside the shard as soon as it is done
(`.shard-0003.arrow.blocks/block-0002.arrow`, written atomically, its counts in its schema's
metadata). A job killed mid-way (a Slurm time limit, preemption, a node failure, an
out-of-memory kill) loses at most the block it was aligning: the next job reads the finished
blocks and aligns from the first missing one. The shard is written from the blocks at the
end, and the directory removed.

A block is trusted only under the fingerprint of the job that wrote it (`fingerprint`: the
aligner, its settings, the shard's index and size, and the content of the inputs and the
model); under any other, the directory is emptied first. A block is a whole number of the
aligner's chunks (`chunk_pairs`), within which it sorts and batches pairs, so its batches,
and its links, are those of the job that aligns the shard at once: the resumed shard is the
same bytes (tests/unit/align/test_blocks.py). On a GPU of another kind than the killed
job's, the resumed blocks' links are that GPU's, as a job started there would have had.

eflomal has no blocks: its links come from statistics over the whole shard (and the pairs it
borrows from its neighbours), so its job is one unit, minutes long.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa

from xlsent.align.shards import SHARD_SCHEMA
from xlsent.io import atomic_path, sha256_file

BLOCK_CHUNKS = 8  # WSPAlign's default chunk is 1,024 pairs: a block of 8,192, minutes on a GPU
_COUNTS = b"xlsent.counts"  # the schema metadata key of a block's counts
_STAMP = "fingerprint"


def fingerprint(
    method: str, settings: dict, index: int, shard_size: int, inputs: dict[str, Path]
) -> str:
    """What a block must have been aligned under to be trusted: the aligner, its settings,
    the shard's index and size, and the content of `inputs` (files, or directories such as
    the model's, each file in them by its path inside), keyed by role, not by where the
    results tree lies."""
    content: dict[str, str] = {}
    for role, path in inputs.items():
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            inside = file.relative_to(path).as_posix() if path.is_dir() else ""
            content[f"{role}/{inside}"] = sha256_file(file)
    blob = json.dumps([method, settings, index, shard_size, content], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


class Blocks:
    """The finished blocks of the shard at `shard`, under the job's `stamp` (`fingerprint`),
    each a table of `schema` (an alignment shard's; the hard-negative stage keeps its
    encoded blocks here too, `xlsent.hard_negatives.encode`)."""

    def __init__(self, shard: Path, stamp: str, schema: pa.Schema = SHARD_SCHEMA):
        self.schema = schema
        self.directory = shard.with_name(f".{shard.name}.blocks")
        kept = self.directory / _STAMP
        if not (kept.is_file() and kept.read_text() == stamp):
            self.remove()  # another job's blocks, or a directory half made
            self.directory.mkdir(parents=True)
            with atomic_path(kept) as tmp:
                tmp.write_text(stamp)

    def _path(self, block: int) -> Path:
        return self.directory / f"block-{block:04d}.arrow"

    def read(self, block: int) -> tuple[pa.Table, dict] | None:
        """Block `block`'s rows and counts, if a job finished it."""
        path = self._path(block)
        if not path.is_file():
            return None
        with pa.OSFile(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
        counts = json.loads(table.schema.metadata[_COUNTS])
        return table.replace_schema_metadata(None), counts

    def write(self, block: int, table: pa.Table, counts: dict) -> None:
        """Keep a finished block (atomically: a half-written block is never read back)."""
        schema = self.schema.with_metadata({_COUNTS: json.dumps(counts)})
        with atomic_path(self._path(block)) as tmp, pa.ipc.new_file(tmp, schema) as writer:
            writer.write_table(table.replace_schema_metadata(schema.metadata))

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
