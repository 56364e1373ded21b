"""Hard negatives, step 1: one shard of the training pool encoded by the model a run starts
from, both sides, block by block (a killed job resumes at its first missing block).

The pool is every language's training pairs (or the share a run's `train.max_pairs` keeps),
one language after another in the order of their codes, as a training joins them
(`xlsent.train.data.load_pairs`); shard i holds its pairs [i·shard_size, (i + 1)·shard_size),
so a shard may hold several small languages, and a big one several shards: a job per shard,
not per language, each loading the model once (on a cluster, one GPU job encodes the 72,000
pairs of 36 languages' 2,000-pair pools). The pairs are the training subwords
(`results/subwords/{model}/{lang}/train.parquet`), cut as training cuts them (`max_length`
with the two special tokens) and encoded as dev P@1 encodes
(`xlsent.train.loop.Trainer._encode`): the model's pooling, its language embeddings where it
has them, length-sorted batches, at `precision`. So a pair's similarity here is the one the
run's first step starts from.

A block is `BLOCK_BATCHES` batches of pairs; each finished block is kept beside the shard
(`xlsent.align.blocks.Blocks`) under the job's fingerprint (the settings, the shard, the
content of the subwords and of the model), and the shard is written from the blocks at the
end: the same bytes whether the job ran once or was killed and resumed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from xlsent.align.blocks import Blocks, fingerprint
from xlsent.defaults import schema_defaults
from xlsent.failures.kill_points import kill_point
from xlsent.failures.unreadable import reading
from xlsent.hard_negatives.pool import shard_languages, spans
from xlsent.io import atomic_path
from xlsent.ragged import Ragged

if TYPE_CHECKING:
    from xlsent.train.data import Pairs

log = logging.getLogger(__name__)

# Batches (of `batch_size` pairs) a block: what a killed job loses at most (64 pairs a batch:
# 2,048 pairs, 4,096 sentences, about a minute of multilingual-e5-small on a CPU).
BLOCK_BATCHES = 32
# The schema metadata key of a shard's counts.
COUNTS = b"xlsent.counts"


@dataclass(frozen=True)
@schema_defaults("hard_negatives.encode")
class PoolEncoding:
    """How the starting model encodes the pairs (`hard_negatives.encode`, less its resources)."""

    max_length: int
    batch_size: int
    device: str
    precision: str


def vectors_schema(width: int) -> pa.Schema:
    """A shard's (and a block's) columns: each pair's language and id, its two sentence
    vectors."""
    vector = pa.list_(pa.float32(), width)
    return pa.schema([("lang", pa.string()), ("id", pa.int64()), ("xx", vector), ("en", vector)])


def pool_sizes(subwords: dict[str, Path], max_pairs: int | None = None) -> dict[str, int]:
    """Each language's pairs in the pool, in the pool's order (the codes sorted): the rows of
    its subwords file, or the `max_pairs` a run's cap keeps of them."""
    sizes = {}
    for lang in sorted(subwords):
        with reading(subwords[lang]):
            rows = pq.ParquetFile(subwords[lang]).metadata.num_rows
        sizes[lang] = rows if max_pairs is None else min(rows, max_pairs)
    return sizes


def encode_shard(
    settings: PoolEncoding,
    subwords: dict[str, Path],
    index: int,
    shard_size: int,
    model_dir: Path,
    tokenizer_dir: Path,
    out: Path,
    device: str = "cpu",
    max_pairs: int | None = None,
) -> dict:
    """Encode shard `index` of the pool of `subwords` ({language: its train subwords}; all of
    each language's pairs, or those `max_pairs` keeps) with the model in `model_dir`
    (`tokenizer_dir`: its tokenizer, whose special ids frame the subwords) on `device`; write
    it to `out` (Arrow IPC, `vectors_schema`); return its counts."""
    from xlsent.train.data import load_pairs, subset_rows

    sizes = pool_sizes(subwords, max_pairs)
    held = shard_languages(sizes, index, shard_size)
    encoder = _Encoder(model_dir, tokenizer_dir, settings, device)
    parts = []
    for lang, first, end in held:
        encoder.require(lang)
        with reading(subwords[lang]):
            ids = pq.read_table(subwords[lang], columns=["id"]).column("id").to_numpy()
        ids = ids[subset_rows(len(ids), lang, max_pairs)]  # the pool's, as training draws it
        pairs = load_pairs({lang: subwords[lang]}, settings.max_length, max_pairs)
        parts.append(_Part(lang, ids, pairs, first, end))
    pairs_held = sum(part.end - part.first for part in parts)
    inputs = {f"subwords/{lang}": path for lang, path in subwords.items()}
    inputs |= {"model": model_dir, "tokenizer": tokenizer_dir}
    job = {**dataclasses.asdict(settings), "max_pairs": max_pairs}
    stamp = fingerprint("hard-negatives", job, index, shard_size, inputs)
    blocks = Blocks(out, stamp, vectors_schema(encoder.width))
    tables, resumed, size = [], 0, BLOCK_BATCHES * settings.batch_size
    for block, start in enumerate(range(0, pairs_held, size)):
        kept = blocks.read(block)
        if kept is None:
            table = encoder.block(parts, start, start + size, blocks.schema)
            blocks.write(block, table, {"pairs": table.num_rows})
            kill_point("hard_negatives.block")
        else:
            table = kept[0]
            resumed += table.num_rows
        tables.append(table)
    # What an earlier job did is not the shard's content: the counts its file keeps are not.
    counts = {
        "shard": index,
        "pairs": pairs_held,
        "width": encoder.width,
        # The rows of each language it holds, and every language's pairs in the pool: what
        # the mining checks its language's shards against.
        "languages": {lang: [first, end] for lang, first, end in held},
        "pool": sizes,
    }
    schema = vectors_schema(encoder.width).with_metadata({COUNTS: json.dumps(counts)})
    table = pa.concat_tables(tables) if tables else schema.empty_table()
    with atomic_path(out) as tmp, pa.ipc.new_file(tmp, schema) as writer:
        writer.write_table(table.replace_schema_metadata(schema.metadata).combine_chunks())
    blocks.remove()
    log.info(
        "shard %d: %d pairs of %s in blocks of %d, %d of them encoded by an earlier job",
        index,
        pairs_held,
        " ".join(lang for lang, _, _ in held) or "no language",
        size,
        resumed,
    )
    return {"shard": index, "pairs": pairs_held, "width": encoder.width, "resumed": resumed}


