"""Word tokens (spaCy blank tokenizers) and subword ids (the run's encoder tokenizer).

Words feed the aligner and Bi-Sent2vec; subwords feed the dual encoder. Subword ids are
stored without special tokens and untruncated, so a change of the training length limit
re-trains but does not re-tokenize. They are the ids of the sentence after the model's
prefix (`xlsent.models.sentence.prefix_of`: the en prefix on the English side, the xx prefix
on the other), as every evaluation tokenizes it; words are the sentence's own (the word
spans of `xlsent.train.word_spans` count the prefix's subwords, which belong to no word).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from xlsent import languages
from xlsent.failures.kill_points import kill_point
from xlsent.failures.unreadable import reading
from xlsent.io import parquet_writer
from xlsent.models.sentence import Prefix, prefix_of
from xlsent.models.tokenizer import fast_tokenizer

log = logging.getLogger(__name__)

WORDS_SCHEMA = pa.schema(
    [("id", pa.int64()), ("en_words", pa.list_(pa.string())), ("xx_words", pa.list_(pa.string()))]
)
SUBWORDS_SCHEMA = pa.schema(
    [("id", pa.int64()), ("en_ids", pa.list_(pa.int32())), ("xx_ids", pa.list_(pa.int32()))]
)
_SPACY_OPTIONS = {
    # Vietnamese word segmentation needs pyvi; syllables (spaces) are spaCy's own fallback.
    "vi": {"nlp": {"tokenizer": {"use_pyvi": False}}},
}


def _spacy() -> ModuleType:
    """spaCy, imported without torch in a process that has not loaded torch: thinc, spaCy's
    machine-learning library, imports torch whenever it is installed (a second of every word
    tokenization job, most of the job), and the blank tokenizers use nothing of it. A None
    in `sys.modules` makes thinc's `import torch` fail, which it takes as torch missing; the
    entry goes again at once, so that the process may still import torch later."""
    if "torch" in sys.modules:
        import spacy

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        import spacy
    finally:
        del sys.modules["torch"]
    return spacy


def word_tokenizer(lang: str) -> Callable[[Iterable[str]], Iterable[list[str]]]:
    """spaCy's blank tokenizer for `lang`, or an explicit, logged fallback.

    spaCy has no tokenizer for some languages (jv, ka, kk, sw) and needs optional packages
    for others (ja: SudachiPy, ko: mecab-ko, th: PyThaiNLP). Those fall back to the
    multi-language tokenizer `xx`; for scripts without spaces the fallback splits into
    characters, as spaCy's own Chinese default does, since whole sentences would otherwise
    be single tokens.
    """
    spacy = _spacy()
    code = "en" if lang == "en" else languages.get(lang).code
    try:
        nlp = spacy.blank(code, config=_SPACY_OPTIONS.get(code, {}))
    except ImportError as err:
        reason = str(err).split("\n")[0]
        nlp = spacy.blank("xx")
        unspaced = languages.get(lang).unspaced
        log.warning(
            "spaCy has no usable tokenizer for %s (%s); using the multi-language tokenizer%s",
            lang,
            reason,
            " split into characters" if unspaced else "",
        )
        if unspaced:
            return lambda texts: (
                [ch for tok in doc for ch in tok.text] for doc in nlp.tokenizer.pipe(texts)
            )
    return lambda texts: ([tok.text for tok in doc] for doc in nlp.tokenizer.pipe(texts))


def words(
    corpus_path: str | Path, lang: str, out_path: str | Path, batch_size: int = 10_000
) -> dict:
    """Word-tokenize one corpus split into `out_path`; return counts."""
    en_tok, xx_tok = word_tokenizer("en"), word_tokenizer(lang)
    with reading(corpus_path):
        source = pq.ParquetFile(corpus_path)
    en_words = xx_words = 0
    with (
        parquet_writer(out_path, WORDS_SCHEMA) as writer,
        tqdm(
            total=source.metadata.num_rows, desc=f"words {lang}", unit=" pairs", mininterval=5
        ) as bar,
    ):
        for batch in source.iter_batches(batch_size=batch_size, columns=["id", "en", "xx"]):
            en = list(en_tok(batch.column("en").to_pylist()))
            xx = list(xx_tok(batch.column("xx").to_pylist()))
            en_words += sum(map(len, en))
            xx_words += sum(map(len, xx))
            writer.write_table(
                pa.table(
                    {"id": batch.column("id"), "en_words": en, "xx_words": xx}, schema=WORDS_SCHEMA
                )
            )
            bar.update(batch.num_rows)
            kill_point("words")
    return {
        "lang": lang,
        "pairs": source.metadata.num_rows,
        "en_words": en_words,
        "xx_words": xx_words,
    }


def subwords(
    corpus_path: str | Path, tokenizer_dir: str | Path, out_path: str | Path, prefix: Prefix = ""
) -> dict:
    """Encode one corpus split, each sentence after the model's `prefix`, with the encoder's
    tokenizer (no special tokens, no truncation)."""
    tokenizer = fast_tokenizer(tokenizer_dir)
    with reading(corpus_path):
        source = pq.ParquetFile(corpus_path)
    lengths: list[np.ndarray] = []
    with parquet_writer(out_path, SUBWORDS_SCHEMA) as writer:
        for batch in tqdm(
            source.iter_batches(batch_size=10_000, columns=["id", "en", "xx"]),
            total=-(-source.metadata.num_rows // 10_000),
            desc="subwords",
            mininterval=5,
        ):
            ids = {
                side: [
                    encoding.ids
                    for encoding in tokenizer.encode_batch(
                        prefixed(batch.column(side).to_pylist(), prefix_of(prefix, side)),
                        add_special_tokens=False,
                    )
                ]
                for side in ("en", "xx")
            }
            lengths.append(np.array([len(x) for x in ids["xx"]] + [len(x) for x in ids["en"]]))
            writer.write_table(
                pa.table(
                    {"id": batch.column("id"), "en_ids": ids["en"], "xx_ids": ids["xx"]},
                    schema=SUBWORDS_SCHEMA,
                )
            )
            kill_point("subwords")
    all_lengths = np.concatenate(lengths) if lengths else np.zeros(0)
    return {
        "pairs": source.metadata.num_rows,
        "mean_subwords": float(all_lengths.mean()) if all_lengths.size else 0.0,
        "p95_subwords": float(np.percentile(all_lengths, 95)) if all_lengths.size else 0.0,
    }


def prefixed(texts: list[str], before: str) -> list[str]:
    """`texts`, each after the text `before` (a side's prefix)."""
    return [before + text for text in texts] if before else texts


def word_offsets(text: str, words: list[str]) -> list[tuple[int, int]] | None:
    """Character offsets [start, end) of `words` in `text`, found in order.

    The tokenize stage's words are substrings of the sentence in order, so each is searched
    from the end of the previous one (a repeated word gets its own occurrence). None if a word
    cannot be found, which happens only when a tokenizer rewrote the text.
    """
    offsets = []
    cursor = 0
    for word in words:
        start = text.find(word, cursor)
        if start < 0:
            return None
        cursor = start + len(word)
        offsets.append((start, cursor))
    return offsets
