"""The trainer's input: one `en tokens<TAB>xx tokens` line per pair of a words Parquet file.

A token is written as `train_token` makes it: lowercased (by default; the MUSE and FreeDict
dictionaries are lowercase, and case variants would split a word's counts), with any
whitespace inside it replaced by `▁`, since spaCy keeps whitespace tokens (a double space, a
no-break space) and the trainer splits on spaces and tabs. Sentence vectors look tokens up
through the same function, so training and inference see the same strings.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pyarrow.parquet as pq

from xlsent.bisent2vec import Bisent2vecError
from xlsent.failures.unreadable import reading
from xlsent.io import atomic_path

SPACE_MARK = "\u2581"
WORDS_COLUMNS = ("en_words", "xx_words")


def train_token(word: str, lowercase: bool = True) -> str:
    """The vocabulary entry of a word token ("" for an empty token, which is left out)."""
    if lowercase:
        word = word.lower()
    if any(ch.isspace() for ch in word):
        word = "".join(SPACE_MARK if ch.isspace() else ch for ch in word)
    return word


def side_text(words: Sequence[str], lowercase: bool = True) -> str:
    """One side of a training line: the tokens, space-separated, empty tokens left out."""
    return " ".join(t for t in (train_token(w, lowercase) for w in words) if t)


def write_pairs(
    words_paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    lowercase: bool = True,
    batch_size: int = 50_000,
) -> dict:
    """Write the pairs of one language's words Parquet files (in order) as trainer input.

    Every pair is written, also one with an empty side (it still trains the other side's
    monolingual objective). Returns counts: pairs, tokens per side, pairs with an empty side.
    """
    if not words_paths:
        raise Bisent2vecError("no words Parquet file given: nothing to train on")
    stats = {"pairs": 0, "en_tokens": 0, "xx_tokens": 0, "empty_en": 0, "empty_xx": 0}
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for path in words_paths:
            with reading(path):
                source = pq.ParquetFile(path)
            missing = [c for c in WORDS_COLUMNS if c not in source.schema_arrow.names]
            if missing:
                raise Bisent2vecError(
                    f"{path} lacks the columns {missing}: expected the tokenize stage's words "
                    "file (id, en_words, xx_words); run `xlsent words` on the corpus split"
                )
            for batch in source.iter_batches(batch_size=batch_size, columns=list(WORDS_COLUMNS)):
                lines = []
                for en, xx in zip(
                    batch.column("en_words").to_pylist(),
                    batch.column("xx_words").to_pylist(),
                    strict=True,
                ):
                    en_text = side_text(en or (), lowercase)
                    xx_text = side_text(xx or (), lowercase)
                    stats["en_tokens"] += en_text.count(" ") + 1 if en_text else 0
                    stats["xx_tokens"] += xx_text.count(" ") + 1 if xx_text else 0
                    stats["empty_en"] += not en_text
                    stats["empty_xx"] += not xx_text
                    lines.append(f"{en_text}\t{xx_text}\n")
                f.writelines(lines)
                stats["pairs"] += len(lines)
        if stats["pairs"] == 0:
            raise Bisent2vecError(
                f"{', '.join(map(str, words_paths))} hold no pairs: nothing to train on"
            )
    return stats
