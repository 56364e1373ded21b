"""SimAlign: the matching methods on a hand-computed similarity matrix, the subword → word
lifting on a hand-made tokenization, the aligner end to end on a tiny seeded model (one
alignment job writing its shard), and on the real multilingual-e5-small with gold links."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support import SHARED, save_tiny_model

from xlsent.align import job
from xlsent.align.links import SentencePair
from xlsent.align.metrics import aer, read_gold
from xlsent.align.shards import read_shard
from xlsent.align.simalign import (
    SimAlignConfig,
    SimAligner,
    SimAlignError,
    itermax,
    max_weight_match,
    mutual_argmax,
    piece_words,
    word_links,
)

# Row i's best column and column j's best row:
#   rows 0 → 0, 1 → 0, 2 → 1;  columns 0 → 0, 1 → 2, 2 → 2.
SIM = np.array(
    [
        [0.9, 0.1, 0.3],
        [0.8, 0.2, 0.1],
        [0.1, 0.7, 0.6],
    ]
)


def _links(matrix: np.ndarray) -> set[tuple[int, int]]:
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(matrix), strict=True)}


def test_mutual_argmax_keeps_the_pairs_that_choose_each_other():
    # (0, 0) and (2, 1) are mutual; row 1's best, column 0, prefers row 0; column 2's best,
    # row 2, prefers column 1.
    assert _links(mutual_argmax(SIM)) == {(0, 0), (2, 1)}


def test_itermax_aligns_the_words_argmax_left_over():
    """Round 2 on (SIM + 1) / 2, weighted 1 where both words are unaligned (row 1, column
    2), 0.9 where one is, 0 where neither: row 0 [0, 0, .585], row 1 [.81, .54, .55], row 2
    [0, 0, .72]. Row 1 and column 0 choose each other (.81), and row 2 and column 2 (.72);
    row 0's .585 loses column 2 to row 2."""
    assert _links(itermax(SIM)) == {(0, 0), (2, 1), (1, 0), (2, 2)}
    # One round is argmax; a side of two subwords keeps argmax's links (SimAlign's code).
    assert _links(itermax(SIM, rounds=1)) == _links(mutual_argmax(SIM))
    assert _links(itermax(SIM[:2])) == _links(mutual_argmax(SIM[:2]))


def test_match_is_the_maximum_weight_assignment():
    """Of the six one-to-one assignments, (0, 2) (1, 0) (2, 1) weighs most: 0.3 + 0.8 + 0.7
    = 1.8 against 1.7 for the diagonal and for (0, 0) (1, 2) (2, 1). A shift of every
    similarity (cosines moved to [0, 1]) changes nothing; a wider side keeps one unlinked."""
    assert _links(max_weight_match(SIM)) == {(0, 2), (1, 0), (2, 1)}
    assert _links(max_weight_match((SIM + 1) / 2)) == {(0, 2), (1, 0), (2, 1)}
    wide = np.hstack([SIM, np.full((3, 1), 0.5)])
    assert _links(max_weight_match(wide)) == {(0, 0), (1, 3), (2, 1)}  # 0.9 + 0.5 + 0.7


def test_each_subword_goes_to_the_word_it_overlaps_most():
    # "I didn't go ." with spaCy's words I | did | n't | go | . and pieces
    # <s> ▁I ▁didn ' t ▁ go . </s>, their spans in characters (a piece's leading space
    # included, as tokenizers with a Metaspace pre-tokenizer report it).
    text = "I didn't go ."
    words = [(0, 1), (2, 5), (5, 8), (9, 11), (12, 13)]
    assert [text[a:b] for a, b in words] == ["I", "did", "n't", "go", "."]
    pieces = [(0, 0), (0, 1), (1, 6), (6, 7), (7, 8), (8, 9), (9, 11), (12, 13), (0, 0)]
    # "▁didn" covers 3 characters of "did" and 1 of "n't"; "▁" alone covers a space.
    assert piece_words(pieces, words).tolist() == [-1, 0, 1, 2, 2, -1, 3, 4, -1]
    # A tie (one character of each word) goes to the first.
    assert piece_words([(4, 6)], words).tolist() == [1]
    assert piece_words([(0, 1)], []).tolist() == [-1]


