"""Sentence retrieval among held-out translation pairs, as Bi-Sent2vec measures it.

Sabet et al. 2019 ("Robust Cross-lingual Embeddings from Parallel Sentences",
arXiv:1912.12481, §4.3) retrieve the translations of held-out Europarl sentences with "the
tf-idf weighted average" of word vectors and evaluate with MUSE's sentence translation
retrieval (Conneau et al. 2018, arXiv:1710.04087, §4.3; MUSE's `sent_translation.py`): each
query sentence's vector retrieves, by cosine nearest neighbour, the key sentences of the
other language, and a query is right at 1 when its translation comes first (P@1).

Here the queries and keys are the same held-out pairs of a language, both ways: each foreign
sentence retrieves among the English sides (xx→en), each English one among the foreign sides
(en→xx), and their mean. The pairs are the sample stage's `mining` split, which no run trains
on (or a Tatoeba-style test set), made unambiguous as MUSE makes Europarl's (each sentence
once a side; `xlsent.evaluate.mining_set.unambiguous`, which also drops pairs whose two sides
are one text). MUSE retrieves 2,000 queries among 200,000 keys; our keys are the queries'
translations alone, at most `corpus.mining_pairs` of them, so the task is easier than the
paper's and its numbers are comparable between runs, not with the paper's.

The word-vector runs' sentence vector is the paper's, eq. v(s) = Σ_{w ∈ set(s)} idf(w) v(w) /
Σ_{w ∈ set(s)} idf(w) with idf(w) = max(1, log10(N / df(w))) over the N training pairs
(`xlsent.bisent2vec.model.pair_encoder`); the encoder runs' is their own (`xlsent.models`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from xlsent.evaluate import mining_set, tatoeba
from xlsent.evaluate.encoding import Encoder
from xlsent.failures.errors import XlsentError

log = logging.getLogger(__name__)

SOURCES = ("corpus", "tatoeba")


class RetrievalError(XlsentError):
    """Held-out pairs that leave nothing to retrieve; the message says what to change."""


def source_pairs(
    source: str, path: str | os.PathLike[str], lang: str, tatoeba_text: str = "laser"
) -> list[tuple[str, str]]:
    """The (en, xx) held-out pairs of `lang` as they stand (the retrieval's and the mining
    set's). `source` corpus: `path` is a corpus-stage Parquet file (the sample stage's
    `mining` split); tatoeba: a directory in the LASER layout, its lines read as
    `tatoeba_text` says (`evaluate.tatoeba.text`: the Tatoeba set is read one way by every
    job, so that its encode job stored the vectors of these very texts)."""
    if source == "corpus":
        return mining_set.corpus_pairs(path)
    if source == "tatoeba":
        xx, en = tatoeba.read_pairs(Path(path), lang, tatoeba_text)
        return list(zip(en, xx, strict=True))
    raise ValueError(f"source must be one of {SOURCES}, not {source!r}")


def heldout_pairs(
    source: str, path: str | os.PathLike[str], lang: str, tatoeba_text: str = "laser"
) -> tuple[list[str], list[str]]:
    """The (foreign, English) sentences of `lang`'s held-out pairs (`source_pairs`), line i
    translating line i. Pairs that repeat a sentence of either side, or whose sides are one
    text, are dropped (`mining_set.unambiguous`): the gold of a query must be one line.
    """
    kept = mining_set.unambiguous(source_pairs(source, path, lang, tatoeba_text))
    return [xx for _, xx in kept], [en for en, _ in kept]


def evaluate(
    pairs: Mapping[str, tuple[Sequence[str], Sequence[str]]],
    encoder_of: Callable[[str], Encoder],
) -> list[dict]:
    """P@1 (%) of each language's held-out pairs, xx→en and en→xx, as result rows.

    `pairs`: (foreign, English) sentences per language (`heldout_pairs`); `encoder_of(lang)`:
    the encoder of a language's pairs (an encoder run's one encoder; a word-vector run's model
    of that pair, loaded only for a language with pairs). Rows as Tatoeba's
    (`tatoeba.retrieval_rows`): `xx2en`, `en2xx` and their `mean`, metric `accuracy`, `n` the
    pairs. A language without a pair is left out with a warning (the table lists it as
    missing); none at all is an error.
    """
    rows: list[dict] = []
    for lang, (xx, en) in pairs.items():
        if not xx:
            log.warning("%s: no held-out pair to retrieve (after dropping repeats): left out", lang)
            continue
        rows += tatoeba.retrieval_rows(encoder_of(lang), lang, list(xx), list(en))
    if not rows:
        raise RetrievalError(
            f"no held-out pair in any of {', '.join(pairs) or 'no language'}: hold out pairs "
            "(corpus.mining_pairs), or take them from the Tatoeba set (evaluate.retrieval.from)"
        )
    return rows
