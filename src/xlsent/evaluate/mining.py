"""Margin-based bitext mining (Artetxe and Schwenk, 2019, arXiv:1811.01136), as LASER mines.

Two sets of sentence vectors, x (the foreign side) and y (English), are searched against
each other for their k nearest neighbours by cosine similarity (k = 4), and every candidate
pair gets the ratio margin of their paper's eq. 1 (LASER's `mine_bitexts.py`):

    score(x, y) = cos(x, y) / ( Σ_{z ∈ NN_k(x)} cos(x, z) / 2k + Σ_{z ∈ NN_k(y)} cos(y, z) / 2k )

(`distance` subtracts the same denominator instead, `absolute` is the cosine alone). Each x
keeps its best-scoring neighbour (forward), each y its best (backward); `retrieval` decides
which candidates are proposed: `fwd`, `bwd`, `intersect` (pairs both directions chose) or
`max` (both directions' candidates, best score first, each sentence used at most once; LASER's
default and ours). A threshold on the score then decides which candidates are extracted: the
one with the best F1 on a split with gold pairs (LASER's `BuccOptimize`), applied to another.

Memory: the search never forms the similarity matrix. Exact search (`knn: flat`) runs
faiss's blocked inner-product kNN over the keys as they are, one batch of
`search_batch_size` queries at a time, so beyond the two sets of vectors (n·d each) it holds
the batch's k results and faiss's fixed-size score block. The approximate indexes (`ivf`:
IVF-Flat, `hnsw`: HNSW-Flat, both inner product) copy the keys they index: one more n·d.
Both store the vectors uncompressed, so the cosine of every candidate they return is exact;
only which neighbours are found may differ (benchmarks/mining.py measures recall@k).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import faiss
import numpy as np
from tqdm import tqdm

from xlsent.defaults import schema_defaults

log = logging.getLogger(__name__)

MARGINS = ("ratio", "distance", "absolute")
RETRIEVALS = ("max", "intersect", "fwd", "bwd")
SEARCHES = ("flat", "ivf", "hnsw")
# What a sentence standing on several lines of its side is (`xlsent.evaluate.bucc.mine_split`).
REPEATED = ("drop", "keep")
# faiss asks for at least 39 training points per IVF list; we take this many at most.
_IVF_TRAIN_PER_LIST = 64


@dataclass(frozen=True)
@schema_defaults("evaluate.bucc.mining")
class MiningSettings:
    """The settings of `evaluate.bucc.mining` (workflow/schemas/config.schema.yaml).

    `ivf_nlist` None takes 4·√n lists for n keys (faiss's rule of thumb for IVF), at most
    n / 39 so that every list has training points. `repeated` is read by the BUCC evaluation
    (`xlsent.evaluate.bucc.mine_split`), which decides what a split's rows are.
    """

    k: int
    margin: str
    retrieval: str
    knn: str
    ivf_nlist: int | None
    ivf_nprobe: int
    hnsw_m: int
    hnsw_ef_search: int
    hnsw_ef_construction: int
    search_batch_size: int
    repeated: str

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("margin", self.margin, MARGINS),
            ("retrieval", self.retrieval, RETRIEVALS),
            ("knn", self.knn, SEARCHES),
            ("repeated", self.repeated, REPEATED),
        ):
            if value not in allowed:
                raise ValueError(f"mining {name} is one of {', '.join(allowed)}, not {value!r}")
        if self.k < 1 or self.search_batch_size < 1:
            raise ValueError("mining k and search_batch_size must be at least 1")


@dataclass(frozen=True)
class Candidates:
    """Proposed pairs: source (x) row `src[i]` with target (y) row `trg[i]`, margin `score[i]`,
    best score first."""

    src: np.ndarray  # int64
    trg: np.ndarray  # int64
    score: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.score)

    def take(self, keep: np.ndarray) -> Candidates:
        return Candidates(self.src[keep], self.trg[keep], self.score[keep])


def unit_rows(x: np.ndarray, name: str) -> np.ndarray:
    """`x` as C-ordered float32 rows of unit length (all-zero rows stay zero).

    Normalises in place when `x` is already a C-ordered float32 array, so that 400K × 768
    vectors are not held twice: the caller's array changes.
    """
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (one row per sentence), got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} contain NaN or infinite values: the encoder output is broken")
    unit = np.ascontiguousarray(x, dtype=np.float32)
    faiss.normalize_L2(unit)
    return unit


def ivf_lists(n: int, nlist: int | None) -> int:
    """The IVF lists for `n` keys: `nlist`, or 4·√n; at most n / 39 (training points per list)."""
    wanted = nlist if nlist is not None else round(4 * math.sqrt(n))
    return max(1, min(wanted, n // 39))


def build_index(keys: np.ndarray, settings: MiningSettings) -> faiss.Index | None:
    """The approximate inner-product index of unit `keys` (`ivf`, `hnsw`); None for `flat`,
    whose exact search reads the keys as they are."""
    n, dim = keys.shape
    if settings.knn == "flat":
        return None
    if settings.knn == "ivf":
        nlist = ivf_lists(n, settings.ivf_nlist)
        index = faiss.index_factory(dim, f"IVF{nlist},Flat", faiss.METRIC_INNER_PRODUCT)
        # A seeded sample trains the coarse quantizer (k-means): more adds time, not quality.
        size = min(n, _IVF_TRAIN_PER_LIST * nlist)
        rows = np.sort(np.random.default_rng(0).choice(n, size=size, replace=False))
        index.train(keys[rows])
        index.nprobe = min(settings.ivf_nprobe, nlist)
    else:
        index = faiss.IndexHNSWFlat(dim, settings.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = settings.hnsw_ef_construction
        index.hnsw.efSearch = settings.hnsw_ef_search
    step = max(settings.search_batch_size, 1)
    for start in tqdm(range(0, n, step), desc=f"{settings.knn} index", mininterval=10):
        index.add(keys[start : start + step])
    return index


def knn(
    queries: np.ndarray, keys: np.ndarray, settings: MiningSettings, desc: str = "knn"
) -> tuple[np.ndarray, np.ndarray]:
    """The `settings.k` (at most all) keys most cosine-similar to each unit query, by the
    search of `settings.knn`, in batches: (similarities float32, indices int64), best first.

    An approximate index may find fewer than k neighbours for a query; the missing ones
    have index -1 and similarity NaN.
    """
    if queries.shape[1] != keys.shape[1]:
        raise ValueError(f"queries have dimension {queries.shape[1]} but keys {keys.shape[1]}")
    if len(keys) == 0:
        raise ValueError("no keys to search")
    k = min(settings.k, len(keys))
    if k < settings.k:
        # The margin's neighbourhood is then every key; the caller records the k used.
        log.warning(
            "%s: k = %d neighbours asked of %d sentences: every one is a neighbour "
            "(evaluate.bucc.mining.k is above the set's size)",
            desc,
            settings.k,
            len(keys),
        )
    index = build_index(keys, settings)
    sims = np.empty((len(queries), k), dtype=np.float32)
    ids = np.empty((len(queries), k), dtype=np.int64)
    step = settings.search_batch_size
    for start in tqdm(range(0, len(queries), step), desc=desc, mininterval=10):
        batch = queries[start : start + step]
        if index is None:
            found = faiss.knn(batch, keys, k, metric=faiss.METRIC_INNER_PRODUCT)
        else:
            found = index.search(batch, k)
        sims[start : start + len(batch)], ids[start : start + len(batch)] = found
    sims[ids < 0] = np.nan
    return sims, ids


def neighbourhood_means(sims: np.ndarray) -> np.ndarray:
    """Each row's mean similarity to its k nearest neighbours (the neighbours found)."""
    found = ~np.isnan(sims)
    total = np.where(found, sims, 0).sum(axis=1, dtype=np.float64)
    return total / np.maximum(found.sum(axis=1), 1)


def margin_scores(
    sims: np.ndarray,
    ids: np.ndarray,
    own_means: np.ndarray,
    other_means: np.ndarray,
    margin: str = "ratio",
) -> np.ndarray:
    """The margin score of every (query, neighbour) of a kNN result, float64 of its shape.

    Query i with neighbour j: margin(cos, (own_means[i] + other_means[j]) / 2), the means of
    each side's k nearest similarities (Artetxe and Schwenk 2019, eq. 1, with LASER's
    `(fwd_mean + bwd_mean) / 2`). Neighbours not found score -inf.
    """
    found = ids >= 0
    cos = np.where(found, sims, 0).astype(np.float64)
    scale = (own_means[:, None] + other_means[np.where(found, ids, 0)]) / 2
    if margin == "ratio":
        score = cos / scale
    elif margin == "distance":
        score = cos - scale
    elif margin == "absolute":
        score = cos
    else:
        raise ValueError(f"margin is one of {', '.join(MARGINS)}, not {margin!r}")
    return np.where(found, score, -np.inf)


def _best(scores: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each query's best-scoring neighbour: (its index, its score)."""
    column = scores.argmax(axis=1)
    rows = np.arange(len(scores))
    return ids[rows, column], scores[rows, column]


def _sorted(src: np.ndarray, trg: np.ndarray, score: np.ndarray) -> Candidates:
    """Candidates best first, less those of a query whose search found no neighbour."""
    found = (src >= 0) & (trg >= 0)
    src, trg, score = src[found], trg[found], score[found]
    order = np.argsort(-score, kind="stable")
    return Candidates(src[order], trg[order], score[order])


def _one_to_one(candidates: Candidates) -> np.ndarray:
    """LASER's `max` retrieval: walking best first, keep a pair only if neither of its
    sentences is in a pair kept before (the mask of kept candidates)."""
    used_src: set[int] = set()
    used_trg: set[int] = set()
    keep = np.zeros(len(candidates), dtype=bool)
    for i, (s, t) in enumerate(zip(candidates.src.tolist(), candidates.trg.tolist(), strict=True)):
        if s not in used_src and t not in used_trg:
            used_src.add(s)
            used_trg.add(t)
            keep[i] = True
    return keep


@dataclass(frozen=True)
class Neighbours:
    """The k nearest neighbours both ways: x→y (rows of x) and y→x (rows of y)."""

    x2y_sim: np.ndarray
    x2y_ind: np.ndarray
    y2x_sim: np.ndarray
    y2x_ind: np.ndarray


def neighbours(x: np.ndarray, y: np.ndarray, settings: MiningSettings) -> Neighbours:
    """The kNN search of unit `x` against unit `y` and back (`knn`)."""
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"source vectors have dimension {x.shape[1]} but target {y.shape[1]}")
    return Neighbours(*knn(x, y, settings, desc="x→y kNN"), *knn(y, x, settings, desc="y→x kNN"))


def candidates(found: Neighbours, settings: MiningSettings) -> Candidates:
    """The pairs `settings.retrieval` proposes from the neighbours, by margin, best first."""
    x2y_mean, y2x_mean = neighbourhood_means(found.x2y_sim), neighbourhood_means(found.y2x_sim)
    fwd = margin_scores(found.x2y_sim, found.x2y_ind, x2y_mean, y2x_mean, settings.margin)
    bwd = margin_scores(found.y2x_sim, found.y2x_ind, y2x_mean, x2y_mean, settings.margin)
    fwd_best, fwd_score = _best(fwd, found.x2y_ind)
    bwd_best, bwd_score = _best(bwd, found.y2x_ind)
    rows_x, rows_y = np.arange(len(fwd_best)), np.arange(len(bwd_best))
    if settings.retrieval == "fwd":
        return _sorted(rows_x, fwd_best, fwd_score)
    if settings.retrieval == "bwd":
        return _sorted(bwd_best, rows_y, bwd_score)
    if settings.retrieval == "intersect":
        mutual = (fwd_best >= 0) & (bwd_best[np.maximum(fwd_best, 0)] == rows_x)
        return _sorted(rows_x[mutual], fwd_best[mutual], fwd_score[mutual])
    both = _sorted(
        np.concatenate([rows_x, bwd_best]),
        np.concatenate([fwd_best, rows_y]),
        np.concatenate([fwd_score, bwd_score]),
    )
    return both.take(_one_to_one(both))


def mine(x: np.ndarray, y: np.ndarray, settings: MiningSettings = MiningSettings()) -> Candidates:
    """Mine pairs of rows of `x` (source) and `y` (target) by margin (see the module's text).

    Both are L2-normalised first, in place when they are C-ordered float32 (`unit_rows`).
    Candidates are returned best first; a row pairs with at most one row of the other side
    except under `fwd` or `bwd` retrieval.
    """
    x, y = unit_rows(x, "source vectors"), unit_rows(y, "target vectors")
    if len(x) == 0 or len(y) == 0:
        empty = np.empty(0, dtype=np.int64)
        return Candidates(empty, empty, np.empty(0))
    return candidates(neighbours(x, y, settings), settings)


@dataclass(frozen=True)
class Extraction:
    """What a threshold extracts from candidates: the threshold, the counts, P/R/F1 in %."""

    threshold: float
    extracted: int
    correct: int
    gold: int

    @property
    def precision(self) -> float:
        return 100 * self.correct / self.extracted if self.extracted else 0.0

    @property
    def recall(self) -> float:
        return 100 * self.correct / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def extract(scores: np.ndarray, correct: np.ndarray, gold: int, threshold: float) -> Extraction:
    """The candidates with score > `threshold` against `gold` pairs; `correct` marks the
    candidates that are gold pairs. Strictly above, as DAP's `eval_bucc.py` (`mine_bitext`)
    extracts; LASER's `BuccExtract` takes ≥. The two differ only on a score equal to the
    threshold, which `best_threshold` never chooses."""
    taken = scores > threshold
    return Extraction(threshold, int(taken.sum()), int((taken & correct).sum()), gold)


def best_threshold(scores: np.ndarray, correct: np.ndarray, gold: int) -> Extraction:
    """The threshold with the best F1 on these candidates (LASER's `BuccOptimize`).

    Candidates are cut best first; a cut falls only between different scores (tied
    candidates are extracted together, as `extract` would), and the threshold lies halfway
    to the next lower score (DAP's `bucc_optimize`; when every candidate is kept, the float
    just below the last score, where DAP's code indexes past its list). Of equal F1 the
    highest threshold wins. Without a single correct candidate nothing can be extracted
    well: the threshold is +inf (nothing extracted, F1 0).
    """
    order = np.argsort(-scores, kind="stable")
    ranked, hits = scores[order], correct[order]
    if not hits.any():
        return Extraction(math.inf, 0, 0, gold)
    extracted = np.arange(1, len(ranked) + 1)
    found = np.cumsum(hits)
    # Cut only where the next score is lower: the ends of runs of equal scores.
    ends = np.flatnonzero(np.append(ranked[1:] < ranked[:-1], True))
    f1 = 2 * found[ends] / (extracted[ends] + gold)  # 2PR / (P + R) in counts
    at = ends[int(np.argmax(f1))]
    if at + 1 == len(ranked):
        threshold = np.nextafter(ranked[at], -np.inf)
    else:
        # Extraction is strictly above: the midpoint must lie below the kept score, which
        # rounding breaks when the two scores are a float apart; the lower score then serves.
        middle = (ranked[at] + ranked[at + 1]) / 2
        threshold = middle if middle < ranked[at] else ranked[at + 1]
    return Extraction(float(threshold), int(extracted[at]), int(found[at]), gold)
