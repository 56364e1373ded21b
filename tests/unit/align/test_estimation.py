"""eflomal's estimation pairs (`xlsent.align.estimation`): a small shard borrows its language's
other shards, then the cleaned pairs its sample kept out of every split (beyond the cap),
seeded, never a train, dev or mining pair; a pool with nothing beyond its splits (the demo's)
borrows exactly what it did before the pairs beyond the cap were read.

The corpus is synthetic German-English pairs, sampled by `xlsent.corpus.sample` and
word-tokenized by `xlsent.tokenize.words`, as the workflow's rules make them.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xlsent.align import job
from xlsent.align.estimation import BeyondCap, estimation_pairs
from xlsent.align.links import SentencePair
from xlsent.align.shards import read_pairs, shard_count
from xlsent.corpus.clean_base import CORPUS_SCHEMA
from xlsent.corpus.sample import SampleConfig, sample
from xlsent.tokenize import word_tokenizer, words

LANG = "de"
EN = ["the", "house", "is", "small", "green", "cat", "sees", "a", "dog", "tree", "big", "old"]
DE = ["das", "Haus", "ist", "klein", "grün", "Katze", "sieht", "ein", "Hund", "Baum", "groß", "alt"]
SETTINGS = {"symmetrize": "grow_diag_final_and", "max_words": 128, "seed": 0}


def _shards(paths: dict[str, Path], shard_size: int, order: list[int]) -> list[SentencePair]:
    """The pairs of the language's shards `order`, one after the other: what a shard borrows
    from its neighbours, nearest first (a tie: the lower index), before any pair beyond the
    cap, written out by hand for each case."""
    return [
        pair
        for index in order
        for pair in read_pairs(paths["train"], paths["words"], index, shard_size)[1]
    ]


def _clean(path: Path, n: int) -> None:
    """`n` distinct word-for-word pairs as the clean step writes them, ids 0..n-1, in row
    groups of 64 (so that a draw reads some and not others)."""
    rng = random.Random(0)
    rows = {"id": [], "en": [], "xx": [], "source": []}
    for i in range(n):
        ks = [rng.randrange(len(EN)) for _ in range(rng.randint(3, 7))]
        rows["id"].append(i)
        rows["en"].append(" ".join(EN[k] for k in ks) + f" {i}.")
        rows["xx"].append(" ".join(DE[k] for k in ks) + f" {i}.")
        rows["source"].append("synthetic")
    pq.write_table(pa.table(rows, schema=CORPUS_SCHEMA), path, row_group_size=64)


def _language(tmp_path: Path, n: int, **corpus: int) -> dict[str, Path]:
    """A language's clean corpus of `n` pairs, its sample at the `corpus` settings and the
    training split's words."""
    paths = {split: tmp_path / f"{split}.parquet" for split in ("clean", "train", "dev", "mining")}
    _clean(paths["clean"], n)
    cfg = SampleConfig(min_train_pairs=1, min_dev_pairs=1, **corpus)
    sample(paths["clean"], LANG, paths["train"], paths["dev"], cfg, paths["mining"])
    paths["words"] = tmp_path / "words.parquet"
    words(paths["train"], LANG, paths["words"])
    return paths


def _beyond(paths: dict[str, Path]) -> BeyondCap:
    return BeyondCap(LANG, paths["clean"], (paths["train"], paths["dev"], paths["mining"]))


def _texts(path: Path) -> set[tuple[str, str]]:
    table = pq.read_table(path, columns=["en", "xx"])
    return set(zip(table.column("en").to_pylist(), table.column("xx").to_pylist(), strict=True))


@pytest.fixture
def capped(tmp_path: Path) -> dict[str, Path]:
    """400 clean pairs, 40 of them trained on (one shard), 30 dev, 30 mining: 300 beyond."""
    return _language(tmp_path, 400, max_pairs=40, dev_pairs=30, mining_pairs=30)


def _rows(paths: dict[str, Path]) -> int:
    return pq.ParquetFile(paths["train"]).metadata.num_rows


def test_a_one_shard_pool_borrows_beyond_the_cap_up_to_the_minimum(capped) -> None:
    total = _rows(capped)
    assert total == 40
    wanted = 200 - total  # min_estimation_pairs 200
    extra, beyond = estimation_pairs(
        capped["train"], capped["words"], 0, 100, total, wanted, _beyond(capped), seed=0
    )
    assert len(extra) == beyond == wanted
    borrowed = {(p.en, p.xx) for p in extra}
    assert len(borrowed) == wanted
    assert borrowed <= _texts(capped["clean"])
    for split in ("train", "dev", "mining"):
        assert not borrowed & _texts(capped[split]), split
    # Word tokens as the words rule gives them.
    assert [p.en_words for p in extra] == list(word_tokenizer("en")(p.en for p in extra))
    assert [p.xx_words for p in extra] == list(word_tokenizer(LANG)(p.xx for p in extra))


