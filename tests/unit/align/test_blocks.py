"""A neural aligner's shard in blocks (`xlsent.align.blocks`): killed mid-way, the job resumes
at its first missing block and writes the bytes of an uninterrupted job; a block is trusted
only under the fingerprint of the job that wrote it.

The shard is real German pairs of the demo (their words from the tokenize stage), aligned by
WSPAlign's inference over a tiny seeded XLM-R question-answering model with the tokenizer
trained on the same corpus.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from support import tiny_qa_model
from transformers import AutoTokenizer

from xlsent.align import job
from xlsent.align.blocks import Blocks, fingerprint
from xlsent.align.links import PairAlignment
from xlsent.align.shards import read_pairs, shard_rows
from xlsent.tokenize import words

# Questions per forward pass: a chunk of 8 pairs, a block of 64; the shard of 150 pairs has
# three blocks, the last one short.
SETTINGS = {"batch_size": 2, "threshold": 0.05, "device": "cpu"}
SHARD = 150


@pytest.fixture(scope="module")
def model(small_tokenizer: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialized XLM-R QA model (seeded) and its tokenizer, as a checkpoint
    directory."""
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    directory = tmp_path_factory.mktemp("qa") / "model"
    tiny_qa_model(tokenizer).save_pretrained(directory)

    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def inputs(small_corpus, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    """(train.parquet, its words, its pairs) of German."""
    corpus = small_corpus["de"]["train"]
    tokens = tmp_path_factory.mktemp("words") / "words.parquet"
    total = words(corpus, "de", tokens)["pairs"]
    assert total > SHARD
    return corpus, tokens, total


def _run(inputs: tuple[Path, Path, int], model: Path, out: Path, settings=SETTINGS) -> dict:
    corpus, tokens, total = inputs
    return job.run("wspalign", settings, corpus, tokens, 0, SHARD, total, out, model_dir=model)


def test_a_shard_killed_mid_way_resumes_at_its_next_block_with_the_same_bytes(
    inputs, model: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    whole = _run(inputs, model, tmp_path / "whole" / "shard-0000.arrow")
    assert whole["pairs"] == SHARD and whole["links"] > 0
    assert not (tmp_path / "whole" / ".shard-0000.arrow.blocks").exists()

    out = tmp_path / "killed" / "shard-0000.arrow"
    corpus, tokens, total = inputs
    command = [
        *(sys.executable, "-m", "xlsent.cli", "align-shard", "--method", "wspalign"),
        *("--settings", json.dumps(SETTINGS), "--corpus", str(corpus), "--words", str(tokens)),
        *("--index", "0", "--shard-size", str(SHARD), "--total", str(total)),
        *("--model", str(model), "--threads", "1", "--out", str(out)),
        *("--stats", str(out.with_suffix(".json"))),
    ]
    env = {**os.environ, "XLSENT_KILL_AT": "align_shard.block@2"}
    killed = subprocess.run(command, env=env, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    blocks = out.with_name(".shard-0000.arrow.blocks")
    finished = sorted(p.name for p in blocks.glob("block-*"))
    assert finished == ["block-0000.arrow", "block-0001.arrow"] and not out.exists()

    with caplog.at_level(logging.INFO, logger="xlsent.align.job"):
        resumed = _run(inputs, model, out)
    assert "150 pairs in blocks of 64, 128 of them aligned by an earlier job" in caplog.text
    assert out.read_bytes() == (tmp_path / "whole" / "shard-0000.arrow").read_bytes()
    assert resumed == whole
    assert not blocks.exists()


def test_a_block_is_trusted_only_under_the_fingerprint_of_the_job_that_wrote_it(
    inputs, model: Path, tmp_path: Path
) -> None:
    corpus, tokens, _ = inputs
    where = {"corpus": corpus, "words": tokens, "model": model}
    stamp = fingerprint("wspalign", SETTINGS, 0, SHARD, where)
    # The same content elsewhere (a results tree moved or copied) keeps the blocks ...
    moved = tmp_path / "moved"
    shutil.copytree(model, moved / "model")
    shutil.copy(corpus, moved / "train.parquet")
    shutil.copy(tokens, moved / "words.parquet")
    elsewhere = {"corpus": moved / "train.parquet", "words": moved / "words.parquet"}
    moved_stamp = fingerprint(
        "wspalign", SETTINGS, 0, SHARD, {**elsewhere, "model": moved / "model"}
    )
    assert moved_stamp == stamp
    # ... another setting, shard, model or corpus does not.
    (moved / "model" / "config.json").write_text((model / "config.json").read_text() + " ")
    other_rows = pq.read_table(corpus).slice(1)
    pq.write_table(other_rows, moved / "train.parquet")
    others = [
        fingerprint("wspalign", {**SETTINGS, "threshold": 0.5}, 0, SHARD, where),
        fingerprint("wspalign", SETTINGS, 1, SHARD, where),
        fingerprint("wspalign", SETTINGS, 0, SHARD, {**where, "model": moved / "model"}),
        fingerprint("wspalign", SETTINGS, 0, SHARD, {**where, "corpus": moved / "train.parquet"}),
    ]
    assert stamp not in others and len(set(others)) == len(others)

    ids, pairs = read_pairs(corpus, tokens, 0, 10)
    table, counts = shard_rows(ids, pairs, [PairAlignment(status="too_long") for _ in pairs])
    shard = tmp_path / "shard-0000.arrow"
    Blocks(shard, stamp).write(0, table, counts)
    kept_table, kept_counts = Blocks(shard, stamp).read(0)
    assert kept_table.equals(table) and kept_counts == counts == {
        "statuses": {"too_long": 10},
        "links": 0,
    }
    assert Blocks(shard, others[0]).read(0) is None  # emptied: another job's block
    assert Blocks(shard, stamp).read(0) is None
