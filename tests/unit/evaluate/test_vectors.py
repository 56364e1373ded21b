"""A run's sentence vectors, encoded once per source (xlsent.evaluate.vectors, `xlsent encode`),
and the evaluations that read them: the same rows as the evaluations of the encoder itself."""

from __future__ import annotations

import gzip
import json

import numpy as np
import polars as pl
import pytest
from sklearn.feature_extraction.text import HashingVectorizer
from support import SHARED, save_tiny_model

from xlsent.cli import main
from xlsent.evaluate import bucc, encoding, mining_set, retrieval, tatoeba, vectors
from xlsent.evaluate.mining import MiningSettings
from xlsent.evaluate.mining_sizes import MiningSetSettings
from xlsent.evaluate.vectors import SentenceVectors, VectorsError
from xlsent.io import sha256_tree, write_parquet
from xlsent.models.load import TRAINING_RECORDS

TATOEBA = SHARED / "tatoeba" / "v1"
L10N = SHARED / "l10n"
HASHING = HashingVectorizer(analyzer="char_wb", ngram_range=(2, 4), n_features=512)


def ngrams(texts: list[str], lang: str) -> np.ndarray:
    """A deterministic encoder whose vector of a sentence depends on nothing else: character
    n-gram counts (names and cognates match across languages), the language folded in so
    that an English and a German text never share a vector."""
    counts = HASHING.transform(texts).toarray().astype(np.float32)
    counts[:, sum(map(ord, lang)) % 7] += 0.5
    return counts


def write_laser(directory, iso3: str, xx: list[str], en: list[str]) -> None:
    (directory / f"tatoeba.{iso3}-eng.{iso3}").write_text("\n".join(xx) + "\n", encoding="utf-8")
    (directory / f"tatoeba.{iso3}-eng.eng").write_text("\n".join(en) + "\n", encoding="utf-8")


def test_each_languages_sentences_are_kept_once_in_order_of_first_appearance():
    parts = [("de", ["a", "b", "a"]), ("en", ["x", "y"]), ("kk", ["a"]), ("en", ["y", "z"])]
    assert vectors.distinct_by_language(parts) == {
        "de": ["a", "b"],
        "en": ["x", "y", "z"],
        "kk": ["a"],
    }


def test_a_tatoeba_source_holds_every_language_once_and_english_once(tmp_path):
    write_laser(tmp_path, "deu", ["Hallo", "Danke", "Hallo"], ["Hello", "Thanks", "Hi"])
    write_laser(tmp_path, "kaz", ["Сәлем", "Рақмет"], ["Hello", "Thank you"])
    assert vectors.tatoeba_sentences(tmp_path, ["de", "kk"], "laser") == {
        "de": ["Hallo", "Danke"],
        "en": ["Hello", "Thanks", "Hi", "Thank you"],
        "kk": ["Сәлем", "Рақмет"],
    }


def test_a_mining_source_reads_the_held_out_splits(tmp_path):
    import pyarrow as pa

    path = tmp_path / "mining.parquet"
    table = pa.table({"id": [0, 1], "en": ["Yes", "No"], "xx": ["Ja", "Nein"], "source": ["a"] * 2})
    write_parquet(path, table)
    assert vectors.mining_sentences({"de": path}) == {"de": ["Ja", "Nein"], "en": ["Yes", "No"]}


def test_length_sorted_chunks_come_back_in_the_callers_order(monkeypatch):
    monkeypatch.setattr(encoding, "CHUNK", 2)  # three chunks of the five texts
    calls = []

    def lengths(texts, lang):
        calls.append(list(texts))
        return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)

    texts = ["ccc", "a", "eeeee", "bb", "dddd"]
    out = encoding.embed(lengths, texts, "de")
    assert out.tolist() == [[len(t), ord(t[0])] for t in texts]
    assert calls == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]


