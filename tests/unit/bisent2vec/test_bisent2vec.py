"""Bi-Sent2vec: the C++ unit tests, training on real l10n pairs, determinism, and agreement of
the Python sentence vectors with the binary's.

The trainer is built once into build/bisent2vec (git-ignored; rebuilt only when its sources
change). Training runs are small (a few thousand pairs, a few seconds).
"""

from __future__ import annotations

import gzip
import itertools
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
from support import ROOT

from xlsent.bisent2vec import Bisent2vecError
from xlsent.bisent2vec import memory as bisent2vec_memory
from xlsent.bisent2vec.build import build, run_ctest
from xlsent.bisent2vec.data import side_text, train_token, write_pairs
from xlsent.bisent2vec.model import SentenceModel, ngram_hash, ngram_rows
from xlsent.bisent2vec.trainer import Bisent2vecSettings, train
from xlsent.config import bisent2vec_trainer_settings, load
from xlsent.evaluate.results import COLUMNS
from xlsent.io import read_json
from xlsent.search import p_at_1
from xlsent.tokenize import WORDS_SCHEMA, word_tokenizer

L10N = ROOT.parent / "shared" / "data" / "l10n"
BUILD = ROOT / "build" / "bisent2vec"
needs_l10n = pytest.mark.skipif(not L10N.is_dir(), reason=f"the l10n corpus is not at {L10N}")
TRAIN_PAIRS, HELDOUT_PAIRS = 5000, 500


@pytest.fixture(scope="module")
def binary() -> Path:
    return build(BUILD)


def words_table(en: list[list[str]], xx: list[list[str]]) -> pa.Table:
    return pa.table({"id": list(range(len(en))), "en_words": en, "xx_words": xx}, WORDS_SCHEMA)


