"""Bilingual lexicon induction (word translation) by the MUSE protocol (Conneau, Lample et al.
2018, "Word Translation Without Parallel Data", arXiv:1710.04087), as Bi-Sent2vec (Sabet et
al. 2019, arXiv:1912.12481, §4.2) reports it.

Both vocabularies' vectors are L2-normalised. A query is a unique source word of the
dictionary that is in the source vocabulary and has at least one gold translation in the
target vocabulary (pairs with an out-of-vocabulary side are dropped, as MUSE's loader does);
its translation is a hit at k when any of its gold translations is among the k best target
words. P@1, P@5 and P@10 are reported in percent, for two retrievals (`xlsent.search.retrieve`):

- `nn`: nearest neighbour by cosine similarity;
- `csls` (cross-domain similarity local scaling, k = 10): the score of source x and target y
  is 2 cos(x, y) - r_T(x) - r_S(y), where r_T(x) is the mean cosine of x's k nearest target
  words and r_S(y) that of y's k nearest source words (over the whole source vocabulary). It
  penalises hubs, target words that are near everything.

The dictionaries are read, built from FreeDict and split into a seed part and test parts by
`xlsent.dictionaries`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np

from xlsent.dictionaries import DictionaryError
from xlsent.search import CSLS_K, RETRIEVALS, retrieve

log = logging.getLogger(__name__)

KS = (1, 5, 10)


def gold_translations(
    src_words: Sequence[str], tgt_words: Sequence[str], pairs: Iterable[tuple[str, str]]
) -> tuple[dict[str, set[int]], dict[str, int]]:
    """The queries (source words) with their gold target indices, and the coverage counts.

    Coverage: `pairs` and `source_words` of the dictionary, `pairs_in_vocab` (both words in
    the vocabularies) and `queries`.
    """
    src_index = {w: i for i, w in enumerate(src_words)}
    tgt_index = {w: i for i, w in enumerate(tgt_words)}
    gold: dict[str, set[int]] = {}
    n_pairs = 0
    source_words = set()
    for src, tgt in pairs:
        n_pairs += 1
        source_words.add(src)
        if src in src_index and tgt in tgt_index:
            gold.setdefault(src, set()).add(tgt_index[tgt])
    coverage = {
        "pairs": n_pairs,
        "source_words": len(source_words),
        "pairs_in_vocab": sum(len(v) for v in gold.values()),
        "queries": len(gold),
    }
    return gold, coverage


def evaluate(
    src_words: Sequence[str],
    src_vectors: np.ndarray,
    tgt_words: Sequence[str],
    tgt_vectors: np.ndarray,
    pairs: Iterable[tuple[str, str]],
    ks: Sequence[int] = KS,
    methods: Sequence[str] = RETRIEVALS,
    csls_k: int = CSLS_K,
) -> list[dict]:
    """P@k (%) over the dictionary's source words, per retrieval method.

    Rows `{"method", "k", "metric": "p@k", "value", "n"}`, `n` the number of queries.
    """
    if len(src_words) != len(src_vectors) or len(tgt_words) != len(tgt_vectors):
        raise ValueError("each side needs one vector per word")
    gold, coverage = gold_translations(src_words, tgt_words, pairs)
    if not gold:
        raise DictionaryError(
            f"none of the {coverage['pairs']} dictionary pairs has both words in the "
            f"vocabularies ({len(src_words)} source, {len(tgt_words)} target words): is the "
            "dictionary for this language pair and direction, and are both lowercased alike?"
        )
    log.info(
        "BLI: %d of %d dictionary source words are queries (%d pairs in the vocabularies)",
        coverage["queries"],
        coverage["source_words"],
        coverage["pairs_in_vocab"],
    )
    if len(tgt_words) <= max(ks):
        log.warning(
            "BLI: the target vocabulary has %d words: P@k for k of %d or more finds every gold "
            "translation (train on more pairs, or lower the vocabulary threshold)",
            len(tgt_words),
            len(tgt_words),
        )
    src_index = {w: i for i, w in enumerate(src_words)}
    queries = list(gold)
    q = np.asarray(src_vectors)[[src_index[w] for w in queries]]
    rows = []
    for method in methods:
        top = retrieve(q, src_vectors, tgt_vectors, method, max(ks), csls_k)
        for k in ks:
            hits = sum(bool(gold[w] & set(top[i, :k].tolist())) for i, w in enumerate(queries))
            rows.append(
                {
                    "method": method,
                    "k": k,
                    "metric": f"p@{k}",
                    "value": 100 * hits / len(queries),
                    "n": len(queries),
                }
            )
    return rows