@dataclass(frozen=True)
class _Part:
    """A language's pairs in a shard: its pool's ids and pairs, and the rows [first, end) of
    them that the shard holds."""

    lang: str
    ids: np.ndarray
    pairs: Pairs
    first: int
    end: int


def read_shard(path: Path) -> tuple[pa.Table, dict]:
    """A shard's rows (`vectors_schema`) and counts."""
    with reading(path), pa.memory_map(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
    return table.replace_schema_metadata(None), json.loads(table.schema.metadata[COUNTS])


class _Encoder:
    """The starting model, encoding subword rows as dev P@1 does."""

    def __init__(self, model_dir: Path, tokenizer_dir: Path, settings: PoolEncoding, device: str):
        import torch
        from transformers import AutoModel

        from xlsent.models import encoder
        from xlsent.models.sentence import SentenceSettings
        from xlsent.train.collate import Tokens

        self.model = AutoModel.from_pretrained(model_dir).to(device).eval()
        self.pooling = SentenceSettings.read(self.model.config).pooling
        tokens = Tokens.read(tokenizer_dir)
        self.special = (tokens.cls, tokens.sep, tokens.pad)
        self.languages = encoder.language_ids(self.model)
        self.model_dir = model_dir
        self.settings, self.device, self.torch = settings, torch.device(device), torch
        self.width = self.model.config.hidden_size

    def block(self, parts: list[_Part], start: int, stop: int, schema: pa.Schema) -> pa.Table:
        """A block's table: the shard's pairs [start, stop), each language's run of them
        encoded together."""
        tables = []
        for i, first, end in spans({i: p.end - p.first for i, p in enumerate(parts)}, start, stop):
            part = parts[i]
            take = np.arange(part.first + first, part.first + end)
            table = {
                "lang": [part.lang] * len(take),
                "id": part.ids[take],
                "xx": self.column(part.pairs.xx.take(take), part.lang),
                "en": self.column(part.pairs.en.take(take), "en"),
            }
            tables.append(pa.table(table, schema=schema))
        return pa.concat_tables(tables) if tables else schema.empty_table()

    def require(self, lang: str) -> None:
        """Stop where the model has language embeddings but none of `lang`."""
        if self.languages is not None and lang not in self.languages:
            raise ValueError(f"{self.model_dir} has no language embedding of {lang!r}")

    def column(self, rows: Ragged, lang: str) -> pa.FixedSizeListArray:
        """Sentence vectors of `rows` (subwords of language `lang`) as a vector column."""
        vectors = self.vectors(rows, lang)
        return pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), self.width)

    def vectors(self, rows: Ragged, lang: str) -> np.ndarray:
        from xlsent.models.encoder import length_sorted, sentence_vectors
        from xlsent.models.sentence import autocast
        from xlsent.train.collate import collate

        torch = self.torch
        out = np.zeros((len(rows), self.width), np.float32)
        with torch.inference_mode():
            for part in length_sorted(rows.lengths, self.settings.batch_size):
                ids, mask = collate(rows.take(part), *self.special)
                types = None
                if self.languages is not None:
                    types = torch.full_like(ids, self.languages[lang]).to(self.device)
                with autocast(self.device.type, self.settings.precision):
                    vectors = sentence_vectors(
                        self.model,
                        ids.to(self.device),
                        mask.to(self.device),
                        types,
                        self.pooling,
                    )
                out[part] = vectors.float().cpu().numpy()
        return out