def test_vectors_round_trip_through_the_file_with_their_metadata(tmp_path):
    sentences = {"de": ["Hallo Welt", "Danke"], "en": ["Hello world", "Thanks"]}
    table = vectors.encode_sentences(ngrams, sentences)
    path = tmp_path / "v.arrow"
    vectors.write(path, table, {"source": "tatoeba", "encoding": {"max_length": 8}})
    stored = SentenceVectors.read(path)
    assert stored.metadata == {"source": "tatoeba", "encoding": {"max_length": 8}}
    texts = ["Danke", "Hallo Welt"]
    np.testing.assert_array_equal(stored(texts, "de"), ngrams(texts, "de"))
    np.testing.assert_array_equal(stored(["Thanks"], "en"), ngrams(["Thanks"], "en"))
    # The same sentences give the same bytes.
    again = tmp_path / "again.arrow"
    vectors.write(again, vectors.encode_sentences(ngrams, sentences), stored.metadata)
    assert again.read_bytes() == path.read_bytes()


def test_a_sentence_the_file_lacks_is_named_with_the_command_that_remakes_it(tmp_path):
    path = tmp_path / "results/vectors/tr/seed42/tatoeba.arrow"
    vectors.write(path, vectors.encode_sentences(ngrams, {"de": ["Hallo"]}), {})
    stored = SentenceVectors.read(path)
    with pytest.raises(VectorsError) as err:
        stored(["Hallo", "Tschüss"], "de")
    assert "holds no vector of the de sentence 'Tschüss'" in str(err.value)
    assert f"snakemake --forcerun {path}" in str(err.value)
    with pytest.raises(VectorsError, match="holds no vector of the en sentence 'Hallo'"):
        stored(["Hallo"], "en")  # a language's sentences are its own


def test_a_truncated_vector_file_is_named_with_the_command_that_remakes_it(tmp_path):
    path = tmp_path / "v.arrow"
    vectors.write(path, vectors.encode_sentences(ngrams, {"de": ["Hallo", "Danke"]}), {})
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(VectorsError) as err:
        SentenceVectors.read(path)
    assert f"cannot read the sentence vectors {path}" in str(err.value)
    assert f"snakemake --forcerun {path}" in str(err.value)


def test_stored_vectors_give_the_tatoeba_retrieval_and_mining_rows_of_the_encoder(tmp_path):
    """One vector file of the source serves all three evaluations, row for row the same as
    the evaluations of the encoder itself (whose vectors depend on no other sentence)."""
    write_laser(
        tmp_path,
        "deu",
        ["Das Haus ist klein.", "Guten Morgen", "Ich heiße Anna.", "Berlin ist groß.", "Danke"],
        ["The house is small.", "Good morning", "My name is Anna.", "Berlin is big.", "Thanks"],
    )
    path = tmp_path / "tatoeba.arrow"
    vectors.write(
        path,
        vectors.encode_sentences(ngrams, vectors.tatoeba_sentences(tmp_path, ["de"], "laser")),
        {},
    )
    stored = SentenceVectors.read(path)
    assert tatoeba.evaluate(stored, tmp_path, ["de"]) == tatoeba.evaluate(ngrams, tmp_path, ["de"])
    pairs = {"de": retrieval.heldout_pairs("tatoeba", tmp_path, "de")}
    assert retrieval.evaluate(pairs, lambda lang: stored) == retrieval.evaluate(
        pairs, lambda lang: ngrams
    )
    xx, en = tatoeba.read_pairs(tmp_path, "de")
    settings = MiningSetSettings(distractors=0.4, threshold_share=0.5, seed=0)
    splits, _ = mining_set.build(list(zip(en, xx, strict=True)), "de", settings)
    mining_set.write(splits, tmp_path / "mining")
    mined = [
        bucc.evaluate(encode, tmp_path / "mining", ["de"], "dev", "test", MiningSettings(k=2))
        for encode in (stored, ngrams)
    ]
    assert mined[0] == mined[1]