@pytest.fixture(scope="module")
def l10n_de(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Real German-English l10n pairs, word-tokenized: training pairs file and held-out pairs."""
    if not L10N.is_dir():
        pytest.skip(f"the l10n corpus is not at {L10N}")
    with (
        gzip.open(L10N / "l10n.de-en.en.gz", "rt") as en,
        gzip.open(L10N / "l10n.de-en.de.gz", "rt") as de,
    ):
        texts = [
            (a.rstrip("\n"), b.rstrip("\n"))
            for a, b in itertools.islice(zip(en, de, strict=True), TRAIN_PAIRS + HELDOUT_PAIRS)
        ]
    en_words = list(word_tokenizer("en")([a for a, _ in texts]))
    de_words = list(word_tokenizer("de")([b for _, b in texts]))
    root = tmp_path_factory.mktemp("l10n")
    words = root / "de.words.parquet"
    pq.write_table(words_table(en_words[:TRAIN_PAIRS], de_words[:TRAIN_PAIRS]), words)
    pairs = root / "de.pairs.txt"
    write_pairs([words], pairs)
    return {
        "words": words,
        "pairs": pairs,
        "heldout_en": en_words[TRAIN_PAIRS:],
        "heldout_de": de_words[TRAIN_PAIRS:],
    }


@pytest.mark.slow  # builds the C++ trainer
def test_cpp_unit_tests(binary: Path) -> None:
    output = run_ctest(BUILD)
    assert "100% tests passed" in output


# -- the training input ---------------------------------------------------------------------------
def test_train_token() -> None:
    assert train_token("Datei") == "datei"
    assert train_token("Datei", lowercase=False) == "Datei"
    assert train_token("\xa0") == "\u2581"
    assert train_token("a\tb") == "a\u2581b"  # a tab would split the pair
    assert side_text(["Open", "", "a file", "."]) == "open a\u2581file ."


def test_write_pairs(tmp_path: Path) -> None:
    words = tmp_path / "words.parquet"
    pq.write_table(
        words_table([["Open", "File"], ["Save", "\xa0", "now"], []], [["Datei", "öffnen"], [], []]),
        words,
    )
    stats = write_pairs([words, words], tmp_path / "pairs.txt")
    lines = (tmp_path / "pairs.txt").read_text(encoding="utf-8").split("\n")
    assert lines[:3] == ["open file\tdatei öffnen", "save \u2581 now\t", "\t"]
    assert len(lines) == 7 and lines[-1] == ""  # both files, in order, newline-terminated
    assert stats == {
        "pairs": 6,
        "en_tokens": 10,
        "xx_tokens": 4,
        "empty_en": 2,
        "empty_xx": 4,
    }


def test_write_pairs_needs_words_columns(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"id": [1], "en": ["a"], "xx": ["b"]}), corpus)
    with pytest.raises(Bisent2vecError, match="lacks the columns"):
        write_pairs([corpus], tmp_path / "pairs.txt")
    assert not (tmp_path / "pairs.txt").exists()


# -- hashing and sentence vectors ------------------------------------------------------------------
def test_ngram_hash_matches_the_cpp_tests() -> None:
    # The same hand-computed values as csrc/bisent2vec/tests/unit_tests.cc.
    assert ngram_hash([3, 5]) == 348148118
    assert ngram_hash([2000000000, 2000000001, 7]) == 10572327464581256674
    rows = ngram_rows(np.array([3, 5, 9]), 3, 1000, 100)
    assert sorted(rows.tolist()) == [218, 887, 964]
    ids = np.array([2000000000, 2000000001, 7, 12])
    vectorised = sorted(ngram_rows(ids, 3, 2_000_000, 10).tolist())
    scalar = sorted(
        10 + ngram_hash(ids[i : i + n].tolist()) % 2_000_000
        for n in (2, 3)
        for i in range(len(ids) - n + 1)
    )
    assert vectorised == scalar


def test_a_jobs_memory_holds_both_matrices_and_the_process() -> None:
    """bisent2vec_train's mem_mb: (2 × words + buckets) × dim float32 rows plus 2000 MiB,
    times the attempt; the buckets only with word n-grams, 2M words when uncapped."""
    settings = {"max_vocab_size": 100_000, "bucket": 2_000_000, "word_ngrams": 2, "dim": 300}
    # (200K + 2M) rows × 300 × 4 bytes = 2517.7 MiB.
    assert bisent2vec_memory.job_mem_mb(settings, 1) == 4517
    assert bisent2vec_memory.job_mem_mb(settings, 2) == 2 * 4517
    unigrams = {**settings, "word_ngrams": 1}
    assert bisent2vec_memory.job_mem_mb(unigrams, 1) == 2000 + int(200_000 * 300 * 4 / 2**20)
    uncapped = {**unigrams, "max_vocab_size": None}
    assert bisent2vec_memory.job_mem_mb(uncapped, 1) == 2000 + int(4_000_000 * 1200 / 2**20)


def test_idf_is_the_papers() -> None:
    # MUSE's get_idf, which the paper's retrieval uses: idf = max(1, log10(N / df)), df over
    # each held-out sentence's unique words. 200 held-out sentences: "a" in 150 of them,
    # "b" in 2 (one holds it twice: still df 2), "c" in 1, "d" in none.
    # idf(a) = max(1, log10(200 / 150) = 0.1249) = 1; idf(b) = log10(200 / 2) = 2;
    # idf(c) = log10(200) = 2.30103; idf(d) = 0 (left out, as MUSE leaves it out).
    model = SentenceModel(
        ["en"], {"en": {"a": 0, "b": 1, "c": 2, "d": 3}}, np.eye(4, dtype=np.float32), 4
    )
    held = [["a"]] * 147 + [["A", "b", "b"], ["a", "b"], ["a", "c"]] + [["zzz"]] * 50
    assert len(held) == 200  # "A": lowercased like the training tokens
    idf = model.idf(held, "en")
    assert idf.tolist() == pytest.approx([1.0, 2.0, math.log10(200), 0.0])


def test_tfidf_weighted_average() -> None:
    # Rows a = (1, 0, 0), b = (0, 1, 0), d = (0, 0, 1); idf(a) = 1, idf(b) = 2, idf(d) = 0.
    model = SentenceModel(["en"], {"en": {"a": 0, "b": 1, "d": 2}}, np.eye(3, dtype=np.float32), 3)
    idf = np.array([1.0, 2.0, 0.0], dtype=np.float32)
    # [a, b, b, d, zzz]: the unique weighted words a and b (MUSE's bag is a set: b counts
    # once), d and the unknown zzz left out: (1 (1, 0, 0) + 2 (0, 1, 0)) / (1 + 2).
    vectors = model.sentence_vectors([["a", "b", "b", "d", "zzz"], ["d"], ["zzz"]], "en", idf)
    assert vectors[0] == pytest.approx([1 / 3, 2 / 3, 0.0])
    assert vectors[1].tolist() == vectors[2].tolist() == [0.0, 0.0, 0.0]  # nothing weighted
    # The plain average counts every known occurrence: (a + 2 b + d) / 4.
    plain = model.sentence_vectors([["a", "b", "b", "d"]], "en")
    assert plain[0] == pytest.approx([1 / 4, 2 / 4, 1 / 4])


def test_tfidf_average_reads_word_vectors_only() -> None:
    # A bigram model: rows 0-1 the words a, b; row 2 the placeholder; rows 3-5 three
    # buckets. The plain average takes the bigram (a, b) too, at row 3 + hash(0, 1) % 3 =
    # 3 + 1 % 3 = 4 (hash = 0 * 116049371 + 1); the tf-idf one, like MUSE on the .vec
    # words, does not.
    rows = np.zeros((6, 2), dtype=np.float32)
    rows[0], rows[1], rows[4] = (1, 0), (0, 1), (3, 3)
    model = SentenceModel(["en"], {"en": {"a": 0, "b": 1}}, rows, 2, word_ngrams=2, ngram_rows=3)
    assert model.features(["a", "b"], "en").tolist() == [0, 1, 4]
    plain = model.sentence_vectors([["a", "b"]], "en")
    assert plain[0] == pytest.approx([4 / 3, 4 / 3])  # ((1, 0) + (0, 1) + (3, 3)) / 3
    weighted = model.sentence_vectors([["a", "b"]], "en", np.array([1.0, 3.0], np.float32))
    assert weighted[0] == pytest.approx([1 / 4, 3 / 4])


# -- the paper's settings ------------------------------------------------------------------------
# The training command of the authors' repository (epfml/Bi-Sent2Vec, README): the bigram model.
REFERENCE_COMMAND = (
    "./fasttext bisent2vec -input en-fr_sentences.txt -output model-en-fr -dim 300 -lr 0.2 "
    "-neg 10 -bucket 2000000 -maxVocabSize 750000 -thread 30 -t 0.000005 -epoch 5 "
    "-minCount 8 -dropoutK 4 -loss ns -wordNgrams 2 -numCheckPoints 5"
)


def test_paper_config_trains_with_the_reference_command() -> None:
    config = load(ROOT / "config.yaml", ROOT / "workflow" / "schemas" / "config.schema.yaml")
    words = REFERENCE_COMMAND.split()[2:]
    reference = dict(zip(words[::2], words[1::2], strict=True))
    for run, ngrams in (("bisent2vec-bi", "2"), ("bisent2vec-uni", "1")):
        flags = Bisent2vecSettings.from_dict(bisent2vec_trainer_settings(config, run, 42)).flags()
        ours = dict(zip(flags[::2], flags[1::2], strict=True))
        assert ours["-wordNgrams"] == ngrams
        for flag in ("-dim", "-lr", "-neg", "-bucket", "-maxVocabSize", "-t", "-epoch"):
            assert float(ours[flag]) == float(reference[flag]), (run, flag)
        for flag in ("-minCount", "-dropoutK"):
            assert ours[flag] == reference[flag], (run, flag)
    assert config["bisent2vec"]["tfidf"]  # the paper's retrieval (§4.3)


# -- training --------------------------------------------------------------------------------------
# A few thousand pairs need more passes and a larger step than the reference defaults (which
# the paper ran on millions of pairs); lr 0.2 is the Bi-Sent2vec README's example.
SMALL = Bisent2vecSettings(dim=50, min_count=3, epoch=20, lr=0.2)


@needs_l10n
@pytest.mark.shared
@pytest.mark.slow  # builds the C++ trainer
def test_loss_goes_down_and_translations_come_close(binary, l10n_de, tmp_path) -> None:
    # One thread: the run is deterministic, so this check cannot pass or fail by chance.
    stats = train(binary, l10n_de["pairs"], tmp_path / "model", "de", SMALL, threads=1)
    losses = stats["loss_by_epoch"]
    assert len(losses) == 20
    quarters = [sum(losses[i : i + 5]) / 5 for i in range(0, 20, 5)]
    assert all(b < a for a, b in itertools.pairwise(quarters)), losses
    assert losses[-1] < 0.6 * losses[0], losses
    assert stats["updates"]["mono"] > 0 and stats["updates"]["cross"] > 0
    assert stats["peak_rss_mb"] > 0
    model = SentenceModel.load(tmp_path / "model")
    assert model.langs == ("en", "de")
    assert len(model.vocab["de"]) == stats["vocabulary"]["de"]
    # Held-out pairs (never trained on) find their translation far above chance (1 in 500).
    de = model.sentence_vectors(l10n_de["heldout_de"], "de")
    en = model.sentence_vectors(l10n_de["heldout_en"], "en")
    assert p_at_1(de, en) > 0.25


def _run(binary: Path, pairs: Path, out: Path, settings: Bisent2vecSettings) -> bytes:
    train(binary, pairs, out, "de", settings, threads=1)
    return (out / "model.bin").read_bytes()


@needs_l10n
@pytest.mark.shared
@pytest.mark.slow  # builds the C++ trainer
def test_single_thread_runs_are_bit_for_bit_reproducible(binary, l10n_de, tmp_path) -> None:
    settings = Bisent2vecSettings(dim=20, min_count=3, epoch=2, word_ngrams=2, bucket=10007, seed=3)
    first = _run(binary, l10n_de["pairs"], tmp_path / "a", settings)
    second = _run(binary, l10n_de["pairs"], tmp_path / "b", settings)
    assert first == second
    for name in ("vectors.en.vec", "vectors.de.vec", "ngrams.bin"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    other = Bisent2vecSettings(dim=20, min_count=3, epoch=2, word_ngrams=2, bucket=10007, seed=4)
    assert _run(binary, l10n_de["pairs"], tmp_path / "c", other) != first


@needs_l10n
@pytest.mark.shared
@pytest.mark.slow  # builds the C++ trainer
def test_python_sentence_vectors_match_the_binary(binary, l10n_de, tmp_path) -> None:
    settings = Bisent2vecSettings(dim=20, min_count=3, epoch=1, word_ngrams=2, bucket=10007)
    train(binary, l10n_de["pairs"], tmp_path / "model", "de", settings, threads=2)
    model = SentenceModel.load(tmp_path / "model")
    sentences = [*l10n_de["heldout_de"][:200], [], ["Zzzunbekannt"], ["Datei"], ["DATEI", "öffnen"]]
    text = "".join(side_text(s) + "\n" for s in sentences)
    proc = subprocess.run(
        [binary, "sentence-vectors", "-model", tmp_path / "model" / "model.bin", "-lang", "de"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    )
    cpp = np.array([[float(x) for x in line.split()] for line in proc.stdout.splitlines()])
    python = model.sentence_vectors(sentences, "de")
    assert cpp.shape == python.shape == (len(sentences), 20)
    np.testing.assert_allclose(python, cpp, rtol=1e-5, atol=1e-7)
    assert not python[len(sentences) - 4].any()  # the empty sentence
    assert not python[len(sentences) - 3].any()  # only an unknown word
    # The bigram rows count: the unigram average alone is a different vector.
    unigrams = SentenceModel(
        model.langs, model.vocab, model.input, model.nwords, 1, 0, model.lowercase
    ).sentence_vectors(sentences[:200], "de")
    assert not np.allclose(unigrams, python[:200], atol=1e-4)


@needs_l10n
@pytest.mark.shared
@pytest.mark.slow  # builds the C++ trainer
def test_resume_continues_from_a_model(binary, l10n_de, tmp_path) -> None:
    settings = Bisent2vecSettings(dim=20, min_count=3, epoch=1)
    first = train(binary, l10n_de["pairs"], tmp_path / "a", "de", settings)
    resumed = train(binary, l10n_de["pairs"], tmp_path / "b", "de", settings, resume=tmp_path / "a")
    assert resumed["trainer_flags"]["resumed_from"] == str(tmp_path / "a" / "model.bin")
    assert resumed["vocabulary"] == first["vocabulary"]
    # It starts from the trained vectors, so its loss starts where the first run ended.
    assert resumed["loss_by_epoch"][0] < first["loss_by_epoch"][0]


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.slow  # builds the C++ trainer
def test_malformed_line_names_file_and_line(binary, tmp_path) -> None:
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("a b\tc d\nno tab\n")
    with pytest.raises(Bisent2vecError, match=rf"{pairs}:2: expected one tab"):
        train(binary, pairs, tmp_path / "model", "de", Bisent2vecSettings(min_count=1))
    assert not (tmp_path / "model").exists()


@pytest.mark.slow  # builds the C++ trainer
def test_empty_vocabulary_says_what_to_change(binary, tmp_path) -> None:
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("a b\tc d\n")
    with pytest.raises(Bisent2vecError, match=r"empty vocabulary.*lower -minCount"):
        train(binary, pairs, tmp_path / "model", "de", Bisent2vecSettings(min_count=5))


@pytest.mark.slow  # builds the C++ trainer
def test_missing_inputs(binary, tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing\.txt"):
        train(binary, tmp_path / "missing.txt", tmp_path / "model", "de")
    with pytest.raises(Bisent2vecError, match="build it first"):
        train(tmp_path / "no-binary", tmp_path / "missing.txt", tmp_path / "model", "de")
    with pytest.raises(Bisent2vecError, match="did you mean 'word_ngrams'"):
        Bisent2vecSettings.from_dict({"word_ngram": 2})


def test_cli_error_is_one_line(tmp_path) -> None:
    words = tmp_path / "words.parquet"
    pq.write_table(words_table([["a"]], [["b"]]), words)
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "xlsent.cli", "bisent2vec-train", "--lang", "de"),
            *("--method", "bisent2vec", "--settings", "{}", "--threads", "1"),
            *("--words", str(words), "--out", str(tmp_path / "model")),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "--binary is required" in proc.stderr


@needs_l10n
@pytest.mark.shared
@pytest.mark.slow  # builds the C++ trainer
def test_cli_trains_and_evaluates(binary, l10n_de, tmp_path) -> None:
    def xlsent(*args: str) -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "xlsent.cli", *args], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr

    model = tmp_path / "model"
    xlsent(
        *("bisent2vec-train", "--method", "bisent2vec", "--lang", "de"),
        *("--words", str(l10n_de["words"])),
        *("--binary", str(binary), "--threads", "2", "--out", str(model)),
        *("--settings", json.dumps({"dim": 10, "min_count": 3, "epoch": 1})),
        *("--stats", str(tmp_path / "stats.json")),
    )
    assert sorted(p.name for p in model.iterdir()) == [
        "model.bin",
        "stats.json",
        "vectors.de.vec",
        "vectors.en.vec",
    ]
    assert read_json(tmp_path / "stats.json")["data"]["pairs"] == TRAIN_PAIRS
    assert not list(tmp_path.glob(".*"))  # the trainer's input file is removed

    (tmp_path / "en-de.txt").write_text("file datei\nopen öffnen\nsave speichern\n")
    xlsent(
        *("eval-bli", "--model", str(model), "--lang", "de", "--direction", "en2xx"),
        *("--dictionary", str(tmp_path / "en-de.txt"), "--run", "b2v", "--seed", "0"),
        *("--out", str(tmp_path / "bli.parquet"), "--stats", str(tmp_path / "bli.json")),
    )
    bli = pl.read_parquet(tmp_path / "bli.parquet")
    assert bli.columns == list(COLUMNS)
    assert sorted(bli["metric"]) == sorted(f"p@{k}_{m}" for k in (1, 5, 10) for m in ("nn", "csls"))
    assert set(bli["n"]) == {3} and set(bli["direction"]) == {"en2xx"}

    tatoeba_dir = tmp_path / "tatoeba"
    tatoeba_dir.mkdir()
    for name, side in (("deu", "heldout_de"), ("eng", "heldout_en")):
        lines = "".join(" ".join(words) + "\n" for words in l10n_de[side][:100])
        (tatoeba_dir / f"tatoeba.deu-eng.{name}").write_text(lines, encoding="utf-8")
    xlsent(
        *("bisent2vec-eval-tatoeba", "--model", str(model), "--dir", str(tatoeba_dir)),
        *("--langs", "de", "--tatoeba-text", "laser"),
        *("--idf-words", str(l10n_de["words"]), "--run", "b2v", "--seed", "0"),
        *("--out", str(tmp_path / "tatoeba.parquet")),
    )
    rows = pl.read_parquet(tmp_path / "tatoeba.parquet")
    assert rows.columns == list(COLUMNS)
    assert rows["direction"].to_list() == ["xx2en", "en2xx", "mean"]
    assert set(rows["n"]) == {100} and set(rows["lang"]) == {"de"}


# -- the fastText baseline ---------------------------------------------------------------------
@needs_l10n
@pytest.mark.shared
@pytest.mark.slow  # builds the C++ trainer
def test_fasttext_baseline_through_the_same_code(binary, l10n_de, tmp_path) -> None:
    pytest.importorskip("fasttext")
    from xlsent.bisent2vec.baseline import train_cbow

    stats = train_cbow(l10n_de["pairs"], tmp_path / "cbow", "de", SMALL, threads=2)
    cbow = SentenceModel.load(tmp_path / "cbow")
    words, vectors = cbow.word_vectors("de")
    assert len(words) == stats["vocabulary"]["de"] > 100
    assert "datei" in words and not any(w.endswith("_de") for w in words[:50])
    assert vectors.shape == (len(words), 50)
    # Same tokens, settings and evaluation: the cross-lingual objective is what aligns.
    train(binary, l10n_de["pairs"], tmp_path / "b2v", "de", SMALL, threads=2)
    b2v = SentenceModel.load(tmp_path / "b2v")
    scores = {}
    for name, model in (("cbow", cbow), ("bisent2vec", b2v)):
        de = model.sentence_vectors(l10n_de["heldout_de"], "de")
        en = model.sentence_vectors(l10n_de["heldout_en"], "en")
        scores[name] = p_at_1(de, en)
    assert scores["bisent2vec"] > scores["cbow"] + 0.1, scores
