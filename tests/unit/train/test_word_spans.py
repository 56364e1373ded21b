"""Word → subword spans (`xlsent.train.word_spans`) and their loading for the word-level
objectives."""

import json

import numpy as np
import pyarrow.parquet as pq
from transformers import AutoTokenizer

from xlsent.align.shards import iter_shards
from xlsent.tokenize import subwords, word_offsets
from xlsent.train.data import load_pairs, load_word_aligned
from xlsent.train.word_spans import subword_spans, text_spans, word_spans


def test_a_subword_belongs_to_the_word_holding_its_first_character():
    text = "Don't stop."
    words = ["Do", "n't", "stop", "."]
    chars = np.array(word_offsets(text, words))
    # Pieces as SentencePiece might cut them: ▁Don | ' | t | ▁ | stop | .
    offsets = [(0, 3), (3, 4), (4, 5), (6, 7), (6, 10), (10, 11)]
    spans = subword_spans(chars, offsets)
    # "▁Don" starts in "Do"; "n't" keeps the pieces that start in it; the lone "▁" goes
    # with "stop", whose first character it carries.
    assert spans.tolist() == [[0, 1], [1, 3], [3, 5], [5, 6]]


def test_a_word_without_a_piece_of_its_own_gets_an_empty_span():
    chars = np.array(word_offsets("cannot", ["can", "not"]))
    assert subword_spans(chars, [(0, 6)]).tolist() == [[0, 1], [0, 0]]


def test_a_prefix_holds_subwords_of_no_word_even_where_it_holds_a_words_text():
    # "query: " + "query me", cut as ▁query | : | ▁query | ▁me.
    offsets = [(0, 5), (5, 6), (7, 12), (13, 15)]
    assert text_spans("query me", ["query", "me"], offsets, "query: ").tolist() == [[2, 3], [3, 4]]
    assert text_spans("query me", ["querying"], offsets, "query: ") is None


def test_a_prefix_moves_every_span_past_its_subwords(
    small_corpus, small_tokenizer, small_word_spans, tmp_path
):
    """Word spans of a prefixed corpus: the ids are the prefixed subwords, each word keeps its
    subwords behind the prefix's, and no word or link is lost to the prefix."""
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    prefix = {"en": "query: ", "xx": "passage: "}
    corpus, manifest = small_corpus["kk"]["train"], small_word_spans["kk"].parent / "_SUCCESS"
    stats = word_spans(corpus, iter_shards(manifest), small_tokenizer, tmp_path / "p", prefix)
    plain_stats = word_spans(corpus, iter_shards(manifest), small_tokenizer, tmp_path / "plain")
    assert stats == plain_stats
    subwords(corpus, small_tokenizer, tmp_path / "subwords", prefix)
    reference = pq.read_table(tmp_path / "subwords")
    prefixed = pq.read_table(tmp_path / "p").to_pylist()
    plain = pq.read_table(small_word_spans["kk"]).to_pylist()
    for side in ("en", "xx"):
        assert [row[f"{side}_ids"] for row in prefixed] == reference[f"{side}_ids"].to_pylist()
        head = len(tokenizer(prefix[side], add_special_tokens=False)["input_ids"])
        for new, old in zip(prefixed, plain, strict=True):
            spans = zip(
                new[f"{side}_starts"],
                new[f"{side}_ends"],
                old[f"{side}_starts"],
                old[f"{side}_ends"],
                strict=True,
            )
            for start, end, old_start, old_end in spans:
                if old_end > old_start:
                    assert (start, end) == (old_start + head, old_end + head)
                else:
                    assert end <= start
    assert [row["links"] for row in prefixed] == [row["links"] for row in plain]


def test_spans_cover_the_words_and_ids_match_the_subword_stage(
    small_corpus, small_tokenizer, small_word_spans, tmp_path
):
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    table = pq.read_table(small_word_spans["kk"])
    reference = tmp_path / "subwords.parquet"
    subwords(small_corpus["kk"]["train"], small_tokenizer, reference)
    expected = pq.read_table(reference)
    assert table.column("id").to_pylist() == expected.column("id").to_pylist()
    assert table.column("xx_ids").to_pylist() == expected.column("xx_ids").to_pylist()
    assert table.column("en_ids").to_pylist() == expected.column("en_ids").to_pylist()

    words = pq.read_table(small_word_spans["kk"].parent / "words.parquet")
    found, total, links = 0, 0, 0
    for row, tokens in zip(table.to_pylist(), words.to_pylist(), strict=True):
        for side in ("en", "xx"):
            for word, start, end in zip(
                tokens[f"{side}_words"], row[f"{side}_starts"], row[f"{side}_ends"], strict=True
            ):
                total += 1
                text = tokenizer.decode(row[f"{side}_ids"][start:end]).strip()
                found += text == word
        for link in row["links"]:
            assert row["en_ends"][link["en"]] > row["en_starts"][link["en"]]
            assert row["xx_ends"][link["xx"]] > row["xx_starts"][link["xx"]]
            links += 1
    assert found > 0.95 * total  # the rest: <unk> pieces, pieces shared by two words
    stats = json.loads((small_word_spans["kk"].parent / "_SUCCESS").read_text())["totals"]
    assert 0 < links <= stats["links"]


def test_truncation_drops_the_words_it_cuts_and_their_links(small_word_spans):
    _, full_words, _ = load_word_aligned(small_word_spans, max_length=512)
    short, words, stats = load_word_aligned(small_word_spans, max_length=6)
    limit = 4  # 6 minus CLS and </s>
    assert (short.xx.lengths <= limit).all()
    assert (words.xx_ends.values <= limit).all() and (words.en_ends.values <= limit).all()
    kept = sum(s["links"] for s in stats.values())
    dropped = sum(s["links_truncated"] for s in stats.values())
    assert kept == len(words.links.values) and dropped > 0
    assert kept + dropped == len(full_words.links.values)
    for i in range(len(short)):
        for x, y in words.links.row(i):
            assert words.xx_ends.row(i)[x] > words.xx_starts.row(i)[x]
            assert words.en_ends.row(i)[y] > words.en_starts.row(i)[y]
    # The pairs are those of the plain subword loader.
    plain = load_pairs(small_word_spans, max_length=6)
    assert np.array_equal(plain.xx.values, short.xx.values)
    assert np.array_equal(plain.lang, short.lang)
