"""Cosine-similarity nearest-neighbour search (exact, with faiss) and precision at 1.

Every retrieval metric of the workflow (Tatoeba, the trainer's dev evaluation) goes through
`nearest`, so they all rank by the same cosine similarity.
"""

from __future__ import annotations

import faiss
import numpy as np


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
