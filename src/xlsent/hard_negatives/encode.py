"""Hard negatives, step 1: one shard of a language's training pairs encoded by the model a run
starts from, both sides, block by block (a killed job resumes at its first missing block).

The pairs are the training subwords (`results/subwords/{model}/{lang}/train.parquet`), cut
as training cuts them (`xlsent.train.data.load_pairs`: `max_length` with the two special
tokens) and encoded as dev P@1 encodes (`xlsent.train.loop.Trainer._encode`): the model's
pooling, its language embeddings where it has them, length-sorted batches, at `precision`.
So a pair's similarity here is the one the run's first step starts from.

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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from xlsent.align.blocks import Blocks, fingerprint
from xlsent.defaults import schema_defaults
from xlsent.failures.kill_points import kill_point
from xlsent.failures.unreadable import reading
from xlsent.io import atomic_path
from xlsent.ragged import Ragged

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
    """A shard's (and a block's) columns: each pair's id and its two sentence vectors."""
    vector = pa.list_(pa.float32(), width)
    return pa.schema([("id", pa.int64()), ("xx", vector), ("en", vector)])


def encode_shard(
    settings: PoolEncoding,
    subwords: Path,
    lang: str,
    index: int,
    shard_size: int,
    model_dir: Path,
    tokenizer_dir: Path,
    out: Path,
    device: str = "cpu",
    max_pairs: int | None = None,
) -> dict:
    """Encode shard `index` (pairs [index·shard_size, (index + 1)·shard_size) of the pool:
    the pairs of `subwords`, or those a run's `train.max_pairs` keeps of them) with the model
    in `model_dir` (`tokenizer_dir`: its tokenizer, whose special ids frame the subwords) on
    `device`; write it to `out` (Arrow IPC, `vectors_schema`); return its counts."""
    from xlsent.train.data import load_pairs, subset_rows

    with reading(subwords):
        ids = pq.read_table(subwords, columns=["id"]).column("id").to_numpy()
    ids = ids[subset_rows(len(ids), lang, max_pairs)]  # the pool's, as training draws it
    pairs = load_pairs({lang: subwords}, settings.max_length, max_pairs)
    rows = np.arange(index * shard_size, min((index + 1) * shard_size, len(pairs)))
    inputs = {"subwords": subwords, "model": model_dir, "tokenizer": tokenizer_dir}
    job = {**dataclasses.asdict(settings), "max_pairs": max_pairs}
    stamp = fingerprint("hard-negatives", job, index, shard_size, inputs)
    encoder = _Encoder(model_dir, tokenizer_dir, settings, device, lang)
    blocks = Blocks(out, stamp, vectors_schema(encoder.width))
    parts, resumed, size = [], 0, BLOCK_BATCHES * settings.batch_size
    for block, start in enumerate(range(0, len(rows), size)):
        part_rows = rows[start : start + size]
        kept = blocks.read(block)
        if kept is None:
            table = pa.table(
                {
                    "id": ids[part_rows],
                    "xx": encoder.column(pairs.xx.take(part_rows), lang),
                    "en": encoder.column(pairs.en.take(part_rows), "en"),
                },
                schema=blocks.schema,
            )
            blocks.write(block, table, {"pairs": len(part_rows)})
            kill_point("hard_negatives.block")
        else:
            table = kept[0]
            resumed += table.num_rows
        parts.append(table)
    # What an earlier job did is not the shard's content: the counts its file keeps are not.
    counts = {"shard": index, "pairs": len(rows), "width": encoder.width}
    schema = vectors_schema(encoder.width).with_metadata({COUNTS: json.dumps(counts)})
    table = pa.concat_tables(parts) if parts else schema.empty_table()
    with atomic_path(out) as tmp, pa.ipc.new_file(tmp, schema) as writer:
        writer.write_table(table.replace_schema_metadata(schema.metadata).combine_chunks())
    blocks.remove()
    log.info(
        "shard %d: %d pairs in blocks of %d, %d of them encoded by an earlier job",
        index,
        len(rows),
        size,
        resumed,
    )
    return {**counts, "resumed": resumed}


def read_shard(path: Path) -> tuple[pa.Table, dict]:
    """A shard's rows (`vectors_schema`) and counts."""
    with reading(path), pa.memory_map(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
    return table.replace_schema_metadata(None), json.loads(table.schema.metadata[COUNTS])


class _Encoder:
    """The starting model, encoding subword rows as dev P@1 does."""

    def __init__(
        self, model_dir: Path, tokenizer_dir: Path, settings: PoolEncoding, device: str, lang: str
    ):
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
        if self.languages is not None and lang not in self.languages:
            raise ValueError(f"{model_dir} has no language embedding of {lang!r}")
        self.settings, self.device, self.torch = settings, torch.device(device), torch
        self.width = self.model.config.hidden_size

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
