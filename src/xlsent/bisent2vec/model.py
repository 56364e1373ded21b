"""A trained model (or any word vectors) as a sentence encoder, computed as the C++ does.

A sentence vector is the average of the input rows of the sentence's features: its words
(tokens outside the vocabulary left out, before n-grams are formed) and, for a model trained
with `word_ngrams` > 1, its word n-grams, each at row `nwords + 1 + hash % bucket` with
fastText's hash (`ngram_hash` below, as `csrc/bisent2vec/src/dictionary.h`).

The paper's sentence retrieval (Sabet et al. 2019, arXiv:1912.12481, §4.3) is instead "the
tf-idf weighted average" of word vectors, the idf counted on held-out sentences, evaluated
with MUSE (§4.1): MUSE's `bow_idf` averages the vectors of a sentence's unique words (no
n-grams: it reads the word vectors), each weighted by idf(w) = max(1, log10(N / df(w))) over
N held-out sentences, df(w) of which hold w (`get_idf`); a word no held-out sentence holds
is left out. `idf` and `sentence_vectors(..., idf)` compute exactly that.

Word vectors of other models (the fastText baseline) load through `from_vec_files` and then
go through the same code, with words only.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from xlsent.bisent2vec import Bisent2vecError
from xlsent.bisent2vec.data import WORDS_COLUMNS, train_token
from xlsent.bisent2vec.trainer import MODEL_FILE, STATS_FILE, vectors_file
from xlsent.failures.unreadable import reading
from xlsent.io import read_json

MAGIC = b"BIS2VEC1"
NGRAM_MULTIPLIER = np.uint64(116049371)
_ALIGN = 64


def ngram_hash(ids: Sequence[int]) -> int:
    """fastText's word n-gram hash: h = id0, then h = h * 116049371 + id mod 2^64."""
    h = int(ids[0])
    for i in ids[1:]:
        h = (h * 116049371 + int(i)) % 2**64
    return h


def ngram_rows(ids: np.ndarray, max_n: int, bucket: int, first_row: int) -> np.ndarray:
    """The rows of the word n-grams (2..max_n) of a sequence of word ids (vectorised)."""
    if max_n < 2 or bucket < 1 or len(ids) < 2:
        return np.zeros(0, dtype=np.int64)
    seq = np.asarray(ids, dtype=np.uint64)
    h = seq.copy()
    out = []
    for n in range(2, min(max_n, len(seq)) + 1):
        h = h[:-1] * NGRAM_MULTIPLIER + seq[n - 1 :]  # uint64 arithmetic wraps as in C++
        out.append((h % np.uint64(bucket)).astype(np.int64) + first_row)
    return np.concatenate(out)


def read_vec(path: str | os.PathLike[str]) -> tuple[list[str], np.ndarray]:
    """A fastText text `.vec` file: its words and their vectors (float32)."""
    path = Path(path)
    with open(path, encoding="utf-8", newline="\n") as f:
        header = f.readline().split()
        if len(header) != 2 or not all(x.isdigit() for x in header):
            raise Bisent2vecError(
                f"{path}:1 should be the fastText header 'count dim', got {' '.join(header)!r}"
            )
        count, dim = map(int, header)
        words, rows = [], np.zeros((count, dim), dtype=np.float32)
        for i, line in enumerate(f):
            parts = line.rstrip("\n").split(" ")
            if i >= count or len(parts) != dim + 1:
                raise Bisent2vecError(
                    f"{path}:{i + 2}: expected a word and {dim} numbers (the header says "
                    f"{count} words); the file is not a complete fastText .vec file"
                )
            words.append(parts[0])
            rows[i] = np.asarray(parts[1:], dtype=np.float32)
    if len(words) != count:
        raise Bisent2vecError(f"{path} ends after {len(words)} of the {count} words it announces")
    return words, rows


