"""The memory-mapped training pool: the arrays of the in-memory loaders, byte for byte, written
once per inputs and length limit, written again when stale, damaged or cut short, and the same
training."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from support import scratch_trainer, train_settings

from xlsent.ragged import Ragged
from xlsent.train import data, loop
from xlsent.train.data import (
    Pairs,
    WordAligned,
    load_pairs,
    load_word_aligned,
    monolingual,
)
from xlsent.train.distributed import World
from xlsent.train.mapped_pool import (
    MANIFEST,
    POOL,
    PoolError,
    mapped_pairs,
    mapped_word_aligned,
)


def _train(small_subwords) -> dict[str, Path]:
    return {lang: p["train"] for lang, p in small_subwords.items()}


def _same_array(ours: np.ndarray, theirs: np.ndarray) -> bool:
    return (
        ours.dtype == theirs.dtype and ours.shape == theirs.shape and np.array_equal(ours, theirs)
    )


def _same_ragged(ours: Ragged, theirs: Ragged) -> bool:
    return _same_array(ours.values, theirs.values) and _same_array(ours.offsets, theirs.offsets)


def _same_pairs(ours: Pairs, theirs: Pairs) -> bool:
    return (
        _same_ragged(ours.xx, theirs.xx)
        and _same_ragged(ours.en, theirs.en)
        and _same_array(ours.lang, theirs.lang)
        and ours.langs == theirs.langs
    )


def _mapped_files(pairs: Pairs) -> list[np.ndarray]:
    return [pairs.xx.values, pairs.xx.offsets, pairs.en.values, pairs.en.offsets, pairs.lang]


def test_mapped_pairs_are_the_in_memory_pairs_and_read_only(small_subwords, tmp_path, monkeypatch):
    paths = _train(small_subwords)
    expected = load_pairs(paths, 16)  # each language's 1,400 pairs read at once
    assert expected.xx.lengths.max() == 14  # truncation to 16 - 2 cuts some rows
    monkeypatch.setattr(data, "BATCH_ROWS", 100)  # written 100 rows at a time
    pairs = mapped_pairs(paths, 16, tmp_path, World())
    assert _same_pairs(pairs, expected)
    for array in _mapped_files(pairs):
        assert isinstance(array, np.memmap) and not array.flags.writeable
        assert Path(array.filename).parent == tmp_path / POOL
    with pytest.raises(ValueError, match="read-only"):
        pairs.xx.values[0] = 1
    # A batch is gathered out of the map into memory of its own.
    index = np.array([5, 0, 3])
    batch = pairs.xx.take(index)
    assert type(batch.values) is np.ndarray and _same_ragged(batch, expected.xx.take(index))
    # MLM's monolingual view of the mapped pool is that of the in-memory one.
    ours, theirs = monolingual(pairs), monolingual(expected)
    assert _same_ragged(ours.sentences, theirs.sentences)
    assert _same_array(ours.meaning, theirs.meaning) and _same_array(ours.lang, theirs.lang)


def test_mapped_word_spans_are_the_in_memory_ones_truncated_as_they_were_written(
    small_word_spans, tmp_path, monkeypatch
):
    pairs, words, stats = load_word_aligned(small_word_spans, 16)
    assert sum(s["links_truncated"] for s in stats.values()) > 0  # truncation drops links here
    monkeypatch.setattr(data, "BATCH_ROWS", 100)  # each language's statistics summed
    ours, our_words, our_stats = mapped_word_aligned(small_word_spans, 16, tmp_path, World())
    assert _same_pairs(ours, pairs) and our_stats == stats
    for field in WordAligned.__dataclass_fields__:
        assert _same_ragged(getattr(our_words, field), getattr(words, field)), field
    assert not our_words.xx_ends.values.flags.writeable
    assert our_words.links.values.shape[1:] == (2,)


def _written(directory: Path) -> int:
    """The inode of the pool's manifest: a pool written again is a new directory."""
    return (directory / POOL / MANIFEST).stat().st_ino


