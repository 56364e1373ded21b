"""Alignment shards: the unit of fan-out of the align stage, and the manifest that joins them.

A language's training pairs are cut, in order, into shards of `shard_size` pairs; shard i is
one job, writing `shard-{i:04d}.arrow` (Arrow IPC) with every pair of its range: `id,
en_words, xx_words, links` where `links` holds (en, xx, score) word-index triples (empty
for a pair the aligner skipped; the reason is counted in the shard's stats JSON). When all
shards of a language exist, `_SUCCESS` lists them with their counts: readers go through it,
so a missing or half-written shard can never be mistaken for a complete language.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from xlsent.align.links import PairAlignment, SentencePair
from xlsent.failures.kill_points import kill_point
from xlsent.failures.unreadable import reading
from xlsent.io import atomic_path, read_json, write_json

LINK = pa.struct([("en", pa.int16()), ("xx", pa.int16()), ("score", pa.float32())])
SHARD_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("en_words", pa.list_(pa.string())),
        ("xx_words", pa.list_(pa.string())),
        ("links", pa.list_(LINK)),
    ]
)
MANIFEST = "_SUCCESS"


def shard_count(pairs: int, shard_size: int) -> int:
    """Shards of a language with `pairs` training pairs (at least one, even if empty)."""
    return max(1, math.ceil(pairs / shard_size))


def shard_name(index: int) -> str:
    return f"shard-{index:04d}.arrow"


def _rows(path: Path, start: int, stop: int, columns: list[str]) -> pa.Table | None:
    """Rows [start, stop) of a Parquet file, reading only the batches that hold them."""
    parts, offset = [], 0
    with reading(path):
        source = pq.ParquetFile(path, pre_buffer=False)
    for batch in source.iter_batches(batch_size=10_000, columns=columns):
        end = offset + batch.num_rows
        if end > start and offset < stop:
            parts.append(batch.slice(max(0, start - offset), min(stop, end) - max(start, offset)))
        offset = end
        if offset >= stop:
            break
    return pa.Table.from_batches(parts, schema=parts[0].schema) if parts else None


def read_pairs(
    corpus_path: Path, words_path: Path, index: int, shard_size: int
) -> tuple[list[int], list[SentencePair]]:
    """The ids and sentence pairs (text + words) of shard `index`."""
    start, stop = index * shard_size, (index + 1) * shard_size
    text = _rows(corpus_path, start, stop, ["id", "en", "xx"])
    words = _rows(words_path, start, stop, ["id", "en_words", "xx_words"])
    if text is None:
        return [], []
    ids = text.column("id").to_pylist()
    if words is None or words.column("id").to_pylist() != ids:
        raise ValueError(
            f"{words_path} does not hold the word tokens of {corpus_path} row for row "
            f"(shard {index}); re-run the words rule for this language"
        )
    pairs = [
        SentencePair(en, xx, en_words, xx_words)
        for en, xx, en_words, xx_words in zip(
            text.column("en").to_pylist(),
            text.column("xx").to_pylist(),
            words.column("en_words").to_pylist(),
            words.column("xx_words").to_pylist(),
            strict=True,
        )
    ]
    return ids, pairs


def shard_rows(
    ids: Sequence[int], pairs: Sequence[SentencePair], aligned: Sequence[PairAlignment]
) -> tuple[pa.Table, dict]:
    """Aligned pairs as a shard holds them, and their counts: `statuses` (each pair's, or
    "aligned") and `links`."""
    statuses: Counter[str] = Counter(a.status or "aligned" for a in aligned)
    links = [
        [{"en": en, "xx": xx, "score": score} for (en, xx), score in sorted(a.links.items())]
        for a in aligned
    ]
    table = pa.table(
        {
            "id": list(ids),
            "en_words": [p.en_words for p in pairs],
            "xx_words": [p.xx_words for p in pairs],
            "links": links,
        },
        schema=SHARD_SCHEMA,
    )
    return table, {"statuses": dict(statuses), "links": sum(len(a.links) for a in aligned)}


def write_shard(path: Path, parts: Sequence[tuple[pa.Table, dict]]) -> dict:
    """Write one shard (atomically) from its parts in order (`shard_rows`' tables and counts),
    as one record batch: the same bytes whatever the parts; return its statistics."""
    table = pa.concat_tables([rows for rows, _ in parts])
    with atomic_path(path) as tmp, pa.ipc.new_file(tmp, SHARD_SCHEMA) as writer:
        writer.write_table(table.combine_chunks())
        kill_point("align_shard")
    statuses: Counter[str] = Counter()
    for _, counts in parts:
        statuses.update(counts["statuses"])
    n_links = sum(counts["links"] for _, counts in parts)
    return {
        "pairs": table.num_rows,
        "statuses": dict(sorted(statuses.items())),
        "links": n_links,
        "links_per_aligned_pair": round(n_links / max(1, statuses["aligned"]), 3),
    }


def read_shard(path: Path) -> pa.Table:
    with reading(path), pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def write_manifest(out: Path, stats_paths: Sequence[Path], info: dict) -> dict:
    """`_SUCCESS`: the shards of a language (from their stats files) and the totals."""
    shards = []
    totals: Counter[str] = Counter()
    for index, stats_path in enumerate(stats_paths):
        with reading(stats_path):
            stats = read_json(stats_path)
        shards.append({"file": shard_name(index), **stats})
        totals["pairs"] += stats["pairs"]
        totals["links"] += stats["links"]
        totals.update({f"status.{k}": v for k, v in stats["statuses"].items()})
    manifest = {**info, "shards": shards, "totals": dict(totals)}
    write_json(out, manifest)
    return manifest


def iter_shards(manifest_path: Path) -> Iterator[pa.Table]:
    """Every shard of a language, in order, through its manifest."""
    manifest_path = Path(manifest_path)
    with reading(manifest_path):
        manifest = read_json(manifest_path)
    for shard in manifest["shards"]:
        yield read_shard(manifest_path.parent / shard["file"])
