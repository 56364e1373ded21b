"""Cosine-similarity nearest-neighbour search (exact, with faiss), precision at 1, and a
word's translations retrieved by nearest neighbour or by CSLS.

Every retrieval metric of the workflow (Tatoeba, the trainer's dev evaluation, word
translation) goes through `nearest`, so they all rank by the same cosine similarity.
`retrieve` is word translation's (`xlsent.evaluate.bli`), and the mapping baseline's refinement
(`xlsent.bisent2vec.mapped`): by cosine (`nn`) or by cross-domain similarity local scaling
(`csls`, MUSE's, Conneau, Lample et al. 2018, arXiv:1710.04087): the score of source x and
target y is 2 cos(x, y) - r_T(x) - r_S(y), where r_T(x) is the mean cosine of x's k nearest
target words and r_S(y) that of y's k nearest source words.
"""

from __future__ import annotations

import faiss
import numpy as np

# How `retrieve` ranks a word's translations: nearest neighbour by cosine, or CSLS.
RETRIEVALS = ("nn", "csls")
CSLS_K = 10  # the neighbours of CSLS's r (MUSE's `csls_knn_10`)


def _unit_rows(x: np.ndarray, name: str) -> np.ndarray:
    """An L2-normalised float32 copy of `x`: faiss normalises in place, the caller's array stays."""
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (one row per sentence), got shape {x.shape}")
    if not np.isfinite(x).all():
        # faiss would rank NaN scores arbitrarily and return a plausible-looking accuracy.
        raise ValueError(f"{name} contain NaN or infinite values: the encoder output is broken")
    unit = np.array(x, dtype=np.float32, order="C", copy=True)
    faiss.normalize_L2(unit)  # all-zero rows stay zero: similarity 0 to everything
    return unit


def nearest(queries: np.ndarray, keys: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The `k` keys most cosine-similar to each query: (scores, indices), each (n_queries, k).

    `k` is clamped to the number of keys. Rows are ordered best first.
    """
    q, x = _unit_rows(queries, "queries"), _unit_rows(keys, "keys")
    if q.shape[1] != x.shape[1]:
        raise ValueError(f"queries have dimension {q.shape[1]} but keys have {x.shape[1]}")
    if len(x) == 0:
        raise ValueError("no keys to search")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    scores, indices = index.search(q, min(k, len(x)))
    return scores, indices


def p_at_1(queries: np.ndarray, keys: np.ndarray) -> float:
    """The fraction (0–1) of queries whose nearest key is the key on the same row."""
    if len(queries) != len(keys):
        raise ValueError(
            f"{len(queries)} queries but {len(keys)} keys: the gold key of query i is key i, "
            "so both sides need the same number of rows"
        )
    _, indices = nearest(queries, keys, k=1)
    return float(np.mean(indices[:, 0] == np.arange(len(queries))))


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def mean_topk_similarity(queries: np.ndarray, keys: np.ndarray, k: int = CSLS_K) -> np.ndarray:
    """For each query, the mean cosine similarity of its k nearest keys (CSLS's r)."""
    scores, _ = nearest(queries, keys, k=k)
    return scores.mean(axis=1)


def retrieve(
    queries: np.ndarray,
    src_all: np.ndarray,
    tgt_all: np.ndarray,
    method: str = "nn",
    k: int = 10,
    csls_k: int = CSLS_K,
    batch: int = 1024,
) -> np.ndarray:
    """The indices (into `tgt_all`) of the k best translations of each query, best first.

    `src_all` is the whole source vocabulary (CSLS's r_S of a target word is taken over it).
    A `k` above the target vocabulary's size returns all of it (`xlsent.evaluate.bli.evaluate`
    warns).
    """
    if method not in RETRIEVALS:
        raise ValueError(f"unknown retrieval {method!r}; use one of {', '.join(RETRIEVALS)}")
    q, t = _unit(queries), _unit(tgt_all)
    k = min(k, len(t))
    if method == "nn":
        _, indices = nearest(q, t, k=k)
        return indices
    r_src = mean_topk_similarity(q, t, csls_k)  # r_T(x) of each query
    r_tgt = mean_topk_similarity(t, _unit(src_all), csls_k)  # r_S(y) of each target word
    out = np.empty((len(q), k), dtype=np.int64)
    for start in range(0, len(q), batch):
        scores = 2 * q[start : start + batch] @ t.T - r_src[start : start + batch, None] - r_tgt
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
        out[start : start + batch] = np.take_along_axis(top, order, axis=1)
    return out
