"""The hard-negative stage (`xlsent.hard_negatives`) and TR's step with its negatives.

The mining's filters on a hand-made case with a duplicate translation and a paraphrase; its
search against a brute-force one; the stage's files on the demo's German pairs (encoded by a
tiny seeded model: what is checked is what the files must hold whatever the model); a shard
killed mid-way resumed to the bytes of an uninterrupted one; a TR step whose loss is the one
computed by hand from each sentence's vector.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from support import scratch_objectives, tiny_shape

from xlsent.hard_negatives.encode import PoolEncoding, encode_shard, read_shard
from xlsent.hard_negatives.mine import MiningSettings, mine, normalise, run
from xlsent.models import encoder
from xlsent.models.sentence import SentenceSettings
from xlsent.ragged import Ragged
from xlsent.train.collate import collate
from xlsent.train.data import (
    Pairs,
    joined,
    pair_parts,
    pairs_of,
    read_negatives,
    subset_rows,
    with_negatives,
)

# Sentences a forward pass: blocks of 32 × 4 = 128 pairs, so a shard of 150 has two; the
# stage's other tests encode 64 a pass.
BLOCKS = PoolEncoding(max_length=24, batch_size=4, device="cpu")
ENCODING = PoolEncoding(max_length=24, batch_size=64, device="cpu")
SHARD = 150


def _at(degrees: list[float]) -> np.ndarray:
    """Unit vectors in the plane at these angles."""
    radians = np.radians(degrees)
    return np.stack([np.cos(radians), np.sin(radians)], 1)


def _cos(degrees: float) -> float:
    return float(np.cos(np.radians(degrees)))


def test_normalise_ignores_case_punctuation_and_spaces():
    assert normalise("  Open File…") == normalise("open file") == "open file"
    assert normalise("Save\tas: ") == "save as"
    assert normalise("Don't") == "dont"
    assert normalise("Ｓave") == "save"  # NFKC: a full-width letter is its letter


def test_a_duplicate_translation_is_never_a_negative_and_the_ceiling_skips_paraphrases():
    """Five pairs; pairs 0 and 1 share their English text up to case and punctuation (a
    duplicate translation). English at 0°, 0°, 30°, 35°, 90°; the foreign sentences at 0°,
    0°, 33°, 35°, 90°. Cosines: pair 2's own 0.9986, so its ceiling is 0.95 × that, 0.9487,
    and "Save as" (cos 2° = 0.9994) is skipped as a paraphrase; pair 3's ceiling 0.95 skips
    "Save" (cos 5° = 0.9962)."""
    english = ["Open file", "open file.", "Save", "Save as", "Close"]
    xx, en = _at([0, 0, 33, 35, 90]), _at([0, 0, 30, 35, 90])
    mined = mine(xx, en, english, MiningSettings(mined=3, relative_margin=0.05))
    assert mined.rows.tolist() == [
        [2, 3, 4],
        [2, 3, 4],  # not row 0: its English is this pair's own
        [0, 4, -1],  # not row 3, above the ceiling; "Open file" once, by its first row
        [0, 4, -1],
        [3, 2, 0],
    ]
    c = _cos
    expected = [
        [c(30), c(35), c(90)],
        [c(30), c(35), c(90)],
        [c(33), c(57), math.nan],
        [c(35), c(55), math.nan],
        [c(55), c(60), c(90)],
    ]
    np.testing.assert_allclose(mined.scores, expected, atol=1e-6)
    np.testing.assert_allclose(mined.positive, [1, 1, c(3), 1, 1], atol=1e-6)
    counts = dict(mined.counts)
    assert counts.pop("mean_positive") == pytest.approx(np.mean([1, 1, c(3), 1, 1]), abs=1e-4)
    assert counts.pop("mean_negative") == pytest.approx(np.nanmean(expected), abs=1e-4)
    assert counts == {
        "pairs": 5,
        "english_texts": 4,
        "shared_english": 2,  # pairs 0 and 1
        "above_ceiling": 2,
        "pairs_above_ceiling": 2,
        "negatives": 13,
        "pairs_short": 2,
    }
    # A ceiling at the positive itself (0): the paraphrase ranked above pair 2's translation
    # is still skipped, the one below pair 3's is kept.
    at_positive = mine(xx, en, english, MiningSettings(mined=3, relative_margin=0.0))
    assert at_positive.rows[2].tolist() == [0, 4, -1]
    assert at_positive.rows[3].tolist() == [2, 0, 4]


def test_the_search_deepens_until_it_has_the_best_kept_candidates():
    """Random pairs whose own cosine is low, so that the ceiling skips most of the nearest
    candidates and the first search is too shallow: the result is a brute force's."""
    rng = np.random.default_rng(0)
    xx, en = rng.normal(size=(60, 8)), rng.normal(size=(60, 8))
    english = [f"sentence {i % 50}" for i in range(60)]  # 10 duplicate translations
    settings = MiningSettings(mined=2, relative_margin=0.05)
    got = mine(xx, en, english, settings)
    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731
    x, e = unit(xx), unit(en)
    cosines = x @ e[:50].T  # the first row of each text
    positive = (x * e).sum(1)
    expected, deepest = np.full((60, 2), -1), 0
    for i in range(60):
        order = list(np.argsort(-cosines[i], kind="stable"))
        kept = [
            j
            for j in order
            if j != i % 50 and cosines[i, j] <= positive[i] - 0.05 * abs(positive[i])
        ]
        expected[i, : len(kept[:2])] = kept[:2]
        deepest = max([deepest, *(order.index(j) + 1 for j in kept[:2])])
    assert (got.rows == expected).all()
    assert deepest > 4 * (2 + 1)  # beyond the first search's depth


