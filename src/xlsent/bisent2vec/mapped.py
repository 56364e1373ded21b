"""The mapping baseline (`method: mapped`): monolingual fastText vectors mapped into one space.

Bi-Sent2vec (Sabet et al. 2019, arXiv:1912.12481) argues against the family of methods that
learn each language's vectors on its own and then map one space onto the other; its word
translation tables (§4.2) set it beside them. This is that family's supervised reference,
MUSE's (Conneau, Lample et al. 2018, "Word Translation Without Parallel Data",
arXiv:1710.04087, §2 and §3.3-3.4):

1. fastText (skip-gram or CBOW, through the `fasttext` package) on each side of the language
   pair's training pairs on its own: the tokens, vocabulary threshold and settings
   Bi-Sent2vec gets (`xlsent.bisent2vec.data`), no character n-grams (Bi-Sent2vec has none);
2. both spaces' vectors unit length, then the orthogonal W minimising ||X W - Y|| over the
   seed dictionary's pairs (X the foreign words' vectors, Y their English translations'),
   W = U V^T from the SVD U S V^T of X^T Y (orthogonal Procrustes, MUSE eq. 2; Schönemann
   1966);
3. MUSE's refinement: `refinement` times, a new dictionary of the mutual nearest neighbours
   under CSLS among the `max_rank` most frequent words of each side (MUSE's `S2T&T2S`,
   `csls_knn_10`, `dico_max_rank` 15000) and Procrustes on it; MUSE's unsupervised
   criterion (the mean cosine of the CSLS translations of the 10,000 most frequent foreign
   words) picks the best of the seed fit and the refined ones.

The seed dictionary is the language's BLI seed part (`xlsent.dictionaries.split_dictionary`)
or, where no dictionary exists, one induced from the pairs themselves (`induce_lexicon`:
mutual best Dice partners). The model directory has the layout of the other word-vector runs
(`vectors.en.vec`, `vectors.{xx}.vec` in the shared space, `stats.json`), plus `seed.txt`, the
seed pairs in both vocabularies that the first fit used.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xlsent.bisent2vec import Bisent2vecError
from xlsent.bisent2vec.baseline import (
    EOS,
    _cpu_seconds,
    _write_vec,
    fasttext_model,
    peak_rss_mb,
)
from xlsent.bisent2vec.trainer import (
    STATS_FILE,
    Bisent2vecSettings,
    checked_settings,
    vectors_file,
)
from xlsent.defaults import schema_defaults
from xlsent.io import atomic_path, write_json

log = logging.getLogger(__name__)

SEED_FILE = "seed.txt"
CRITERION_WORDS = 10_000  # MUSE's validation criterion: the most frequent source words


@dataclasses.dataclass(frozen=True)
@schema_defaults("mapped")
class MappedSettings:
    """The mapping's settings (the config's `mapped` block; defaults are MUSE's).

    `model` the fastText objective (skipgram: MUSE's fastText Wikipedia vectors; cbow);
    `window` its context size; `refinement` MUSE's Procrustes iterations on induced
    dictionaries after the seed fit (0: the seed fit alone); `max_rank` the most frequent
    words of each side the refinement's dictionaries are drawn from; `csls_k` CSLS's k;
    `seed_dictionary` `auto` (the language's BLI seed part where it has a dictionary, else an
    induced lexicon) or `induced` (always induced); `induced_min_count` how often a word must
    occur in the pairs to enter the induced lexicon.
    """

    model: str
    window: int
    refinement: int
    max_rank: int
    csls_k: int
    seed_dictionary: str
    induced_min_count: int

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> MappedSettings:
        """Settings from a mapping (the workflow's `--mapped-settings` JSON); unknown keys fail."""
        settings = checked_settings(cls, values, "mapped")
        if settings.model not in ("skipgram", "cbow"):
            raise Bisent2vecError(f"mapped model {settings.model!r}: use skipgram or cbow")
        return settings


# -- the mapping ---------------------------------------------------------------------------------
def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32); a zero row stays zero."""
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def procrustes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The orthogonal W minimising ||x W - y||_F (MUSE eq. 2): U V^T for U S V^T = svd(x^T y).

    `x` and `y` hold the two sides of the dictionary's pairs row by row (n × d each).
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"procrustes needs two n × d matrices, got {x.shape} and {y.shape}")
    if len(x) == 0:
        raise ValueError("procrustes needs at least one pair")
    u, _, vt = np.linalg.svd(x.T @ y)
    return (u @ vt).astype(np.float32)


def csls_best(src: np.ndarray, tgt: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Each (unit) source row's best target row under CSLS (MUSE eq. 6, the BLI evaluation's
    `retrieve`, with r_S taken over `src`), and that pair's cosine."""
    from xlsent.search import retrieve  # faiss loads only when a search runs

    best = retrieve(src, src, tgt, "csls", k=1, csls_k=k)[:, 0]
    return best, np.einsum("ij,ij->i", src, tgt[best])


def mutual_csls_pairs(src: np.ndarray, tgt: np.ndarray, k: int = 10) -> list[tuple[int, int]]:
    """The pairs (i, j) where target j is source i's CSLS best and i is j's (MUSE's
    `S2T&T2S` dictionary)."""
    s2t, _ = csls_best(src, tgt, k)
    t2s, _ = csls_best(tgt, src, k)
    return [(i, int(j)) for i, j in enumerate(s2t) if t2s[j] == i]


def mean_cosine_criterion(src: np.ndarray, tgt: np.ndarray, k: int = 10) -> float:
    """MUSE's model selection criterion: the mean cosine of the CSLS translations of the
    (at most) 10,000 most frequent source words (rows in frequency order)."""
    _, cosine = csls_best(src[:CRITERION_WORDS], tgt, k)
    return float(cosine.mean())


def fit_mapping(
    src: np.ndarray,
    tgt: np.ndarray,
    seed: Sequence[tuple[int, int]],
    *,
    refinement: int = 5,
    max_rank: int = 15_000,
    csls_k: int = 10,
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """The orthogonal map of unit `src` rows onto unit `tgt` rows (both in frequency order):
    Procrustes on the `seed` pairs (row indices), then `refinement` iterations of Procrustes
    on the mutual CSLS nearest neighbours among the first `max_rank` rows; the W of the
    iteration with the best `mean_cosine_criterion`, and every iteration's record."""
    if not seed:
        raise Bisent2vecError(
            "no seed pair has both words in the vocabularies: nothing to fit the mapping on "
            "(a larger corpus, a lower min_count, or a dictionary for this language)"
        )
    pairs = np.asarray(seed, dtype=np.int64)
    w = procrustes(src[pairs[:, 0]], tgt[pairs[:, 1]])
    history = [{"iteration": 0, "pairs": len(pairs), "criterion": 0.0}]
    history[0]["criterion"] = mean_cosine_criterion(src @ w, tgt, csls_k)
    best_w, best = w, history[0]["criterion"]
    for iteration in range(1, refinement + 1):
        top_src, top_tgt = src[:max_rank], tgt[:max_rank]
        induced = mutual_csls_pairs(top_src @ w, top_tgt, csls_k)
        if not induced:
            break
        pairs = np.asarray(induced, dtype=np.int64)
        w = procrustes(src[pairs[:, 0]], tgt[pairs[:, 1]])
        criterion = mean_cosine_criterion(src @ w, tgt, csls_k)
        history.append({"iteration": iteration, "pairs": len(pairs), "criterion": criterion})
        if criterion > best:
            best_w, best = w, criterion
    return best_w, history


# -- the seed dictionary -------------------------------------------------------------------------
def induce_lexicon(
    lines: Sequence[str] | os.PathLike[str] | str, min_count: int = 2
) -> list[tuple[str, str]]:
    """A seed dictionary (en, xx) induced from parallel pairs: the mutual best Dice partners.

    Dice(e, x) = 2 c(e, x) / (c(e) + c(x)) over the pairs (`en tokens<TAB>xx tokens`, the
    trainer's input; a pair counts each word once), for words seen in at least `min_count`
    pairs; (e, x) is kept when x is e's best partner and e is x's, and they share at least
    `min_count` pairs. Sentence-level co-occurrence, not an aligner: it works in every script
    (identical strings do not, across scripts) and needs nothing but the pairs every
    word-vector run trains on. Ties go to the more frequent word, then the earlier one.
    """
    if isinstance(lines, (str, os.PathLike)):
        with open(lines, encoding="utf-8") as f:
            lines = f.read().splitlines()
    sides: list[list[list[str]]] = [[], []]
    for line in lines:
        en, _, xx = line.rstrip("\n").partition("\t")
        sides[0].append(sorted(set(en.split())))
        sides[1].append(sorted(set(xx.split())))
    vocab: list[dict[str, int]] = [{}, {}]
    counts: list[np.ndarray] = []
    for side, sentences in enumerate(sides):
        freq: dict[str, int] = {}
        for sentence in sentences:
            for word in sentence:
                freq[word] = freq.get(word, 0) + 1
        kept = sorted((w for w, c in freq.items() if c >= min_count), key=lambda w: (-freq[w], w))
        vocab[side] = {w: i for i, w in enumerate(kept)}
        counts.append(np.asarray([freq[w] for w in kept], dtype=np.int64))
    n_xx = len(vocab[1])
    if not vocab[0] or not n_xx:
        return []
    keys = []
    for en, xx in zip(sides[0], sides[1], strict=True):
        e = np.asarray([vocab[0][w] for w in en if w in vocab[0]], dtype=np.int64)
        x = np.asarray([vocab[1][w] for w in xx if w in vocab[1]], dtype=np.int64)
        if len(e) and len(x):
            keys.append((e[:, None] * n_xx + x[None, :]).ravel())
    if not keys:
        return []
    pair_keys, joint = np.unique(np.concatenate(keys), return_counts=True)
    e, x = pair_keys // n_xx, pair_keys % n_xx
    keep = joint >= min_count
    e, x, joint = e[keep], x[keep], joint[keep]
    dice = 2 * joint / (counts[0][e] + counts[1][x])
    # The best partner of each word: sort by (word, -dice, partner rank) and take the first.
    best_x = {int(a): int(b) for a, b in _firsts(e, x, dice)}
    best_e = {int(b): int(a) for b, a in _firsts(x, e, dice)}
    words = [list(vocab[0]), list(vocab[1])]
    return [(words[0][a], words[1][b]) for a, b in sorted(best_x.items()) if best_e.get(b) == a]


def _firsts(keys: np.ndarray, partners: np.ndarray, scores: np.ndarray) -> list[tuple[int, int]]:
    """(key, its best partner): the highest score, ties to the lower partner index."""
    order = np.lexsort((partners, -scores, keys))
    keys, partners = keys[order], partners[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return list(zip(keys[first].tolist(), partners[first].tolist(), strict=True))


def seed_rows(
    pairs: Sequence[tuple[str, str]], en_words: Sequence[str], xx_words: Sequence[str]
) -> list[tuple[int, int]]:
    """The seed pairs (en, xx) with both words in the vocabularies, as (xx row, en row)."""
    en_index = {w: i for i, w in enumerate(en_words)}
    xx_index = {w: i for i, w in enumerate(xx_words)}
    rows = {(xx_index[x], en_index[e]) for e, x in pairs if e in en_index and x in xx_index}
    return sorted(rows)


# -- training ------------------------------------------------------------------------------------
def train_side(
    sentences_path: Path,
    settings: Bisent2vecSettings,
    mapped: MappedSettings,
    threads: int,
) -> tuple[list[str], np.ndarray]:
    """fastText on one side's sentences: its words (most frequent first, `</s>` left out) and
    their input vectors."""
    model = fasttext_model(sentences_path, settings, mapped.model, mapped.window, threads)
    words = model.get_words()
    matrix = model.get_input_matrix()[: len(words)]
    rows = [i for i, w in enumerate(words) if w != EOS]
    if settings.max_vocab_size:
        rows = rows[: settings.max_vocab_size]
    return [words[i] for i in rows], np.asarray(matrix[rows], dtype=np.float32)


def train_mapped(
    pairs: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    lang: str,
    settings: Bisent2vecSettings | None = None,
    mapped: MappedSettings | None = None,
    *,
    seed_dictionary: str | os.PathLike[str] | None = None,
    threads: int = 1,
) -> dict[str, Any]:
    """Train both sides, map `lang` onto English, write the model directory; its stats.

    `pairs` is the trainer's input (`xlsent.bisent2vec.data.write_pairs`); `seed_dictionary`
    a MUSE file of (en, xx) seed pairs, or None for a lexicon induced from the pairs.
    """
    from xlsent.dictionaries import read_muse, write_muse

    settings = settings or Bisent2vecSettings()
    mapped = mapped or MappedSettings()
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    with open(pairs, encoding="utf-8") as f:
        lines = f.read().splitlines()
    vectors: dict[str, tuple[list[str], np.ndarray]] = {}
    with tempfile.TemporaryDirectory(prefix="xlsent-mapped-") as scratch:
        for side, code in enumerate(("en", lang)):
            path = Path(scratch) / f"{code}.txt"
            with open(path, "w", encoding="utf-8") as f:
                for line in lines:
                    text = line.split("\t")[side] if "\t" in line else ""
                    if text:
                        f.write(text + "\n")
            vectors[code] = train_side(path, settings, mapped, threads)
    en_words, en_vectors = vectors["en"]
    xx_words, xx_vectors = vectors[lang]
    train_seconds = time.perf_counter() - started
    if seed_dictionary is not None:
        seed_pairs, seed_source = read_muse(seed_dictionary), "dictionary"
    else:
        seed_pairs, seed_source = induce_lexicon(lines, mapped.induced_min_count), "induced"
    seed = seed_rows(seed_pairs, en_words, xx_words)
    en_unit, xx_unit = unit_rows(en_vectors), unit_rows(xx_vectors)
    if seed:
        w, history = fit_mapping(
            xx_unit,
            en_unit,
            seed,
            refinement=mapped.refinement,
            max_rank=mapped.max_rank,
            csls_k=mapped.csls_k,
        )
        best = max(history, key=lambda h: h["criterion"])
    else:
        # A language of a few dozen pairs (l10n's jv and sw) has a handful of words and no
        # seed pair among them: its vectors stay unmapped, so that the run's other languages
        # are still evaluated (its scores are chance, as they would be mapped).
        log.warning(
            "en-%s: none of the %d seed pairs has both words in the vocabularies (%d en, %d %s "
            "words): the %s vectors are left unmapped",
            lang,
            len(seed_pairs),
            len(en_words),
            len(xx_words),
            lang,
            lang,
        )
        w, history = np.eye(en_unit.shape[1], dtype=np.float32), []
        best = {"iteration": None}
    stats = {
        "method": "mapped",
        "langs": ["en", lang],
        "settings": dataclasses.asdict(settings),
        "mapped": dataclasses.asdict(mapped),
        "threads": threads,
        "pairs_file": str(pairs),
        "vocabulary": {"en": len(en_words), lang: len(xx_words)},
        # Words whose vector no update reached (every occurrence subsampled away): fastText
        # starts this build's rows at zero, and a zero vector retrieves nothing.
        "zero_vectors": {
            "en": int((~en_vectors.any(axis=1)).sum()),
            lang: int((~xx_vectors.any(axis=1)).sum()),
        },
        "seed": {
            "source": seed_source,
            "file": None if seed_dictionary is None else str(seed_dictionary),
            "pairs": len(seed_pairs),
            "pairs_in_vocab": len(seed),
        },
        "refinement": history,
        "best_iteration": best["iteration"],  # None: no seed pair, the vectors unmapped
        "train_seconds": train_seconds,
        "seconds": time.perf_counter() - started,
        "cpu_seconds": _cpu_seconds() - cpu_started,
        "peak_rss_mb": peak_rss_mb(),
    }
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        _write_vec(tmp / vectors_file("en"), en_words, en_unit)
        _write_vec(tmp / vectors_file(lang), xx_words, xx_unit @ w)
        write_muse([(en_words[e], xx_words[x]) for x, e in seed], tmp / SEED_FILE)
        write_json(tmp / STATS_FILE, stats)
    log.info(
        "mapped (fastText %s) en-%s: vocabulary %s, %d seed pairs in the vocabularies (%s), "
        "criterion by iteration %s, kept %s; %.1f s",
        mapped.model,
        lang,
        stats["vocabulary"],
        len(seed),
        seed_source,
        [round(h["criterion"], 4) for h in history],
        best["iteration"],
        stats["seconds"],
    )
    return stats
