"""Hard negatives, step 2: per language, each training pair's hardest English negatives among
the English sentences of the language's pool (its training pairs, or the share a run's
`train.max_pairs` keeps), without false negatives, from the shards' vectors.

For the pair (x_i, y_i) with cosine p_i = cos(x_i, y_i) under the starting model, a candidate
is an English sentence y of the language's pairs, scored c = cos(x_i, y); the pair keeps the
`mined` highest-scoring candidates that are not its translation:

- one candidate per English text: the pairs' English sentences are grouped by their text
  after `normalise` (case folded, punctuation removed, spaces collapsed), and each group is
  one candidate, its first pair's row. LASER's `mine_bitexts.py` likewise removes duplicate
  sentences before it searches (`--unify`); here the grouping also absorbs the differences
  of case, punctuation and spacing that software strings differ by;
- not the pair's own English text: its group is left out, so a duplicate translation (another
  pair whose English is the same text, up to `normalise`) is never a negative;
- below the similarity ceiling: a candidate with c > p_i − r·|p_i| (`relative_margin` r) is
  skipped as a probable translation the corpus did not pair (a paraphrase of y_i). This is
  sentence-transformers' `mine_hard_negatives(relative_margin=r)` (the magnitude, not
  (1 − r)·p_i, so that a negative p_i does not raise the ceiling), after NV-Retriever's
  positive-aware mining (Moreira et al. 2024, arXiv:2407.15831), whose best setting, 95 %
  of the positive's score (r = 0.05), is the default. A fixed ceiling (sentence-transformers'
  `max_score`) is not offered: a model's cosines sit on its own scale (multilingual-e5's
  unrelated pairs score about 0.7, a scratch model's near 0), and the positive's own score
  is the one reference every pair has. r = 0 keeps every candidate the model ranks at or
  below the pair's own translation.

The search is exact (faiss `IndexFlatIP` over unit vectors, on the GPUs faiss sees, else the
CPU), `depth` candidates a query at first and deeper for the queries that had fewer than
`mined` left after the filters, until every candidate was seen: the result is the `mined`
best kept candidates, whatever the depth. A pair with fewer (a small language) keeps -1 in
the slots left.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from xlsent.defaults import schema_defaults
from xlsent.failures.unreadable import reading
from xlsent.io import atomic_path, write_json

# Queries × candidates held at once by a search (float32 scores and int64 ids: about 200 MB).
SEARCH_CELLS = 2**24


@dataclass(frozen=True)
@schema_defaults("hard_negatives.mine")
class MiningSettings:
    """Which candidates become a pair's hard negatives (`hard_negatives.mine`)."""

    mined: int
    relative_margin: float


@dataclass(frozen=True)
class Mined:
    """Each pair's hard negatives (rows of the language's pairs, -1 in an empty slot, the
    most similar first), their cosines (NaN in an empty slot), each pair's own cosine, and
    the counts of what the filters did."""

    rows: np.ndarray  # N×mined int32
    scores: np.ndarray  # N×mined float32
    positive: np.ndarray  # N float32
    counts: dict


def negatives_schema(mined: int) -> pa.Schema:
    """The stage's file: a row per training pair, in the pairs' order."""
    return pa.schema(
        [
            ("id", pa.int64()),
            ("negatives", pa.list_(pa.int32(), mined)),
            ("scores", pa.list_(pa.float32(), mined)),
            ("positive", pa.float32()),
        ]
    )


_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    """A sentence's text as duplicate translations are compared: case folded (NFKC first),
    every punctuation character (Unicode category P*) removed, runs of spaces made one, the
    ends stripped."""
    text = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))
    return _SPACES.sub(" ", kept).strip()


def mine(xx: np.ndarray, en: np.ndarray, english: list[str], settings: MiningSettings) -> Mined:
    """The hard negatives of pairs (xx[i], en[i]) (N×d sentence vectors of each side;
    `english`: the N English texts), as the module docstring describes."""
    xx, en = _unit(xx), _unit(en)
    positive = np.einsum("nd,nd->n", xx, en)
    texts, first, group = np.unique(
        [normalise(t) for t in english], return_index=True, return_inverse=True
    )
    ceiling = positive - settings.relative_margin * np.abs(positive)
    n, k = len(xx), settings.mined
    rows = np.full((n, k), -1, dtype=np.int32)
    scores = np.full((n, k), np.nan, dtype=np.float32)
    above = np.zeros(n, dtype=np.int64)  # candidates skipped for the ceiling, per pair
    if n:
        index = _index(en[first])
        pending, depth = np.arange(n), min(len(first), 4 * (k + 1))
        while len(pending):
            found, skipped, enough = _kept(index, xx, pending, depth, group, ceiling, k)
            for slot, (cands, cand_scores) in enumerate(found):
                rows[pending[slot], : len(cands)] = first[cands]
                scores[pending[slot], : len(cands)] = cand_scores
            above[pending] = skipped
            if depth >= len(first):
                break
            pending, depth = pending[~enough], min(len(first), depth * 4)
    kept = (rows >= 0).sum(1)
    counts = {
        "pairs": n,
        "english_texts": len(texts),
        # Pairs whose English text (up to `normalise`) another pair has too: the duplicate
        # translations, never each other's negatives.
        "shared_english": int((np.bincount(group)[group] > 1).sum()) if n else 0,
        "above_ceiling": int(above.sum()),
        "pairs_above_ceiling": int((above > 0).sum()),
        "negatives": int(kept.sum()),
        "pairs_short": int((kept < k).sum()),
        "mean_positive": round(float(positive.mean()), 4) if n else None,
        "mean_negative": round(float(np.nanmean(scores)), 4) if kept.any() else None,
    }
    return Mined(rows, scores, positive.astype(np.float32), counts)


