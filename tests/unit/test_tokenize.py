import logging

import pyarrow.parquet as pq
from transformers import AutoTokenizer

from xlsent.tokenize import subwords, word_tokenizer, words


def test_spacy_blank_tokenizer_splits_clitics_and_punctuation():
    tokenize = word_tokenizer("en")
    assert next(iter(tokenize(["It's not here, is it?"]))) == [
        "It",
        "'s",
        "not",
        "here",
        ",",
        "is",
        "it",
        "?",
    ]
    french = word_tokenizer("fr")
    assert next(iter(french(["J'ai quelqu'un."]))) == ["J'", "ai", "quelqu'", "un", "."]


def test_language_without_spacy_support_falls_back_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        kazakh = word_tokenizer("kk")
    assert "kk" in caplog.text and "multi-language" in caplog.text
    assert next(iter(kazakh(["Қазақстан Республикасы, 1991."]))) == [
        "Қазақстан",
        "Республикасы",
        ",",
        "1991",
        ".",
    ]


def test_unspaced_script_fallback_splits_characters(caplog):
    # Thai needs PyThaiNLP in spaCy; without it, characters (as spaCy does for Chinese).
    with caplog.at_level(logging.WARNING):
        thai = word_tokenizer("th")
    tokens = next(iter(thai(["ภาษาไทย"])))
    assert "".join(tokens) == "ภาษาไทย"
    assert len(tokens) == len("ภาษาไทย")


def test_words_writes_one_row_per_pair(small_corpus, tmp_path):
    out = tmp_path / "words.parquet"
    stats = words(small_corpus["de"]["train"], "de", out)
    table = pq.read_table(out)
    corpus = pq.read_table(small_corpus["de"]["train"])
    assert table.column_names == ["id", "en_words", "xx_words"]
    assert table.column("id").to_pylist() == corpus.column("id").to_pylist()
    assert stats["pairs"] == corpus.num_rows
    row = table.slice(0, 1).to_pylist()[0]
    source = corpus.slice(0, 1).to_pylist()[0]
    assert "".join(row["xx_words"]) == source["xx"].replace(" ", "")


def test_scratch_tokenizer_has_the_xlmr_layout(small_tokenizer):
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    assert (tokenizer.cls_token_id, tokenizer.pad_token_id, tokenizer.sep_token_id) == (0, 1, 2)
    assert tokenizer.unk_token_id == 3
    assert tokenizer.mask_token_id == len(tokenizer) - 1
    ids = tokenizer("Deutschland")["input_ids"]
    assert ids[0] == 0 and ids[-1] == 2 and 3 not in ids
    # Every SentencePiece piece survives the conversion, the most frequent ones included.
    assert len(tokenizer) == 1000
    assert {"▁", "a", "e"} <= set(tokenizer.get_vocab())


def test_subwords_are_the_encoders_ids_without_special_tokens(
    small_subwords, small_tokenizer, small_corpus
):
    """The subword stage reads tokenizer.json with `tokenizers` alone; training and
    evaluation encode with transformers' tokenizer: every id of every pair must agree."""
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    for lang, splits in small_subwords.items():
        for split, path in splits.items():
            ids = pq.read_table(path)
            text = pq.read_table(small_corpus[lang][split])
            assert ids.column("id").to_pylist() == text.column("id").to_pylist()
            for side in ("en", "xx"):
                expected = tokenizer(text.column(side).to_pylist(), add_special_tokens=False)
                assert ids.column(f"{side}_ids").to_pylist() == expected["input_ids"]


def test_prefixed_subwords_start_with_the_prefixs_tokens(
    small_subwords, small_tokenizer, small_corpus, tmp_path
):
    """The model's prefix goes before every sentence, the en prefix on the English side and
    the xx prefix on the other: the ids are those of `prefix + sentence`, as every evaluation
    tokenizes it, which are the prefix's tokens and then the sentence's own."""
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    out = tmp_path / "prefixed.parquet"
    subwords(small_corpus["kk"]["dev"], small_tokenizer, out, {"en": "query: ", "xx": "passage: "})
    prefixed, plain = pq.read_table(out), pq.read_table(small_subwords["kk"]["dev"])
    text = pq.read_table(small_corpus["kk"]["dev"])
    for side, before in (("en", "query: "), ("xx", "passage: ")):
        head = tokenizer(before, add_special_tokens=False)["input_ids"]
        assert len(head) > 1
        rows = prefixed.column(f"{side}_ids").to_pylist()
        assert rows == [head + row for row in plain.column(f"{side}_ids").to_pylist()]
        texts = [before + sentence for sentence in text.column(side).to_pylist()]
        assert rows == tokenizer(texts, add_special_tokens=False)["input_ids"]