def test_the_draw_is_seeded_and_a_longer_one_extends_a_shorter(capped) -> None:
    beyond = _beyond(capped)
    ids = beyond.rows(120, seed=0).column("id").to_pylist()
    assert ids == beyond.rows(120, seed=0).column("id").to_pylist()
    assert ids[:50] == beyond.rows(50, seed=0).column("id").to_pylist()
    assert ids != beyond.rows(120, seed=1).column("id").to_pylist()
    # Another language's stream: the same rows in another order.
    other = BeyondCap("fr", beyond.clean, beyond.splits).rows(120, seed=0)
    assert other.column("id").to_pylist() != ids
    # Every pair beyond the cap, and no more, when more are wanted than there are.
    everything = beyond.rows(10_000, seed=0).column("id").to_pylist()
    kept = set()
    for split in beyond.splits:
        kept |= set(pq.read_table(split, columns=["id"]).column("id").to_pylist())
    assert sorted(everything) == sorted(set(range(400)) - kept)
    assert len(everything) == 300
    # The text is that of the drawn row.
    rows = beyond.rows(20, seed=0)
    clean = pq.read_table(beyond.clean)
    for i, en in zip(rows.column("id").to_pylist(), rows.column("en").to_pylist(), strict=True):
        assert clean.column("en")[i].as_py() == en


def test_other_shards_come_first(tmp_path: Path) -> None:
    """Three shards of 40 pairs: shard 1 borrows its neighbours' 80, then 70 beyond."""
    paths = _language(tmp_path, 400, max_pairs=120, dev_pairs=30, mining_pairs=30)
    total = _rows(paths)
    old = _shards(paths, 40, [0, 2])
    extra, beyond = estimation_pairs(
        paths["train"], paths["words"], 1, 40, total, 150, _beyond(paths), seed=0
    )
    assert (len(old), beyond, len(extra)) == (80, 70, 150)
    assert extra[:80] == old
    assert {(p.en, p.xx) for p in extra[80:]}.isdisjoint(_texts(paths["train"]))


def test_a_pool_without_pairs_beyond_its_splits_borrows_as_before(tmp_path: Path) -> None:
    """The demo's case (no cap in effect: every clean pair is train or dev)."""
    paths = _language(tmp_path, 300, max_pairs=1_000_000, dev_pairs=30)
    total = _rows(paths)
    assert total == 270
    assert shard_count(total, 100) == 3
    # Every other shard is borrowed whole (1,000 wanted, 270 pairs in all), nearest first.
    for index, neighbours in enumerate([[1, 2], [0, 2], [1, 0]]):
        wanted = 1000 - len(read_pairs(paths["train"], paths["words"], index, 100)[1])
        old = _shards(paths, 100, neighbours)
        new, beyond = estimation_pairs(
            paths["train"], paths["words"], index, 100, total, wanted, _beyond(paths), seed=0
        )
        assert (new, beyond) == (old, 0)


@pytest.mark.slow  # eflomal runs three times
def test_the_job_aligns_the_same_shard_with_or_without_the_uncapped_pool(tmp_path: Path) -> None:
    paths = _language(tmp_path, 300, max_pairs=1_000_000, dev_pairs=30)
    total = _rows(paths)
    settings = {**SETTINGS, "min_estimation_pairs": 1000}
    runs = {}
    for name, beyond in (("before", None), ("after", _beyond(paths))):
        out = tmp_path / f"{name}.arrow"
        stats = job.run(
            "eflomal", settings, paths["train"], paths["words"], 1, 100, total, out, beyond=beyond
        )
        runs[name] = (out.read_bytes(), stats)
    assert runs["before"][0] == runs["after"][0]
    assert runs["after"][1] == runs["before"][1]
    assert runs["after"][1]["estimation_pairs"] == 170
    assert runs["after"][1]["estimation_pairs_beyond_cap"] == 0

    (tmp_path / "capped").mkdir()
    capped = _language(tmp_path / "capped", 400, max_pairs=40, dev_pairs=30, mining_pairs=30)
    stats = job.run(
        "eflomal",
        {**SETTINGS, "min_estimation_pairs": 200},
        capped["train"],
        capped["words"],
        0,
        100,
        40,
        tmp_path / "capped.arrow",
        beyond=_beyond(capped),
    )
    counts = (stats["pairs"], stats["estimation_pairs"], stats["estimation_pairs_beyond_cap"])
    assert counts == (40, 160, 160)


def test_the_job_takes_all_flags_of_the_pairs_beyond_the_cap_or_none(tmp_path, caplog) -> None:
    from xlsent.cli import main

    settings = json.dumps({**SETTINGS, "min_estimation_pairs": 10})
    argv = ["align-shard", "--method", "eflomal", "--settings", settings, "--corpus", "c"]
    argv += ["--words", "w", "--index", "0", "--shard-size", "10", "--total", "10"]
    argv += ["--threads", "1", "--out", str(tmp_path / "s.arrow"), "--stats", "s.json"]
    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit) as stopped:
        main([*argv, "--lang", "de", "--clean", "clean.parquet"])
    assert stopped.value.code == 2
    assert "--dev and --mining are required to borrow pairs beyond the cap" in caplog.text
