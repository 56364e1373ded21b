"""Sentence retrieval among held-out pairs (Bi-Sent2vec §4.3, `xlsent.evaluate.retrieval`): P@1
both ways on a worked example, the held-out pairs it reads, the word-vector runs' tf-idf-weighted
vectors against hand-computed ones (through the command the workflow runs), and the config
keys (the table: tests/unit/tables/test_retrieval.py)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support import ROOT, save_tiny_model

from xlsent.bisent2vec.model import pair_encoder
from xlsent.config import ConfigError, retrieval_groups, retrieval_languages, validate
from xlsent.evaluate import retrieval
from xlsent.evaluate.results import COLUMNS
from xlsent.tokenize import WORDS_SCHEMA

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def unit(degrees: float, length: float = 1.0) -> list[float]:
    return [length * math.cos(math.radians(degrees)), length * math.sin(math.radians(degrees))]


# -- P@1 both ways ------------------------------------------------------------------------------
def test_p_at_1_both_directions_worked_example():
    # Three pairs (a, A), (b, B), (c, C) in the plane, at these angles (cosine: the lengths
    # do not count): foreign a 0°, b 90°, c 180°; English A 10°, B 130°, C 95°.
    # xx→en: a's nearest English is A (10° away) ✓; b's is C (5°, B is 40°) ✗; c's is B
    # (50°, C is 85°) ✗: 1 of 3. en→xx: A's nearest is a (10°) ✓; B's is b (40°, c is
    # 50°) ✓; C's is b (5°) ✗: 2 of 3.
    vectors = {
        "a": unit(0),
        "b": unit(90, 3.0),
        "c": unit(180),
        "A": unit(10, 2.0),
        "B": unit(130),
        "C": unit(95, 0.5),
    }
    seen = []

    def encode(texts: list[str], lang: str) -> np.ndarray:
        seen.append((lang, texts))
        return np.array([vectors[text] for text in texts], dtype=np.float32)

    rows = retrieval.evaluate({"kk": (["a", "b", "c"], ["A", "B", "C"])}, lambda lang: encode)
    assert [(r["direction"], r["value"], r["n"]) for r in rows] == [
        ("xx2en", pytest.approx(100 / 3), 3),
        ("en2xx", pytest.approx(200 / 3), 3),
        ("mean", pytest.approx(50.0), 3),
    ]
    assert {(r["lang"], r["metric"]) for r in rows} == {("kk", "accuracy")}
    assert seen == [("kk", ["a", "b", "c"]), ("en", ["A", "B", "C"])]  # each side's language


def test_a_language_without_pairs_is_left_out_and_none_is_an_error():
    def encoder_of(lang: str):
        assert lang == "de"  # the empty language's model is never loaded
        return lambda texts, _: np.eye(2, dtype=np.float32)[: len(texts)]

    rows = retrieval.evaluate({"kk": ([], []), "de": (["x", "y"], ["X", "Y"])}, encoder_of)
    assert {r["lang"] for r in rows} == {"de"} and rows[-1]["value"] == 100.0
    with pytest.raises(retrieval.RetrievalError, match=r"corpus\.mining_pairs"):
        retrieval.evaluate({"kk": ([], [])}, encoder_of)


# -- the held-out pairs -------------------------------------------------------------------------
def test_heldout_pairs_from_the_corpus_and_from_tatoeba(tmp_path):
    # The sample stage's mining split: a repeated English sentence, a repeated foreign one
    # (ignoring case and spaces) and a pair with one text on both sides have no single gold
    # line: dropped, the first of each repeat kept.
    corpus = tmp_path / "mining.parquet"
    pl.DataFrame(
        {
            "en": ["Open file", "Save", "open  FILE", "OK", "Close", "Quit"],
            "xx": ["Datei öffnen", "Speichern", "Öffnen", "OK", "speichern", "Beenden"],
        }
    ).write_parquet(corpus)
    xx, en = retrieval.heldout_pairs("corpus", corpus, "de")
    assert (xx, en) == (["Datei öffnen", "Speichern", "Beenden"], ["Open file", "Save", "Quit"])
    (tmp_path / "tatoeba.deu-eng.deu").write_text("Hallo\nDanke\n", encoding="utf-8")
    (tmp_path / "tatoeba.deu-eng.eng").write_text("Hello\nThanks\n", encoding="utf-8")
    assert retrieval.heldout_pairs("tatoeba", tmp_path, "de") == (
        ["Hallo", "Danke"],
        ["Hello", "Thanks"],
    )


# -- word-vector runs: the paper's tf-idf-weighted average --------------------------------------
def write_model(directory: Path) -> Path:
    """An en-de word-vector model directory as bisent2vec-train writes it for fastText: the
    .vec files of both sides and stats.json naming them. the/die (0, 0, 1), open/öffnen
    (0, 1, 0), file/datei (1, 0, 0)."""
    directory.mkdir()
    words = {"en": ("the", "open", "file"), "de": ("die", "öffnen", "datei")}
    rows = ("0 0 1", "0 1 0", "1 0 0")
    for lang, names in words.items():
        lines = ["3 3", *(f"{w} {r}" for w, r in zip(names, rows, strict=True))]
        (directory / f"vectors.{lang}.vec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (directory / "stats.json").write_text(json.dumps({"langs": ["en", "de"]}))
    return directory


def write_idf_words(path: Path) -> Path:
    """100 training pairs: the/die in all of them, open/öffnen and file/datei in one each.
    idf = max(1, log10(N / df)): the 1 (log10(1) = 0), open and file log10(100) = 2."""
    en = [["the"]] * 98 + [["the", "open"], ["the", "file"]]
    de = [["die"]] * 98 + [["die", "öffnen"], ["die", "datei"]]
    table = pa.table({"id": list(range(100)), "en_words": en, "xx_words": de}, WORDS_SCHEMA)
    pq.write_table(table, path)
    return path


def test_the_word_vector_encoder_is_the_tfidf_weighted_average(tmp_path):
    model = write_model(tmp_path / "model")
    words = write_idf_words(tmp_path / "words.parquet")
    # "The file open open": unique words the (idf 1), file (2), open (2); Sabet et al.
    # §4.3 through MUSE's bow_idf: (1 (0, 0, 1) + 2 (1, 0, 0) + 2 (0, 1, 0)) / (1 + 2 + 2).
    weighted = pair_encoder(model, "de", words)(["The file open open"], "en")
    assert weighted[0] == pytest.approx([2 / 5, 2 / 5, 1 / 5])
    # "die die die öffnen": die (1), öffnen (2): (1 (0, 0, 1) + 2 (0, 1, 0)) / 3.
    assert pair_encoder(model, "de", words)(["die die die öffnen"], "de")[0] == pytest.approx(
        [0, 2 / 3, 1 / 3]
    )
    # Without the words: the plain average of every occurrence, (the + file + 2 open) / 4.
    plain = pair_encoder(model, "de")(["The file open open"], "en")
    assert plain[0] == pytest.approx([1 / 4, 2 / 4, 1 / 4])


def test_the_word_vector_command_retrieves_by_tfidf(tmp_path):
    # Held-out pairs where the weighting decides: "die die die öffnen" is, averaged plainly,
    # (0, 1/4, 3/4), nearer "the" (0, 0, 1; cosine 0.949) than "the open" (0, 1/2, 1/2;
    # 0.894): one of three foreign sentences retrieves the wrong English one. By tf-idf
    # (unique words, idf 1 and 2) it is (0, 2/3, 1/3), the vector of "the open": all right,
    # both ways.
    model = write_model(tmp_path / "model")
    words = write_idf_words(tmp_path / "words.parquet")
    mining = tmp_path / "mining.parquet"
    pl.DataFrame(
        {
            "en": ["the open", "the file", "the"],
            "xx": ["die die die öffnen", "die datei", "die"],
        }
    ).write_parquet(mining)
    heldout = retrieval.heldout_pairs("corpus", mining, "de")
    plain = retrieval.evaluate({"de": heldout}, lambda lang: pair_encoder(model, lang))
    assert [r["value"] for r in plain] == pytest.approx([200 / 3, 100.0, 250 / 3])

    out = tmp_path / "retrieval.parquet"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "xlsent.cli", "bisent2vec-eval-retrieval"),
            *("--models", f"de={model}", "--idf", f"de={words}"),
            *("--from", "corpus", "--pairs", f"de={mining}"),
            *("--run", "b2v", "--seed", "3", "--out", str(out)),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    rows = pl.read_parquet(out)
    assert rows.columns == list(COLUMNS)
    assert rows.select("task", "run", "seed", "lang", "direction", "value", "n").rows() == [
        ("retrieval", "b2v", 3, "de", "xx2en", 100.0, 3),
        ("retrieval", "b2v", 3, "de", "en2xx", 100.0, 3),
        ("retrieval", "b2v", 3, "de", "mean", 100.0, 3),
    ]
    assert "de: 3 held-out pairs" in proc.stderr


# -- encoder runs: their own sentence vectors ----------------------------------------------------
def test_the_encoder_command_retrieves_with_the_encoders_vectors(tmp_path):
    # A tiny saved encoder, three held-out pairs in the Tatoeba layout, encoded once (encode):
    # eval-retrieval's rows from those vectors are those of the Tatoeba evaluation of the
    # encoder itself on the same pairs.
    import torch

    from xlsent.cli import main
    from xlsent.evaluate import tatoeba
    from xlsent.models.load import load_encoder

    model = save_tiny_model(tmp_path / "model")
    (tmp_path / "tatoeba.deu-eng.deu").write_text("die katze\ndie\nkatze\n", encoding="utf-8")
    (tmp_path / "tatoeba.deu-eng.eng").write_text("the cat\nthe\ncat\n", encoding="utf-8")
    out, vectors = tmp_path / "retrieval.parquet", tmp_path / "tatoeba.arrow"
    threads = torch.get_num_threads()  # the command sets the process's (its job's) threads
    try:
        main(
            [
                *("encode", "--source", "tatoeba", "--dir", str(tmp_path), "--langs", "de"),
                *("--tatoeba-text", "laser"),
                *("--model", str(model), "--threads", "1", "--out", str(vectors)),
                "--encoding",
                json.dumps({"max_length": 16, "batch_size": 2, "device": "cpu"}),
            ]
        )
    finally:
        torch.set_num_threads(threads)
    main(
        [
            *("eval-retrieval", "--from", "tatoeba", "--pairs", f"de={tmp_path}"),
            *("--tatoeba-text", "laser"),
            *("--vectors", str(vectors), "--run", "tr", "--seed", "42", "--out", str(out)),
        ]
    )
    rows = pl.read_parquet(out)
    expected = tatoeba.evaluate(load_encoder(model, 16, 2, "cpu"), tmp_path, ["de"])
    assert rows.select("lang", "direction", "value", "n").to_dicts() == [
        {k: row[k] for k in ("lang", "direction", "value", "n")} for row in expected
    ]
    assert set(rows["task"]) == {"retrieval"} and set(rows["n"]) == {3}


# -- the config ---------------------------------------------------------------------------------
def config(retrieval: dict, **corpus) -> dict:
    return validate(
        {
            "languages": ["de", "kk", "ka", "te", "jv"],
            "corpus": {"mining_pairs": 100, **corpus},
            "runs": {"b2v": {"method": "bisent2vec", "seeds": [0]}},
            "evaluate": {"retrieval": retrieval},
            "tables": {"groups": ["low4", "low8"]},
        },
        SCHEMA,
    )


def test_retrieval_languages_and_the_groups_they_hold_whole():
    assert retrieval_languages(config({})) == []  # the default: no retrieval table
    chosen = config({"languages": ["low4", "de"]})
    assert retrieval_languages(chosen) == ["kk", "te", "ka", "jv", "de"]
    assert retrieval_groups(chosen) == ["low4"]  # low8 holds languages not retrieved


@pytest.mark.parametrize(
    ("retrieval", "corpus", "message"),
    [
        ({"languages": ["de", "fr"]}, {}, r"`evaluate.retrieval.languages`: fr not in `languages`"),
        ({"languages": ["low9"]}, {}, r"`evaluate.retrieval.languages`: unknown language"),
        ({"languages": "de"}, {"mining_pairs": 0}, r"`corpus.mining_pairs` is 0"),
    ],
)
def test_retrieval_config_errors_name_the_key(retrieval, corpus, message):
    with pytest.raises(ConfigError, match=message):
        config(retrieval, **corpus)
    # The Tatoeba set needs no held-out corpus pairs.
    if corpus:
        config({**retrieval, "from": "tatoeba"}, **corpus)