def test_subword_links_lift_to_word_links_with_the_best_cosine():
    """English pieces of words 0, 1, 1; foreign pieces of words 0, 0, 1. Links (0, 1),
    (1, 2), (2, 2): words (0, 0) once, (1, 1) twice, scored by the higher cosine."""
    links = np.zeros((3, 3), dtype=bool)
    links[0, 1] = links[1, 2] = links[2, 2] = True
    cos = np.array([[0.1, 0.5, 0.2], [0.3, 0.4, 0.7], [0.2, 0.1, 0.9]])
    lifted = word_links(links, cos, np.array([0, 1, 1]), np.array([0, 0, 1]))
    assert lifted == {(0, 0): 0.5, (1, 1): 0.9}


def test_bad_settings():
    with pytest.raises(ValueError, match="unknown method 'mwmf'"):
        SimAlignConfig(method="mwmf")
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        SimAlignConfig(batch_size=0)


# -- the aligner on a tiny seeded model ---------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer seeded XLM-R and a word-level tokenizer over the cat, die katze."""
    return save_tiny_model(tmp_path_factory.mktemp("simalign") / "model")


def _pair(en: str, xx: str) -> SentencePair:
    return SentencePair(en, xx, en.split(), xx.split())


# The same sentence on both sides gives the same vectors: each subword is its own most
# similar one (cosine 1), and every word links to itself. Lengths differ, so batches pad.
SAME = ["the cat", "cat", "the cat the cat die katze", "die katze"]


@pytest.mark.parametrize("method", ["argmax", "itermax", "match"])
def test_a_sentence_aligns_with_itself_in_padded_batches(tiny_model, method):
    cfg = SimAlignConfig(layer=1, method=method, batch_size=3, device="cpu")
    aligned = SimAligner.load(tiny_model, cfg).align([_pair(text, text) for text in SAME])
    for text, result in zip(SAME, aligned, strict=True):
        n = len(text.split())
        assert result.status is None
        assert set(result.links) == {(i, i) for i in range(n)}, text
        assert all(score == pytest.approx(1.0, abs=1e-5) for score in result.links.values())


def test_load_builds_only_the_layers_it_reads(tiny_model):
    """Layer 0 reads the embeddings: the model built for it has no layer, and its links
    are those of the whole model's hidden state 0."""
    from transformers import AutoModel, AutoTokenizer

    cfg = SimAlignConfig(layer=0, device="cpu")
    loaded = SimAligner.load(tiny_model, cfg)
    assert loaded.model.config.num_hidden_layers == 0
    whole = SimAligner(
        AutoModel.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model), cfg
    )
    pairs = [_pair("the cat", "die katze"), _pair("the cat katze", "die the")]
    for mine, theirs in zip(loaded.align(pairs), whole.align(pairs), strict=True):
        assert mine.links == pytest.approx(theirs.links)
        assert mine.links
    with pytest.raises(SimAlignError) as info:
        SimAligner.load(tiny_model, SimAlignConfig(layer=2))
    assert str(info.value) == (
        "config key `align.simalign.layer` is 2, but the model's hidden states go from 0 (the "
        "embeddings) to 1 (its last layer): set it to at most 1"
    )


def _write_shard_inputs(directory: Path, pairs: list[SentencePair]) -> tuple[Path, Path]:
    """A language's train.parquet and its words, as the corpus and tokenize stages write."""
    ids = list(range(100, 100 + len(pairs)))
    corpus, words = directory / "train.parquet", directory / "words.parquet"
    pq.write_table(
        pa.table({"id": ids, "en": [p.en for p in pairs], "xx": [p.xx for p in pairs]}), corpus
    )
    pq.write_table(
        pa.table(
            {
                "id": ids,
                "en_words": [p.en_words for p in pairs],
                "xx_words": [p.xx_words for p in pairs],
            }
        ),
        words,
    )
    return corpus, words


