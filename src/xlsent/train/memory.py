"""The memory a `train` job asks the cluster for on each node, from its inputs and processes.

Slurm's `--mem` is per node; on a node the job holds:

    mem_mb = attempt × ⌈(pool + BUILD_BYTES + processes × (PROCESS_BYTES + mono × pool)) / MiB⌉

- `pool`: the training pool, memory-mapped and shared by the node's processes
  (`xlsent.train.mapped_pool`), so counted once: the page cache that holds it is charged to
  the job. Its bytes are read from the input files' Parquet footers, without reading the
  data: per value of each column the pool keeps (`VALUE_BYTES`: subword ids and word-span
  bounds as int32, a link as two int32), an int64 row offset per column per pair and an int16
  language per pair (`LANG_BYTES`). That is the size of the pool's files exactly, before
  truncation to `max_length`, which only shortens them (`tests/unit/train/test_memory.py`
  checks it on real files). At max_length 32 and 19 subwords a side on average, 151 B a pair
  for TR and 487 B for WACSE (synthetic pairs, as below): 4.2 and 13.6 GiB at 30M pairs.
- `BUILD_BYTES`: what the first process holds on top while it writes the pool, a batch of
  rows at a time (`xlsent.train.data.BATCH_ROWS`): the Parquet reader and a few copies of a
  batch, whatever the pool's size. 512 MiB: the writer's peak RSS less that of an
  interpreter that only imported the same modules was 186 MiB for subword files
  (`benchmarks/train_memory.py`, 2M pairs) and 378 MiB for word-span files (1M synthetic
  pairs of the same lengths, a word per 1.4 subwords, a link per word of the shorter side).
- `PROCESS_BYTES` a process: the interpreter, torch (and on a GPU the CUDA runtime and its
  libraries), the model's weights as they are read on the host, the optimizer's state on a
  CPU run, the dev pairs (in memory) and the batches being built. 8,000 MiB: the largest training
  process measured here, multilingual-e5-small on the CPU at batch 128 with its word
  embeddings trained, peaked at 4.9 GB (docs/results.md, "Fine-tuning cost"); a GPU process
  holds the CUDA runtime (about 3 GB) and xlm-roberta-base's 1.1 GB of float32 weights on the
  host while they are loaded (not measured here: no GPU).
- `mono`: 1 for a method that trains on monolingual sentences (`Method.monolingual`: MLM),
  which turns the pool into monolingual sentences in each process's own memory
  (`xlsent.train.data.monolingual`: every sentence but the English duplicates), a copy of at
  most the pool per process.

A retried job (`attempt` 2, 3) asks for twice, three times as much, as every rule does.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable

import pyarrow.parquet as pq

from xlsent.methods import METHODS
from xlsent.train.columns import PAIR_INPUTS, WORD_FIELDS

# Bytes one value of each input column takes in the pool (`xlsent.train.data`).
VALUE_BYTES = {
    "xx_ids": 4,
    "en_ids": 4,
    "xx_starts": 4,
    "xx_ends": 4,
    "en_starts": 4,
    "en_ends": 4,
    "links": 8,
}
# The columns of the pool of each method: those that read links (WACSE) the word-span files,
# the rest the subwords.
PAIR_COLUMNS = tuple(PAIR_INPUTS)
WORD_COLUMNS = (*PAIR_INPUTS, *WORD_FIELDS)
# Bytes per pair per column (its int64 row offset; each column's offsets start with a 0), and
# per pair (its int16 language).
OFFSET_BYTES = 8
LANG_BYTES = 2
BUILD_BYTES = 512 * 2**20
PROCESS_BYTES = 8_000 * 2**20


def columns_of(method: str) -> tuple[str, ...]:
    """The input columns the pool of a run of `method` keeps."""
    return WORD_COLUMNS if METHODS[method].needs_links else PAIR_COLUMNS


def pool_bytes(input_paths: Iterable[str | os.PathLike[str]], method: str) -> int:
    """The bytes of the pool's files for a run of `method` on `input_paths`, before truncation
    (which only shortens them)."""
    columns = columns_of(method)
    return sum(_share(path, columns) for path in input_paths) + OFFSET_BYTES * len(columns)


def job_mem_mb(
    input_paths: Iterable[str | os.PathLike[str]], method: str, processes: int, attempt: int
) -> int:
    """The `mem_mb` of a `train` job of `method` on `input_paths` (its training files, the
    subwords or for WACSE the word spans) with `processes` training processes on each node
    (`xlsent.config.runs.processes_per_node`), at its `attempt` (1 the first).

    A missing file raises FileNotFoundError naming it as given, which Snakemake takes as a
    resource not known yet, evaluated again once the file exists."""
    return attempt * math.ceil(node_bytes(input_paths, method, processes) / 2**20)


def node_bytes(input_paths: Iterable[str | os.PathLike[str]], method: str, processes: int) -> int:
    """The bytes a node of the job holds at most (the model above), at the first attempt."""
    pool = pool_bytes(input_paths, method)
    per_process = PROCESS_BYTES + (pool if METHODS[method].monolingual else 0)
    return pool + BUILD_BYTES + processes * per_process


def _share(path: str | os.PathLike[str], columns: tuple[str, ...]) -> int:
    """The bytes of the pool's rows of the input file `path`, from its Parquet footer: each
    column's values (a leaf's values less its nulls, which are rows' empty lists) and rows."""
    os.stat(path)  # pyarrow's FileNotFoundError names no file
    metadata = pq.read_metadata(path)
    leaves: Counter[str] = Counter()
    for group in range(metadata.num_row_groups):
        for index in range(metadata.num_columns):
            chunk = metadata.row_group(group).column(index)
            stats = chunk.statistics
            nulls = stats.null_count if stats is not None and stats.has_null_count else 0
            leaves[chunk.path_in_schema] += chunk.num_values - nulls
    total = metadata.num_rows * LANG_BYTES
    for column in columns:
        # A link is a struct of two leaves, each with a value per link: count one of them.
        values = max((n for leaf, n in leaves.items() if leaf.split(".")[0] == column), default=0)
        total += values * VALUE_BYTES[column] + metadata.num_rows * OFFSET_BYTES
    return total