def test_a_pool_is_reused_for_the_same_inputs_and_written_again_when_they_change(
    small_subwords, small_word_spans, tmp_path
):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    paths = {
        lang: Path(shutil.copy2(p, inputs / f"{lang}.parquet"))
        for lang, p in _train(small_subwords).items()
    }
    checkpoints = tmp_path / "checkpoints"
    mapped_pairs(paths, 16, checkpoints, World())
    first = _written(checkpoints)
    assert _same_pairs(mapped_pairs(paths, 16, checkpoints, World()), load_pairs(paths, 16))
    assert _written(checkpoints) == first  # read again, not written

    # Another length limit.
    assert _same_pairs(mapped_pairs(paths, 8, checkpoints, World()), load_pairs(paths, 8))
    second = _written(checkpoints)
    assert second != first

    # An input rewritten (its modification time moved on, its bytes the other language's).
    stat = paths["kk"].stat()
    shutil.copyfile(paths["de"], paths["kk"])
    os.utime(paths["kk"], ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert _same_pairs(mapped_pairs(paths, 8, checkpoints, World()), load_pairs(paths, 8))
    assert _written(checkpoints) != second

    # The pairs of the word-span files, then their word-aligned pool: another kind of pool.
    spans = checkpoints.parent / "spans"
    assert _same_pairs(
        mapped_pairs(small_word_spans, 16, spans, World()), load_pairs(small_word_spans, 16)
    )
    _, words, _ = mapped_word_aligned(small_word_spans, 16, spans, World())
    assert _same_ragged(words.links, load_word_aligned(small_word_spans, 16)[1].links)


def _cut(pool: Path) -> None:
    path = pool / "xx.values.bin"
    path.write_bytes(path.read_bytes()[:-4])


def _grown(pool: Path) -> None:
    with open(pool / "en.offsets.bin", "ab") as f:
        f.write(b"\0" * 8)


def _garbled(pool: Path) -> None:
    (pool / MANIFEST).write_text('{"format": 1, "kind"')


def _manifest_gone(pool: Path) -> None:
    (pool / MANIFEST).unlink()


def _file_gone(pool: Path) -> None:
    (pool / "lang.bin").unlink()


def _offsets_wrong(pool: Path) -> None:
    """Offsets of the right size that do not span the values (a file from elsewhere)."""
    offsets = np.fromfile(pool / "xx.offsets.bin", dtype=np.int64)
    (offsets + 1).tofile(pool / "xx.offsets.bin")


def _entry_gone(pool: Path) -> None:
    """A manifest without one of the files (edited, or of another layout)."""
    manifest = json.loads((pool / MANIFEST).read_text())
    del manifest["arrays"]["en.offsets"]
    (pool / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "damage", [_cut, _grown, _garbled, _manifest_gone, _file_gone, _offsets_wrong, _entry_gone]
)
def test_a_damaged_pool_is_written_again(small_subwords, tmp_path, damage):
    paths = _train(small_subwords)
    mapped_pairs(paths, 16, tmp_path, World())
    damage(tmp_path / POOL)
    assert _same_pairs(mapped_pairs(paths, 16, tmp_path, World()), load_pairs(paths, 16))
    assert sorted(p.name for p in tmp_path.iterdir()) == [POOL]


def test_a_process_that_finds_no_pool_of_its_inputs_says_why(small_subwords, tmp_path):
    """Not the first process: it never writes the pool, it maps the one the first wrote."""
    paths = _train(small_subwords)
    mapped_pairs(paths, 16, tmp_path, World())
    second = World(rank=1, size=1)  # a process group of its own: no barrier to wait at
    assert _same_pairs(mapped_pairs(paths, 16, tmp_path, second), load_pairs(paths, 16))
    with pytest.raises(PoolError, match=rf"the training pool {tmp_path / POOL}, which the first"):
        mapped_pairs(paths, 8, tmp_path, second)  # the pool is of max_length 16


KILLED = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from xlsent.train.distributed import World
    from xlsent.train.mapped_pool import mapped_pairs

    paths = {lang: Path(p) for lang, p in json.loads(sys.argv[1]).items()}
    mapped_pairs(paths, 16, Path(sys.argv[2]), World())
    """
)


@pytest.mark.slow  # kills a process and writes again
def test_a_pool_killed_half_written_is_cleared_and_written_again(small_subwords, tmp_path):
    paths = _train(small_subwords)
    args = [json.dumps({lang: str(p) for lang, p in paths.items()}), str(tmp_path)]
    env = {**os.environ, "XLSENT_KILL_AT": "train.pool"}  # after the first language
    proc = subprocess.run([sys.executable, "-c", KILLED, *args], env=env, capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    (left,) = tmp_path.iterdir()
    assert left.name.startswith(f".{POOL}.tmp-") and (left / "xx.values.bin").stat().st_size > 0
    assert _same_pairs(mapped_pairs(paths, 16, tmp_path, World()), load_pairs(paths, 16))
    assert sorted(p.name for p in tmp_path.iterdir()) == [POOL]


TWO_PROCESSES = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    import numpy as np
    import torch.distributed as dist
    from xlsent.train import mapped_pool
    from xlsent.train.distributed import World, barrier

    args, rank = json.loads(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group(
        "gloo", init_method=f"file://{args['rendezvous']}", rank=rank, world_size=2
    )
    if rank == 0:  # a slow writer: the other process must wait for it
        write = mapped_pool._write

        def slow(*parts):
            time.sleep(2)
            write(*parts)

        mapped_pool._write = slow
    paths = {lang: Path(p) for lang, p in args["paths"].items()}
    pairs = mapped_pool.mapped_pairs(paths, 16, Path(args["checkpoints"]), World(rank, 2, rank))
    arrays = [pairs.xx.values, pairs.xx.offsets, pairs.en.values, pairs.en.offsets, pairs.lang]
    np.savez(f"{args['out']}{rank}.npz", *arrays)
    barrier(World(rank, 2, rank))
    dist.destroy_process_group()
    """
)


