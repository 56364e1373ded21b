"""Margin-based mining (xlsent.evaluate.mining) against a worked example, and the faiss
indexes against exact search."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import yaml
from support import ROOT

from xlsent.evaluate.mining import (
    MiningSettings,
    best_threshold,
    extract,
    ivf_lists,
    knn,
    margin_scores,
    mine,
    neighbourhood_means,
    unit_rows,
)

# The worked example. y is the first three unit axes of R^4 and each x row is a unit vector
# whose first three coordinates are its cosines with y0, y1, y2 (the fourth takes up the
# rest of its length), so the cosine matrix S[i, j] = cos(x_i, y_j) is exactly:
#
#          y0    y1    y2
#   x0    0.8   0.4   0.1
#   x1    0.3   0.7   0.5
#   x2    0.2   0.6   0.45
#
# With k = 2, the mean cosine of each sentence's 2 nearest neighbours:
#   x0: (0.8 + 0.4) / 2 = 0.6     y0: (0.8 + 0.3) / 2 = 0.55
#   x1: (0.7 + 0.5) / 2 = 0.6     y1: (0.7 + 0.6) / 2 = 0.65
#   x2: (0.6 + 0.45) / 2 = 0.525  y2: (0.5 + 0.45) / 2 = 0.475
# and the ratio margin S[i, j] / ((mean(x_i) + mean(y_j)) / 2) of the candidates:
#   x0-y0 0.8 / 0.575 = 1.391304   x0-y1 0.4 / 0.625 = 0.64
#   x1-y1 0.7 / 0.625 = 1.12       x1-y2 0.5 / 0.5375 = 0.930233
#   x2-y1 0.6 / 0.5875 = 1.021277  x2-y2 0.45 / 0.5 = 0.9
#   x1-y0 0.3 / 0.575 = 0.521739   (y0's second neighbour)
# Forward (each x's best): x0-y0, x1-y1, x2-y1. Backward (each y's best): y0-x0, y1-x1,
# y2-x1 (0.930233 > 0.9). Intersection: x0-y0, x1-y1 (y1 chose x1, not x2). Max: all six
# best first, each sentence once: x0-y0 (1.39), x1-y1 (1.12); x2-y1 and x1-y2 reuse a
# sentence. x2 and y2, a true pair, are never proposed: y2 prefers x1.
COSINES = np.array([[0.8, 0.4, 0.1], [0.3, 0.7, 0.5], [0.2, 0.6, 0.45]])
X = np.hstack([COSINES, np.sqrt(1 - (COSINES**2).sum(axis=1, keepdims=True))]).astype(np.float32)
Y = np.eye(3, 4, dtype=np.float32)
K2 = MiningSettings(k=2)


def _pairs(candidates) -> list[tuple[int, int, float]]:
    return [
        (int(s), int(t), round(float(v), 6))
        for s, t, v in zip(candidates.src, candidates.trg, candidates.score, strict=True)
    ]


def test_knn_and_neighbourhood_means_of_the_worked_example():
    sims, ids = knn(X.copy(), Y.copy(), K2)
    assert ids.tolist() == [[0, 1], [1, 2], [1, 2]]
    assert neighbourhood_means(sims) == pytest.approx([0.6, 0.6, 0.525], abs=1e-6)
    back_sims, back_ids = knn(Y.copy(), X.copy(), K2)
    assert back_ids.tolist() == [[0, 1], [1, 2], [1, 2]]
    assert neighbourhood_means(back_sims) == pytest.approx([0.55, 0.65, 0.475], abs=1e-6)


def test_ratio_margin_of_the_worked_example():
    sims, ids = knn(X.copy(), Y.copy(), K2)
    back_sims, _ = knn(Y.copy(), X.copy(), K2)
    scores = margin_scores(sims, ids, neighbourhood_means(sims), neighbourhood_means(back_sims))
    expected = [[0.8 / 0.575, 0.4 / 0.625], [0.7 / 0.625, 0.5 / 0.5375], [0.6 / 0.5875, 0.9]]
    assert scores == pytest.approx(np.array(expected), abs=1e-6)
    distance = margin_scores(
        sims, ids, neighbourhood_means(sims), neighbourhood_means(back_sims), "distance"
    )
    assert distance[0, 0] == pytest.approx(0.8 - 0.575, abs=1e-6)


@pytest.mark.parametrize(
    ("retrieval", "expected"),
    [
        ("fwd", [(0, 0, 1.391304), (1, 1, 1.12), (2, 1, 1.021277)]),
        ("bwd", [(0, 0, 1.391304), (1, 1, 1.12), (1, 2, 0.930233)]),
        ("intersect", [(0, 0, 1.391304), (1, 1, 1.12)]),
        ("max", [(0, 0, 1.391304), (1, 1, 1.12)]),
    ],
)
def test_retrieval_of_the_worked_example(retrieval, expected):
    settings = dataclasses.replace(K2, retrieval=retrieval)
    assert _pairs(mine(X.copy(), Y.copy(), settings)) == expected


def test_mining_normalises_and_leaves_other_arrays_alone():
    # Scaled rows mine like unit rows; a float64 input is copied, not changed.
    x = X.astype(np.float64) * np.array([[2.0], [3.0], [0.5]])
    before = x.copy()
    assert _pairs(mine(x, Y * 7, K2)) == [(0, 0, 1.391304), (1, 1, 1.12)]
    assert np.array_equal(x, before)
    with pytest.raises(ValueError, match="NaN"):
        unit_rows(np.array([[np.nan, 1.0]]), "source vectors")


def test_best_threshold_worked_example():
    # Best first, with gold 4: cut after 1: F1 = 2·1/(1+4) = 0.4; after 2: 4/6 = 0.667;
    # after 3: 4/7 = 0.571; after 4: 6/8 = 0.75 (P 3/4, R 3/4); after 5: 6/9 = 0.667.
    # The threshold lies halfway between the 4th and 5th scores: (0.93 + 0.5) / 2.
    scores = np.array([1.39, 1.12, 1.02, 0.93, 0.5])
    correct = np.array([True, True, False, True, False])
    best = best_threshold(scores, correct, gold=4)
    assert best.threshold == pytest.approx(0.715)
    assert (best.extracted, best.correct) == (4, 3)
    assert (best.precision, best.recall, best.f1) == pytest.approx((75.0, 75.0, 75.0))
    # Applied as a threshold, it extracts what it was chosen on.
    assert extract(scores, correct, 4, best.threshold) == best
    # Another split at this threshold: 2 of 3 extracted are gold, of 5 gold pairs.
    other = extract(np.array([2.0, 0.8, 0.71, 0.72]), np.array([True, True, True, False]), 5, 0.715)
    assert (other.extracted, other.correct) == (3, 2)
    assert other.precision == pytest.approx(200 / 3)
    assert other.recall == pytest.approx(40.0)
    assert other.f1 == pytest.approx(2 * (200 / 3) * 40 / (200 / 3 + 40))


def test_best_threshold_never_cuts_between_equal_scores():
    # Cutting after the first 1.0 alone would give F1 1, but a threshold keeps both 1.0s:
    # after both, 2·1/(2+1) = 0.667; after all three, 2·1/(3+1) = 0.5. Threshold (1.0+0.2)/2.
    scores, correct = np.array([1.0, 1.0, 0.2]), np.array([True, False, False])
    best = best_threshold(scores, correct, gold=1)
    assert best.threshold == pytest.approx(0.6)
    assert best.extracted == 2
    assert best.f1 == pytest.approx(200 / 3)
    # Keeping every candidate is best: the threshold is the float just below the last score,
    # and extraction (strictly above, as DAP's) keeps them all.
    scores, correct = np.array([2.0, 1.0]), np.array([True, True])
    best = best_threshold(scores, correct, 3)
    assert best.threshold == np.nextafter(1.0, 0.0)
    assert extract(scores, correct, 3, best.threshold).extracted == 2


def test_extraction_is_strictly_above_the_threshold():
    # DAP's eval_bucc.py extracts `scores[i] > threshold`: a score equal to it is left out.
    scores, correct = np.array([1.5, 1.2, 1.2, 0.9]), np.array([True, True, False, False])
    assert extract(scores, correct, 2, 1.2).extracted == 1
    assert extract(scores, correct, 2, 1.1).extracted == 3


def test_best_threshold_of_scores_a_float_apart_keeps_the_higher():
    # The midpoint of two adjacent floats rounds to one of them: the threshold must still
    # extract the higher score and not the lower.
    high = np.float32(1.0)
    low = np.nextafter(high, np.float32(0.0))
    scores, correct = np.array([high, low], np.float32), np.array([True, False])
    best = best_threshold(scores, correct, 1)
    assert best.extracted == 1
    assert extract(scores, correct, 1, best.threshold).extracted == 1


def test_best_threshold_without_a_correct_candidate_extracts_nothing():
    best = best_threshold(np.array([1.2, 1.1]), np.array([False, False]), gold=3)
    assert math.isinf(best.threshold)
    assert (best.extracted, best.f1) == (0, 0.0)


def test_worked_example_mined_against_its_gold():
    # Gold x_i–y_i: max retrieval proposes x0-y0 and x1-y1, both right; x2-y2 is missed.
    candidates = mine(X.copy(), Y.copy(), K2)
    correct = candidates.src == candidates.trg
    best = best_threshold(candidates.score, correct, gold=3)
    assert best.threshold == pytest.approx(1.12, abs=1e-6)
    assert (best.precision, best.recall, best.f1) == pytest.approx((100.0, 200 / 3, 80.0))


def clustered(
    n: int, dim: int, seed: int, clusters: int = 20, spread: float = 0.6, centres_seed: int = 0
) -> np.ndarray:
    """Unit vectors around `clusters` centres (drawn by `centres_seed`), as sentence
    embeddings are: not uniform on the sphere."""
    centres = np.random.default_rng(centres_seed).standard_normal((clusters, dim))
    rng = np.random.default_rng(seed)
    x = centres[rng.integers(clusters, size=n)] + spread * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def planted(n_pairs: int, n_noise: int, dim: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """x and y whose first `n_pairs` rows are translations (y = x + a little noise), each
    side with `n_noise` more sentences of its own about the same topics (clusters)."""
    x = clustered(n_pairs + n_noise, dim, seed=2, spread=1.0)
    y = np.concatenate([x[:n_pairs], clustered(n_noise, dim, seed=3, spread=1.0)])
    noise = np.random.default_rng(1).standard_normal((n_pairs, dim)).astype(np.float32)
    y[:n_pairs] += 0.05 * noise
    return x, y


def test_planted_pairs_are_mined_first():
    x, y = planted(n_pairs=100, n_noise=300)
    candidates = mine(x, y)
    correct = (candidates.src == candidates.trg) & (candidates.src < 100)
    best = best_threshold(candidates.score, correct, gold=100)
    assert best.f1 == 100.0
    assert correct[:100].all()  # the 100 best-scoring candidates are the planted pairs


def _index_data() -> tuple[np.ndarray, np.ndarray]:
    """2000 keys and 300 queries in 200 topics: enough that a cheap index misses some."""
    return clustered(2000, 32, seed=4, clusters=200), clustered(300, 32, seed=5, clusters=200)


def _recall(found: np.ndarray, exact: np.ndarray) -> float:
    """recall@k: the share of the exact k nearest neighbours that the index found."""
    return float(
        np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found, exact, strict=True)])
    )


def test_exhaustive_ivf_equals_exact_search_and_batches_change_nothing():
    keys, queries = _index_data()
    exact_sims, exact_ids = knn(queries, keys, MiningSettings())
    # Visiting every inverted list is an exhaustive search over the same stored vectors.
    ivf = MiningSettings(knn="ivf", ivf_nlist=32, ivf_nprobe=32)
    ivf_sims, ivf_ids = knn(queries, keys, ivf)
    assert np.array_equal(ivf_ids, exact_ids)
    assert np.allclose(ivf_sims, exact_sims, atol=1e-5)
    small_batches = knn(queries, keys, MiningSettings(search_batch_size=7))
    assert np.array_equal(small_batches[1], exact_ids)


@pytest.mark.parametrize(
    ("cheap", "thorough"),
    [
        (
            MiningSettings(knn="hnsw", hnsw_m=4, hnsw_ef_search=4),
            MiningSettings(knn="hnsw", hnsw_m=16, hnsw_ef_search=64),
        ),
        (
            MiningSettings(knn="ivf", ivf_nlist=32, ivf_nprobe=1),
            MiningSettings(knn="ivf", ivf_nlist=32, ivf_nprobe=8),
        ),
    ],
    ids=["hnsw", "ivf"],
)
def test_approximate_indexes_find_more_of_the_exact_neighbours_with_more_effort(cheap, thorough):
    keys, queries = _index_data()
    _, exact = knn(queries, keys, MiningSettings())
    cheap_recall = _recall(knn(queries, keys, cheap)[1], exact)
    thorough_recall = _recall(knn(queries, keys, thorough)[1], exact)
    assert cheap_recall < 0.9 < 0.95 <= thorough_recall
    # Mining through the thorough index still ranks every planted pair first.
    x, y = planted(n_pairs=100, n_noise=300)
    candidates = mine(x, y, thorough)
    correct = (candidates.src == candidates.trg) & (candidates.src < 100)
    assert best_threshold(candidates.score, correct, gold=100).f1 == 100.0


def test_ivf_lists_follow_the_rule_of_thumb():
    assert ivf_lists(400_000, None) == 2530  # 4·√400000 = 2529.8
    assert ivf_lists(1000, None) == 25  # 4·√1000 = 126, but 1000 / 39 = 25 lists at most
    assert ivf_lists(10, 8) == 1


def test_mining_settings_are_the_schemas():
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    block = schema["properties"]["evaluate"]["properties"]["bucc"]["properties"]["mining"]
    defaults = {key: prop["default"] for key, prop in block["properties"].items()}
    fields = {field.name: field.default for field in dataclasses.fields(MiningSettings)}
    assert fields == defaults
    with pytest.raises(ValueError, match="retrieval"):
        MiningSettings(retrieval="both")