@pytest.fixture(scope="module")
def start_model(small_tokenizer: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny seeded scratch encoder saved as a run's model directory: the model the runs
    start from."""
    torch.manual_seed(0)
    model = encoder.build("scratch", small_tokenizer, max_length=32, shape=tiny_shape(layers=1))
    # Mean pooling: an untrained encoder's CLS state is nearly the same for every sentence.
    SentenceSettings(pooling="mean").record(model.config)
    directory = tmp_path_factory.mktemp("start") / "model"
    model.save_pretrained(directory)
    return directory


def _encode(
    small_subwords,
    start_model,
    small_tokenizer,
    out: Path,
    index: int = 0,
    size: int = SHARD,
    encoding: PoolEncoding = BLOCKS,
) -> dict:
    return encode_shard(
        encoding,
        {"de": small_subwords["de"]["train"]},
        index,
        size,
        start_model,
        small_tokenizer,
        out,
    )


def test_the_stage_writes_each_pairs_hardest_english_without_false_negatives(
    small_corpus, small_subwords, small_tokenizer, start_model, tmp_path
):
    corpus = small_corpus["de"]["train"]
    pairs = pq.read_table(corpus).num_rows
    half = -(-pairs // 2)
    shards = [tmp_path / f"vectors-{i:04d}.arrow" for i in range(2)]
    for index, shard in enumerate(shards):
        counts = _encode(small_subwords, start_model, small_tokenizer, shard, index, half, ENCODING)
        assert counts["pairs"] == min(half, pairs - index * half) and counts["width"] == 32
    settings = MiningSettings(mined=4, relative_margin=0.05)
    out, manifest = tmp_path / "negatives.parquet", tmp_path / "_SUCCESS"
    record = run(shards, "de", corpus, settings, out, manifest)
    assert json.loads(manifest.read_text()) == record
    assert [s["file"] for s in record["shards"]] == [s.name for s in shards]

    table = pq.read_table(out)
    text = pq.read_table(corpus, columns=["id", "en"])
    assert table.column("id").to_pylist() == text.column("id").to_pylist()
    rows = read_negatives(out)
    scores = np.array(table.column("scores").to_pylist(), dtype=np.float64)
    positive = table.column("positive").to_numpy()
    english = [normalise(t) for t in text.column("en").to_pylist()]
    first = {}
    for i, key in enumerate(english):
        first.setdefault(key, i)
    assert rows.shape == (pairs, 4) and (rows >= 0).sum() == record["totals"]["negatives"] > 0
    for i in range(pairs):
        found = rows[i][rows[i] >= 0]
        assert len(found) == 4 or np.isnan(scores[i, len(found) :]).all()
        # Never the pair's own English text (nor a duplicate translation of it), each text
        # once, by its first row; the most similar first, none above the ceiling.
        assert all(english[j] != english[i] and first[english[j]] == j for j in found)
        assert len(set(found)) == len(found)
        kept = scores[i, : len(found)]
        assert (np.diff(kept) <= 1e-6).all()
        assert (kept <= positive[i] - 0.05 * abs(positive[i]) + 1e-6).all()
    shared = sum(english.count(key) > 1 for key in english)
    assert record["totals"]["shared_english"] == shared > 0  # the demo has duplicates
    assert record["totals"]["above_ceiling"] > 0  # and the ceiling skipped some

    # The scores are the cosines of the shards' vectors: row 0's first negative, by hand.
    en = [v for shard in shards for v in read_shard(shard)[0].column("en").to_pylist()]
    x = np.array(read_shard(shards[0])[0].column("xx")[0].as_py())
    e = np.array(en[rows[0, 0]])
    assert scores[0, 0] == pytest.approx(x @ e / np.linalg.norm(x) / np.linalg.norm(e), abs=1e-5)


def test_a_shard_killed_mid_way_resumes_at_its_next_block_with_the_same_bytes(
    small_subwords, small_tokenizer, start_model, tmp_path, caplog
):
    whole = tmp_path / "whole" / "vectors-0000.arrow"
    _encode(small_subwords, start_model, small_tokenizer, whole)
    out = tmp_path / "killed" / "vectors-0000.arrow"
    command = [
        *(sys.executable, "-m", "xlsent.cli", "hard-negatives-encode"),
        *("--settings", json.dumps(BLOCKS.__dict__)),
        *("--subwords", f"de={small_subwords['de']['train']}"),
        *("--index", "0", "--shard-size", str(SHARD), "--model", str(start_model)),
        *("--tokenizer", str(small_tokenizer), "--threads", "1", "--out", str(out)),
    ]
    env = {**os.environ, "XLSENT_KILL_AT": "hard_negatives.block"}
    killed = subprocess.run(command, env=env, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    blocks = out.with_name(".vectors-0000.arrow.blocks")
    finished = sorted(p.name for p in blocks.glob("block-*"))
    assert finished == ["block-0000.arrow"]
    assert not out.exists()

    with caplog.at_level(logging.INFO, logger="xlsent.hard_negatives.encode"):
        resumed = _encode(small_subwords, start_model, small_tokenizer, out)
    assert "150 pairs of de in blocks of 128, 128 of them encoded by an earlier job" in caplog.text
    assert resumed["resumed"] == 128
    assert out.read_bytes() == whole.read_bytes()
    assert not blocks.exists()


def test_a_capped_pool_reads_its_negatives_as_rows_of_its_own(
    small_corpus, small_subwords, small_tokenizer, start_model, tmp_path
):
    """Two languages' pools capped at 100 pairs (train.max_pairs): the stage mines among
    each language's 100, and the training pool reads each pair's negatives as the pool's
    rows of the same language, whose English subwords are the mined pairs'."""
    cap, files, shards = 100, {}, [tmp_path / f"vectors-{i:04d}.arrow" for i in range(2)]
    train = {lang: paths["train"] for lang, paths in small_subwords.items()}
    # Shards of 120 pairs of the pool: de's 100, then kk's 100 across the two.
    for index, shard in enumerate(shards):
        counts = encode_shard(
            ENCODING, train, index, 120, start_model, small_tokenizer, shard, max_pairs=cap
        )
        assert counts["pairs"] == (120, 80)[index]
    assert [read_shard(s)[1]["languages"] for s in shards] == [
        {"de": [0, 100], "kk": [0, 20]},
        {"kk": [20, 100]},
    ]
    for lang, held in (("de", shards[:1]), ("kk", shards)):
        files[lang] = tmp_path / lang / "negatives.parquet"
        settings = MiningSettings(mined=3)
        run(held, lang, small_corpus[lang]["train"], settings, files[lang], tmp_path / lang / "m")
    # Without the first shard kk's pairs are not all there: the job says so, writes nothing.
    with pytest.raises(ValueError, match="do not hold all of kk's pairs"):
        run(shards[1:], "kk", small_corpus["kk"]["train"], settings, tmp_path / "x", tmp_path / "m")
    assert not (tmp_path / "x").exists()
    parts = with_negatives(pair_parts(train, 24, cap), files)
    pool = pairs_of(joined(part for _, part, _ in parts), ("de", "kk"))
    assert len(pool) == 2 * cap and pool.negatives.shape == (2 * cap, 3)
    for lang, offset in (("de", 0), ("kk", cap)):
        table = pq.read_table(small_subwords[lang]["train"])
        kept = subset_rows(table.num_rows, lang, cap)
        mined = read_negatives(files[lang])
        assert pq.read_table(files[lang]).column("id").to_pylist() == [
            table.column("id")[int(r)].as_py() for r in kept
        ]
        for i in range(cap):
            for local, row in zip(mined[i], pool.negatives[offset + i], strict=True):
                assert (local < 0) == (row < 0)
                if local >= 0:
                    assert row == offset + local
                    en = table.column("en_ids")[int(kept[local])].as_py()[:22]
                    assert pool.en.take(np.array([row])).values.tolist() == en


def test_a_tr_step_ranks_each_pairs_own_hard_negatives_as_by_hand(small_tokenizer):
    """A micro-batch of pairs 0, 1 and 3 of a pool of four: pair 0's negatives are the pool's
    English rows 2 and 3, pair 1's row 3 and an empty slot, pair 3's none. Its TR loss (with
    a margin) is the one computed from each sentence's vector alone, by the formula."""
    shape = tiny_shape(layers=1, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    tau, m = 0.5, 0.1
    objective = scratch_objectives(
        small_tokenizer, shape, method="tr", hard_negatives=2, tr_margin=m, temperature=tau
    )
    xx = Ragged.from_rows([np.array(r) for r in ([5, 6, 7], [8, 9], [10, 11, 12, 13], [14])])
    en = Ragged.from_rows([np.array(r) for r in ([20, 21], [22, 23, 24], [25], [26, 27])])
    mined = np.array([[2, 3], [3, -1], [0, 1], [-1, -1]], dtype=np.int32)
    pairs = Pairs(xx, en, np.zeros(4, np.int16), ("de",), mined)
    batch = objective.collator(pairs, np.array([0, 1, 3]))
    assert batch.hard.index.tolist() == [[0, 1], [2, -1], [-1, -1]]
    loss, parts = objective(batch)

    t = objective.collator.tokens

    def vector(ids: np.ndarray) -> np.ndarray:
        row, mask = collate([ids], t.cls, t.sep, t.pad)
        with torch.no_grad():
            out = objective.sentence_vectors(objective.encode(row, mask, None), mask)[0]
        return out.double().numpy() / np.linalg.norm(out.double().numpy())

    x = {i: vector(xx.take(np.array([i])).values) for i in (0, 1, 3)}
    e = {i: vector(en.take(np.array([i])).values) for i in range(4)}
    terms = []
    for i, hard in ((0, [2, 3]), (1, [3]), (3, [])):
        gold = math.exp((x[i] @ e[i] - m) / tau)
        others = [math.exp(x[i] @ e[j] / tau) for j in (0, 1, 3) if j != i]
        others += [math.exp(x[i] @ e[j] / tau) for j in hard]
        terms.append(-math.log(gold / (gold + sum(others))))
    assert parts["tr"].item() == pytest.approx(np.mean(terms), rel=1e-5)
    assert loss.item() == pytest.approx(np.mean(terms), rel=1e-5)