@pytest.mark.slow  # two processes in a process group
def test_the_first_process_writes_the_pool_and_the_others_wait_for_it(small_subwords, tmp_path):
    paths = _train(small_subwords)
    args = {
        "paths": {lang: str(p) for lang, p in paths.items()},
        "rendezvous": str(tmp_path / "rendezvous"),
        "checkpoints": str(tmp_path / "checkpoints"),
        "out": str(tmp_path / "rank"),
    }
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", TWO_PROCESSES, json.dumps(args), str(rank)],
            env=env,
            stderr=subprocess.PIPE,
        )
        for rank in (0, 1)
    ]
    errors = [proc.communicate(timeout=300)[1].decode() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], errors
    expected = _mapped_files(load_pairs(paths, 16))
    for rank in (0, 1):
        with np.load(tmp_path / f"rank{rank}.npz") as saved:
            got = [saved[f"arr_{i}"] for i in range(len(expected))]
        assert all(_same_array(a, b) for a, b in zip(got, expected, strict=True)), rank


SETTINGS = train_settings(
    batch_size=16,
    micro_batch_size=8,
    max_steps=4,
    eval_every=4,
    checkpoint_every=4,
    log_every=2,
    dev_max_pairs=50,
)


def _trained(method: str, train: dict[str, Path], small_subwords, small_tokenizer, checkpoints):
    settings = {**SETTINGS, "method": method}
    trainer = scratch_trainer(small_subwords, small_tokenizer, checkpoints, settings, train=train)
    trainer.run()
    return trainer


@pytest.mark.parametrize("method", ["tr", "wacse"])
def test_training_on_the_mapped_pool_trains_the_weights_of_the_in_memory_pool(
    method, small_subwords, small_word_spans, small_tokenizer, tmp_path, monkeypatch
):
    torch.set_num_threads(1)
    train = small_word_spans if method == "wacse" else _train(small_subwords)
    mapped = _trained(method, train, small_subwords, small_tokenizer, tmp_path / "mapped")
    assert isinstance(mapped.train_data.xx.values, np.memmap)
    assert (tmp_path / "mapped" / POOL / MANIFEST).is_file()

    # The trainer as it was: each process reads the pool into its own memory.
    monkeypatch.setattr(loop, "mapped_pairs", lambda paths, length, *_: load_pairs(paths, length))
    monkeypatch.setattr(
        loop, "mapped_word_aligned", lambda paths, length, *_: load_word_aligned(paths, length)
    )
    in_memory = _trained(method, train, small_subwords, small_tokenizer, tmp_path / "memory")
    assert not isinstance(in_memory.train_data.xx.values, np.memmap)
    assert not (tmp_path / "memory" / POOL).exists()

    ours, theirs = mapped.objective.state_dict(), in_memory.objective.state_dict()
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[name], theirs[name]) for name in ours)
    assert mapped.step == in_memory.step == 4 and mapped.best == in_memory.best