def test_an_alignment_job_writes_simaligns_links_to_its_shard(tiny_model, tmp_path):
    """`align-shard --method simalign` as the rule runs it: every pair of the shard written,
    links with their cosine as score, the skipped pairs counted by status."""
    pairs = [
        _pair("the cat", "the cat"),
        SentencePair("the cat", "die katze", [], ["die", "katze"]),  # an empty side
        SentencePair("the cat", "die katze", ["the", "dog"], ["die", "katze"]),  # not in text
        _pair("the cat the cat the", "die katze"),  # 5 subwords: over max_subwords
        _pair("die katze", "die katze"),
    ]
    corpus, words = _write_shard_inputs(tmp_path, pairs)
    settings = {"layer": 1, "method": "argmax", "batch_size": 2, "max_subwords": 4}
    stats = job.run(
        "simalign",
        {**settings, "device": "cpu"},
        corpus,
        words,
        0,
        10,
        len(pairs),
        tmp_path / "shard-0000.arrow",
        model_dir=tiny_model,
    )
    assert stats["statuses"] == {"aligned": 2, "empty": 1, "too_long": 1, "word_not_in_text": 1}
    assert stats["links"] == 4
    shard = read_shard(tmp_path / "shard-0000.arrow").to_pylist()
    assert [row["id"] for row in shard] == [100, 101, 102, 103, 104]
    links = [[(link["en"], link["xx"]) for link in row["links"]] for row in shard]
    assert links == [[(0, 0), (1, 1)], [], [], [], [(0, 0), (1, 1)]]
    assert shard[0]["links"][0]["score"] == pytest.approx(1.0, abs=1e-5)


def test_more_subwords_than_the_model_takes_is_refused(tiny_model):
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.model_max_length = 40
    with pytest.raises(SimAlignError) as info:
        SimAligner(AutoModel.from_pretrained(tiny_model), tokenizer, SimAlignConfig(layer=1))
    assert str(info.value) == (
        "config key `align.simalign.max_subwords` is 256, but the model takes 40 tokens a "
        "sentence, 0 of them special: set it to at most 40"
    )


# -- the real multilingual-e5-small against the gold links ---------------------------------

GOLD = SHARED / "gold-align" / "deen.tsv"
TATOEBA = SHARED / "tatoeba" / "v1"


@pytest.fixture(scope="module")
def me5(me5_model: Path) -> Path:
    """multilingual-e5-small converted once for the session (`me5_model`)."""
    return me5_model


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.skipif(not GOLD.is_file(), reason=f"the gold alignments are not at {GOLD}")
def test_me5_at_layer_8_finds_the_gold_links(me5):
    """The first ten de-en gold pairs on their Tatoeba text: measured AER 0.037 (81 links,
    all of them gold links, 74 of the 80 Sure ones). A plain sentence links word for word."""
    gold = read_gold(GOLD)[:10]
    en = (TATOEBA / "tatoeba.deu-eng.eng").read_text().splitlines()
    de = (TATOEBA / "tatoeba.deu-eng.deu").read_text().splitlines()
    pairs = [SentencePair(en[g.line], de[g.line], g.en_tokens, g.xx_tokens) for g in gold]
    aligner = SimAligner.load(me5, SimAlignConfig(layer=8, device="cpu"))
    assert aer([a.links for a in aligner.align(pairs)], gold)["aer"] < 0.05
    (plain,) = aligner.align([_pair("I love you .", "Ich liebe dich .")])
    assert set(plain.links) == {(0, 0), (1, 1), (2, 2), (3, 3)}