@pytest.mark.shared
@pytest.mark.skipif(not L10N.is_dir(), reason=f"the l10n corpus is not at {L10N}")
def test_a_bucc_source_holds_the_sentences_of_every_split(tmp_path):
    """Real en-de interface strings as a two-split mining set: the source holds each side's
    distinct sentences, and mining from the stored vectors is mining with the encoder."""
    with gzip.open(L10N / "l10n.de-en.de.gz", "rt") as f:
        de = f.read().splitlines()[:300]
    with gzip.open(L10N / "l10n.de-en.en.gz", "rt") as f:
        en = f.read().splitlines()[:300]
    settings = MiningSetSettings(distractors=0.5, threshold_share=0.5, seed=0)
    splits, _ = mining_set.build(list(zip(en, de, strict=True)), "de", settings)
    mining_set.write(splits, tmp_path)
    sentences = vectors.bucc_sentences(tmp_path, ["de"], ["dev", "test"])
    held = {split.split: split for split in splits.values()}
    assert sentences["de"] == list(dict.fromkeys(held["dev"].xx + held["test"].xx))
    assert sentences["en"] == list(dict.fromkeys(held["dev"].en + held["test"].en))
    stored = SentenceVectors(vectors.encode_sentences(ngrams, sentences))
    run = [
        bucc.evaluate(encode, tmp_path, ["de"], "dev", "test", MiningSettings())
        for encode in (stored, ngrams)
    ]
    assert run[0] == run[1]


def test_the_encode_command_records_the_model_it_read(tmp_path):
    import torch

    model = save_tiny_model(tmp_path / "model")
    write_laser(tmp_path, "deu", ["die katze", "die"], ["the cat", "the"])
    out = tmp_path / "tatoeba.arrow"
    threads = torch.get_num_threads()  # the command sets the process's (its job's) threads
    try:
        main(
            [
                *("encode", "--source", "tatoeba", "--dir", str(tmp_path), "--langs", "de"),
                *("--tatoeba-text", "laser"),
                *("--model", str(model), "--threads", "1", "--out", str(out)),
                *("--encoding", json.dumps({"max_length": 16, "batch_size": 2, "device": "cpu"})),
            ]
        )
    finally:
        torch.set_num_threads(threads)
    stored = SentenceVectors.read(out)
    # The digest of what the encoder reads: a training log, whose times differ between two
    # runs of the same training, is not part of it.
    (model / "train_log.jsonl").write_text('{"step": 1, "wall_seconds": 0.5}\n')
    assert sha256_tree(model) != sha256_tree(model, skip=TRAINING_RECORDS)
    assert stored.metadata == {
        "source": "tatoeba",
        "model": str(model),
        "model_sha256": sha256_tree(model, skip=TRAINING_RECORDS),
        "encoding": {"max_length": 16, "batch_size": 2, "device": "cpu"},
        # What encoded (the device resolved, the precision used); the model has no run.json.
        "encoded_on": {"device": "cpu", "precision": "fp32"},
        "trained_on": None,
    }
    assert sorted(stored.rows) == [
        ("de", "die"),
        ("de", "die katze"),
        ("en", "the"),
        ("en", "the cat"),
    ]
    out_rows = tmp_path / "tatoeba.parquet"
    main(
        [
            *("eval-tatoeba", "--vectors", str(out), "--dir", str(tmp_path), "--langs", "de"),
            *("--tatoeba-text", "laser"),
            *("--run", "tr", "--seed", "42", "--out", str(out_rows)),
        ]
    )
    assert pl.read_parquet(out_rows)["n"].to_list() == [2, 2, 2]