class SentenceModel:
    """Word (and n-gram) rows of a model and the sentence vectors built from them.

    `vocab[lang]` maps a word to its row; `input` holds every row (words, then the
    placeholder row and the n-gram buckets of a Bi-Sent2vec model); `nwords` is the number
    of word rows, `ngram_rows` of bucket rows after the placeholder.
    """

    def __init__(
        self,
        langs: Sequence[str],
        vocab: dict[str, dict[str, int]],
        input_rows: np.ndarray,
        nwords: int,
        word_ngrams: int = 1,
        ngram_rows: int = 0,
        lowercase: bool = True,
    ) -> None:
        self.langs = tuple(langs)
        self.vocab = vocab
        self.input = input_rows
        self.nwords = nwords
        self.word_ngrams = word_ngrams
        self.ngram_rows = ngram_rows
        self.lowercase = lowercase

    @property
    def dim(self) -> int:
        return int(self.input.shape[1])

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SentenceModel:
        """A model directory (`model.bin`, or the `.vec` files of a baseline) or a `model.bin`."""
        path = Path(path)
        if path.is_dir():
            stats = read_json(path / STATS_FILE) if (path / STATS_FILE).is_file() else {}
            lowercase = stats.get("settings", {}).get("lowercase", True)
            if (path / MODEL_FILE).is_file():
                return cls.from_binary(path / MODEL_FILE, lowercase)
            if "langs" not in stats:
                raise Bisent2vecError(
                    f"{path} holds neither {MODEL_FILE} nor a {STATS_FILE} naming its languages: "
                    "not a model directory written by xlsent"
                )
            return cls.from_vec_files(
                {lang: path / vectors_file(lang) for lang in stats["langs"]}, lowercase
            )
        if not path.is_file():
            raise FileNotFoundError(f"model {path} not found")
        return cls.from_binary(path)

    @classmethod
    def from_binary(cls, path: str | os.PathLike[str], lowercase: bool = True) -> SentenceModel:
        """Read a `model.bin` (format 1); the input matrix is memory-mapped, not copied."""
        path = Path(path)
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            if buf[:8] != MAGIC:
                raise Bisent2vecError(
                    f"{path} is not a bisent2vec model (format 1): expected a model.bin "
                    "written by `bisent2vec train`"
                )
            try:
                dim, word_ngrams, *_ = struct.unpack_from("<6I", buf, 8)
                ngram_rows, nwords = struct.unpack_from("<2Q", buf, 32)
                pos = 8 + 6 * 4 + 5 * 8 + 2 * 8  # magic, 6 u32, 5 u64, 2 f64
                langs = []
                for _ in range(2):
                    (n,) = struct.unpack_from("<I", buf, pos)
                    langs.append(buf[pos + 4 : pos + 4 + n].decode())
                    pos += 4 + n
                vocab: dict[str, dict[str, int]] = {lang: {} for lang in langs}
                for row in range(nwords):
                    lang, n = struct.unpack_from("<BI", buf, pos)
                    vocab[langs[lang]][buf[pos + 5 : pos + 5 + n].decode()] = row
                    pos += 5 + n + 8
            except (struct.error, IndexError, UnicodeDecodeError) as err:
                raise Bisent2vecError(f"{path} is corrupt or cut short ({err})") from None
            pos += (-pos) % _ALIGN
        rows = nwords + 1 + ngram_rows
        if path.stat().st_size < pos + 4 * dim * (rows + nwords):
            raise Bisent2vecError(f"{path} is cut short: its matrices are incomplete")
        matrix = np.memmap(path, dtype="<f4", mode="r", offset=pos, shape=(rows, dim))
        return cls(langs, vocab, matrix, nwords, word_ngrams, ngram_rows, lowercase)

    @classmethod
    def from_vec_files(
        cls, paths: dict[str, str | os.PathLike[str]], lowercase: bool = True
    ) -> SentenceModel:
        """Word vectors of each language (fastText `.vec` files) in one model, words only."""
        vocab, blocks, offset = {}, [], 0
        for lang, path in paths.items():
            words, vectors = read_vec(path)
            vocab[lang] = {w: offset + i for i, w in enumerate(words)}
            blocks.append(vectors)
            offset += len(words)
        dims = {b.shape[1] for b in blocks}
        if len(dims) != 1:
            raise Bisent2vecError(f"the vector files {list(paths.values())} differ in dimension")
        return cls(list(paths), vocab, np.concatenate(blocks), offset, 1, 0, lowercase)

    def word_vectors(self, lang: str) -> tuple[list[str], np.ndarray]:
        """The words of `lang` (in row order) and their vectors."""
        words = self._vocab(lang)
        rows = np.fromiter(words.values(), dtype=np.int64, count=len(words))
        return list(words), np.asarray(self.input[rows], dtype=np.float32)

    def _vocab(self, lang: str) -> dict[str, int]:
        if lang not in self.vocab:
            raise Bisent2vecError(f"the model knows {', '.join(self.langs)}, not {lang!r}")
        return self.vocab[lang]

    def word_rows(self, tokens: Sequence[str], lang: str) -> np.ndarray:
        """The rows of a sentence's (word tokens') known words, in order, repeats kept."""
        vocab = self._vocab(lang)
        ids = [vocab[t] for t in (train_token(w, self.lowercase) for w in tokens) if t in vocab]
        return np.asarray(ids, dtype=np.int64)

    def features(self, tokens: Sequence[str], lang: str) -> np.ndarray:
        """The input rows a sentence (word tokens) averages: its known words, then n-grams."""
        words = self.word_rows(tokens, lang)
        if self.word_ngrams < 2:
            return words
        grams = ngram_rows(words, self.word_ngrams, self.ngram_rows, self.nwords + 1)
        return np.concatenate([words, grams])

    def idf(self, sentences: Sequence[Sequence[str]], lang: str) -> np.ndarray:
        """The paper's idf of every word row, counted on `sentences` (MUSE's get_idf).

        idf(w) = max(1, log10(N / df(w))): N sentences, df(w) of them holding w (a sentence
        counts each of its words once). A word none of them holds gets 0, which leaves it
        out of `sentence_vectors` as MUSE leaves it out.
        """
        df = np.zeros(self.nwords, dtype=np.int64)
        for tokens in sentences:
            df[np.unique(self.word_rows(tokens, lang))] += 1
        idf = np.zeros(self.nwords, dtype=np.float64)
        seen = df > 0
        idf[seen] = np.maximum(1.0, np.log10(len(sentences) / df[seen]))
        return idf.astype(np.float32)

    def pair_idf(
        self, words_files: Sequence[str | os.PathLike[str]], foreign: str
    ) -> dict[str, np.ndarray]:
        """`idf` of both sides, "en" and `foreign`, counted on words Parquet files of the pair.

        A words file of the tokenize stage holds both sides of each pair, so one read gives
        the weights of both languages; the workflow passes the training split, which no test
        sentence is part of and which holds every word that has a vector.
        """
        sides: dict[str, list[list[str]]] = {"en": [], foreign: []}
        for path in words_files:
            with reading(path):
                table = pq.read_table(path, columns=list(WORDS_COLUMNS))
            sides["en"] += table.column("en_words").to_pylist()
            sides[foreign] += table.column("xx_words").to_pylist()
        return {lang: self.idf(sentences, lang) for lang, sentences in sides.items()}

    def sentence_vectors(
        self, sentences: Sequence[Sequence[str]], lang: str, idf: np.ndarray | None = None
    ) -> np.ndarray:
        """One vector per sentence (float32).

        Without `idf`: the mean of its feature rows (words and n-grams, repeats counted), as
        the C++ `sentence-vectors` computes it. With `idf` (from `idf`): the paper's
        retrieval vector, MUSE's `bow_idf`: sum over the sentence's unique words w of
        idf(w) v(w), divided by the sum of their idf; words with idf 0 (in no held-out
        sentence) left out. A sentence without a (weighted) known word gets the zero vector.
        """
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for i, tokens in enumerate(sentences):
            if idf is None:
                rows = self.features(tokens, lang)
                if len(rows):
                    out[i] = np.asarray(self.input[rows], dtype=np.float64).mean(axis=0)
                continue
            rows = np.unique(self.word_rows(tokens, lang))
            rows = rows[idf[rows] > 0]
            if len(rows):
                weights = idf[rows].astype(np.float64)
                out[i] = weights @ np.asarray(self.input[rows], dtype=np.float64) / weights.sum()
        return out

    def text_encoder(
        self, idf: dict[str, np.ndarray] | None = None
    ) -> Callable[[list[str], str], np.ndarray]:
        """Raw sentences of a language → vectors: the encoder `xlsent.evaluate.tatoeba` takes.

        Text is split with the tokenize stage's word tokenizer of that language (the one the
        training pairs went through); `idf[lang]` (from `idf`) weights that language's side.
        """
        from xlsent.tokenize import word_tokenizer

        tokenizers: dict[str, Callable] = {}

        def encode(texts: list[str], lang: str) -> np.ndarray:
            self._vocab(lang)
            if lang not in tokenizers:
                tokenizers[lang] = word_tokenizer(lang)
            tokens = list(tokenizers[lang](texts))
            return self.sentence_vectors(tokens, lang, (idf or {}).get(lang))

        return encode


def pair_encoder(
    model_dir: str | os.PathLike[str],
    lang: str,
    idf_words: str | os.PathLike[str] | None = None,
) -> Callable[[list[str], str], np.ndarray]:
    """The sentence encoder of an en-`lang` model directory, as every evaluation of the
    word-vector runs takes it (Tatoeba, held-out retrieval).

    Without `idf_words`: the plain average of a sentence's words (and n-grams). With it (the
    pair's words Parquet file, the workflow's training split): the paper's retrieval vector,
    Σ idf(w) v(w) / Σ idf(w) over the sentence's unique words, idf(w) = max(1, log10(N /
    df(w))) counted on those N pairs' sides (Sabet et al. 2019, §4.3, through MUSE's
    `bow_idf`; `SentenceModel.idf`, `SentenceModel.sentence_vectors`).
    """
    model = SentenceModel.load(model_dir)
    idf = model.pair_idf([idf_words], lang) if idf_words is not None else None
    return model.text_encoder(idf)