def _unit(vectors: np.ndarray) -> np.ndarray:
    """Unit rows in float32 (a zero row stays zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.maximum(norms, 1e-12))


def _index(keys: np.ndarray):
    """An exact inner-product index over `keys`: on every GPU faiss sees, else the CPU."""
    import faiss

    index = faiss.IndexFlatIP(keys.shape[1])
    if hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0:
        index = faiss.index_cpu_to_all_gpus(index)
    index.add(keys)
    return index


def _kept(
    index,
    xx: np.ndarray,
    queries: np.ndarray,
    depth: int,
    group: np.ndarray,
    ceiling: np.ndarray,
    k: int,
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, np.ndarray]:
    """The `depth` nearest English texts of each query pair, filtered: for each, the groups
    and cosines of its first `k` kept candidates; the candidates the ceiling skipped before
    the last of them (or among all `depth` when fewer were kept); whether `k` were kept."""
    found, skipped, enough = [], [], []
    step = max(1, SEARCH_CELLS // depth)
    for start in range(0, len(queries), step):
        part = queries[start : start + step]
        cosines, groups = index.search(xx[part], depth)
        own = groups == group[part, None]
        high = cosines > ceiling[part, None]
        keep = (groups >= 0) & ~own & ~high
        # The kept candidates' places in rank order, k at most per query.
        place = np.cumsum(keep, axis=1)
        chosen = keep & (place <= k)
        last = np.where(place[:, -1] >= k, np.argmax(place >= k, axis=1), depth - 1)
        skipped.append(((high & ~own) & (np.arange(depth) <= last[:, None])).sum(1))
        enough.append(place[:, -1] >= k)
        found += [(g[c], s[c]) for g, s, c in zip(groups, cosines, chosen, strict=True)]
    return found, np.concatenate(skipped), np.concatenate(enough)


def run(
    shards: list[Path],
    lang: str,
    corpus: Path,
    settings: MiningSettings,
    out: Path,
    manifest: Path,
) -> dict:
    """Mine language `lang`'s pool from the encoded `shards` that hold its pairs (in order)
    and its corpus split (`corpus`: the English texts, found by the pairs' ids); write the
    negatives (a row per pair of the pool, in its order) to `out` and, last, the manifest
    that lists the shards and the counts; return the manifest."""
    from xlsent.hard_negatives.encode import read_shard

    tables, shard_counts, held, pool, width = [], [], [], 0, 0
    for path in shards:
        table, counts = read_shard(path)
        tables.append(table.filter(pc.equal(table.column("lang"), lang)).drop_columns("lang"))
        held.extend(range(*counts["languages"].get(lang, (0, 0))))
        pool, width = counts["pool"].get(lang, 0), counts["width"]
        shard_counts.append(
            {"file": Path(path).name, "shard": counts["shard"], "pairs": tables[-1].num_rows}
        )
    # The shards must hold the language's pairs, each once and all of them, in order.
    if not pool or held != list(range(pool)):
        raise ValueError(
            f"the shards {[str(path) for path in shards]} do not hold all of {lang}'s pairs in"
            " order: give every shard of the pool that holds them"
        )
    vectors = pa.concat_tables(tables)
    with reading(corpus):
        text = pq.read_table(corpus, columns=["id", "en"])
    ids = vectors.column("id").combine_chunks()
    # The pool's pairs (all of the split's, or a run's capped share) by their ids.
    where = pc.index_in(ids, value_set=text.column("id").combine_chunks())
    if where.null_count:
        raise ValueError(f"the shards hold pairs that {corpus} has not: encode them again")
    mined = mine(
        _matrix(vectors.column("xx"), width),
        _matrix(vectors.column("en"), width),
        text.column("en").take(where).to_pylist(),
        settings,
    )
    schema = negatives_schema(settings.mined)
    table = pa.table(
        {
            "id": ids,
            "negatives": pa.FixedSizeListArray.from_arrays(
                pa.array(mined.rows.ravel()), settings.mined
            ),
            "scores": pa.FixedSizeListArray.from_arrays(
                pa.array(mined.scores.ravel()), settings.mined
            ),
            "positive": mined.positive,
        },
        schema=schema,
    )
    with atomic_path(out) as tmp:
        pq.write_table(table, tmp)
    record = {
        "settings": dataclasses.asdict(settings),
        "shards": shard_counts,
        "totals": mined.counts,
    }
    write_json(manifest, record)
    return record


def _matrix(column: pa.ChunkedArray, width: int) -> np.ndarray:
    """A vector column as an N×width float32 array."""
    values = column.combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return values.reshape(-1, width).astype(np.float32, copy=False)