# Real pairs of tatoeba.deu-eng.* (lines 44, 57, 179, 213, 254, 259, 261, 263, 268, 269):
# ASCII quotes on one side or both, German's typographic ones.
QUOTED = [
    ('Das Passwort ist "Muiriel".', 'The password is "Muiriel".'),
    (
        'Es ist eine schwere Aufgabe, zwischen "richtig" und "falsch" zu unterscheiden, aber man '
        "muss es tun.",
        'It is a difficult task, choosing what is "right" or "wrong", but you have to do it.',
    ),
    (
        'Ich hätte nicht gedacht, dass ich eines Tages bei Wikipedia "Viagra" nachschauen würde.',
        'I wouldn\'t have thought I would someday look up "Viagra" in Wikipedia.',
    ),
    (
        '"Daran habe ich nie gedacht", sagte der alte Mann. "Was sollen wir tun?"',
        '"I have never thought about it", said the old man. "What should we do?"',
    ),
    (
        'Hör auf, mich als einen "normalen" Menschen anzusehen!',
        'Stop seeing me as a "normal" person!',
    ),
    (
        "„Wer rastet, der rostet“ ist ein Sprichwort.",
        '"A rolling stone gathers no moss" is a proverb.',
    ),
    ('"Wer ist es?" "Es ist deine Mutter."', '"Who is it?" "It\'s your mother."'),
    (
        "„Was ist los?“ fragte das kleine weiße Kaninchen.",
        '"What\'s the matter?" asked the little white rabbit.',
    ),
    ('"Vertraue mir", sagte er.', '"Trust me," he said.'),
    ('"Danach habe ich gesucht", erklärte er.', '"This is what I was looking for!" he exclaimed.'),
]


def test_every_job_reads_the_tatoeba_text_the_encode_job_stored(tmp_path):
    """`evaluate.tatoeba.text: dap` as the rules pass it: the encode job stores DAP's texts
    (no ASCII quotes), and the Tatoeba evaluation, the retrieval and the mining set built
    from the files read those very texts, so no lookup misses. Read otherwise, the lines are
    not in the file, which the lookup names."""
    import torch

    model = save_tiny_model(tmp_path / "model")
    data = tmp_path / "tatoeba"
    data.mkdir()
    write_laser(data, "deu", [xx for xx, _ in QUOTED], [en for _, en in QUOTED])
    out = tmp_path / "tatoeba.arrow"
    text = ("--tatoeba-text", "dap")
    threads = torch.get_num_threads()  # the command sets the process's (its job's) threads
    try:
        main(
            [
                *("encode", "--source", "tatoeba", "--dir", str(data), "--langs", "de", *text),
                *("--model", str(model), "--threads", "1", "--out", str(out)),
                *("--encoding", json.dumps({"max_length": 32, "batch_size": 4, "device": "cpu"})),
            ]
        )
    finally:
        torch.set_num_threads(threads)
    stored = SentenceVectors.read(out)
    assert ("de", "Wer ist es? Es ist deine Mutter.") in stored.rows
    assert ("de", "„Wer rastet, der rostet“ ist ein Sprichwort.") in stored.rows
    assert not [key for key in stored.rows if '"' in key[1]]
    run = ("--vectors", str(out), "--run", "tr", "--seed", "42")
    main(
        [
            "eval-tatoeba",
            "--dir",
            str(data),
            "--langs",
            "de",
            *text,
            *run,
            "--out",
            str(tmp_path / "t.parquet"),
        ]
    )
    pairs = ("--from", "tatoeba", "--pairs", f"de={data}", *text)
    main(["eval-retrieval", *pairs, *run, "--out", str(tmp_path / "r.parquet")])
    settings = {"distractors": 0.2, "threshold_share": 0.5, "seed": 0}
    mining = tmp_path / "mining"
    main(
        [
            *("mining-set", *pairs, "--settings", json.dumps(settings)),
            *("--out-dir", str(mining), "--stats", str(tmp_path / "mining.json")),
        ]
    )
    main(
        [
            *("eval-bucc", "--dir", str(mining), "--langs", "de", "--threshold-split", "dev"),
            *("--test-split", "test", "--pivot", "none", "--settings", json.dumps({"k": 2})),
            *run,
            *("--threads", "1", "--out", str(tmp_path / "b.parquet")),
        ]
    )
    for name, n in (("t", 10), ("r", 10)):
        assert pl.read_parquet(tmp_path / f"{name}.parquet")["n"].to_list() == [n] * 3
    assert pl.read_parquet(tmp_path / "b.parquet")["n"].to_list() == [4] * 12
    with pytest.raises(VectorsError, match="holds no vector of the de sentence"):
        tatoeba.evaluate(stored, data, ["de"], "laser")
