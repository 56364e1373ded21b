"""A run's sentence vectors, encoded once per sentence source and read by every evaluation.

Tatoeba retrieval, held-out retrieval and bitext mining each need a vector per sentence, and
they often read the same sentences (the demo retrieves and mines among its Tatoeba set's). On
a CPU, loading an encoder costs more than encoding a test set, so one `encode` job per run,
seed and source encodes each distinct (language, sentence) of the source once and writes
them here; the evaluations look their sentences up (`SentenceVectors`, an `Encoder`) and
import no torch. On a cluster the encode job is the GPU job, and search and scoring run on
CPUs.

A source is where sentences come from, whatever evaluation reads them (`SOURCES`):

- `tatoeba`: LASER's Tatoeba files of some languages (the Tatoeba evaluation's, and the
  held-out retrieval's or mining set's when they are built `from: tatoeba`), each line read
  as `evaluate.tatoeba.text` says, by the reader the evaluations read them with
  (`xlsent.evaluate.tatoeba.read_pairs`): the text a vector is stored under is the text
  each of them looks it up by;
- `mining`: the sample stage's held-out `mining` split of some languages (retrieval or the
  mining set `from: corpus`);
- `bucc2018`: the BUCC shared task's files of some languages and splits.

The file is Arrow IPC: one row per (lang, text), English under `en`, with its `vector`; the
schema's metadata records the model directory's content digest (`sha256_tree`), the encoding
settings and the source, so a vector file can be matched to the model that wrote it.

Each language's distinct sentences are encoded together in length-sorted chunks
(`xlsent.evaluate.encoding.embed`): a sentence's vector does not depend on which evaluation
asked for it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
from tqdm import tqdm

from xlsent.evaluate.encoding import Encoder, embed
from xlsent.failures.errors import XlsentError
from xlsent.failures.kill_points import kill_point
from xlsent.io import atomic_path

log = logging.getLogger(__name__)

SOURCES = ("tatoeba", "mining", "bucc2018")


class VectorsError(XlsentError):
    """A vector file that cannot serve an evaluation; the message names the file and the fix."""


# -- what a source holds ----------------------------------------------------------------------


def tatoeba_sentences(directory: str | os.PathLike[str], langs: Sequence[str], text: str) -> dict:
    """{lang: its sentences, `en`: the English ones} of the Tatoeba files of `langs`, read as
    `text` says (`xlsent.evaluate.tatoeba.read_pairs`)."""
    from xlsent.evaluate import tatoeba

    parts = []
    for lang in langs:
        xx, en = tatoeba.read_pairs(Path(directory), lang, text)
        parts += [(lang, xx), ("en", en)]
    return distinct_by_language(parts)


def mining_sentences(paths: Mapping[str, str | os.PathLike[str]]) -> dict:
    """{lang: its sentences, `en`: the English ones} of each language's held-out split
    (`{lang: corpus-stage Parquet file}`)."""
    from xlsent.evaluate.mining_set import corpus_pairs

    parts = []
    for lang, path in paths.items():
        pairs = corpus_pairs(path)
        parts += [(lang, [xx for _, xx in pairs]), ("en", [en for en, _ in pairs])]
    return distinct_by_language(parts)


def bucc_sentences(
    directory: str | os.PathLike[str], langs: Sequence[str], splits: Sequence[str]
) -> dict:
    """{lang: its sentences, `en`: the English ones} of the BUCC files of `langs` × `splits`."""
    from xlsent.evaluate import bucc
    from xlsent.evaluate.bucc_files import split_files

    parts = []
    for lang in langs:
        for split in splits:
            xx_path, en_path, _ = split_files(directory, lang, split)
            parts += [
                (lang, bucc.read_sentences(xx_path)[1]),
                ("en", bucc.read_sentences(en_path)[1]),
            ]
    return distinct_by_language(parts)


def distinct_by_language(parts: Iterable[tuple[str, Sequence[str]]]) -> dict[str, list[str]]:
    """{lang: its distinct texts in order of first appearance} of (lang, texts) parts."""
    seen: dict[str, dict[str, None]] = {}
    for lang, texts in parts:
        seen.setdefault(lang, {}).update(dict.fromkeys(texts))
    return {lang: list(texts) for lang, texts in seen.items()}


# -- encoding -----------------------------------------------------------------------------------


def encode_sentences(encode: Encoder, sentences: Mapping[str, Sequence[str]]) -> pa.Table:
    """The vector table of `sentences` ({lang: distinct texts}): columns lang, text, vector."""
    tables = []
    total = sum(len(texts) for texts in sentences.values())
    with tqdm(total=total, desc="encode", unit="sent", mininterval=30) as progress:
        for lang, texts in sentences.items():
            vectors = embed(encode, texts, lang)
            tables.append(
                pa.table(
                    {
                        "lang": pa.array([lang] * len(texts), pa.string()),
                        "text": pa.array(texts, pa.string()),
                        "vector": pa.FixedSizeListArray.from_arrays(
                            pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1]
                        ),
                    }
                )
            )
            progress.update(len(texts))
            log.info("%s: %d sentences encoded", lang, len(texts))
            kill_point("encode")
    return pa.concat_tables(tables)


def write(path: str | os.PathLike[str], table: pa.Table, metadata: Mapping[str, object]) -> None:
    """Write `table` (`encode_sentences`) to `path` with `metadata` (JSON values) on its schema."""
    schema = table.schema.with_metadata({k: json.dumps(v) for k, v in metadata.items()})
    with (
        atomic_path(path) as tmp,
        pa.OSFile(str(tmp), "wb") as sink,
        pa.ipc.new_file(sink, schema) as writer,
    ):
        writer.write_table(table.replace_schema_metadata(schema.metadata))


# -- reading ------------------------------------------------------------------------------------


class SentenceVectors:
    """The vectors of a file that `write` wrote, as an `Encoder`: `vectors(texts, lang)` looks
    each text up (never encodes)."""

    def __init__(self, table: pa.Table, path: str | os.PathLike[str] = "<memory>"):
        self.path = Path(path)
        self.metadata = {
            key.decode(): json.loads(value) for key, value in (table.schema.metadata or {}).items()
        }
        column = table.column("vector").combine_chunks()
        self.matrix = column.values.to_numpy(zero_copy_only=False).reshape(len(table), -1)
        self.rows: dict[tuple[str, str], int] = {
            key: row
            for row, key in enumerate(
                zip(table.column("lang").to_pylist(), table.column("text").to_pylist(), strict=True)
            )
        }

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> SentenceVectors:
        """The vectors of `path`; a file that does not read back is named with the fix."""
        try:
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_file(source).read_all()
        except (OSError, pa.ArrowInvalid) as err:
            raise VectorsError(
                f"cannot read the sentence vectors {path} ({err}): the file is damaged or "
                f"incomplete; remake it with `snakemake --forcerun {path}`"
            ) from err
        return cls(table, path)

    def __call__(self, texts: list[str], lang: str) -> np.ndarray:
        """The vectors of `texts` in `lang` (English: `en`), one row per text."""
        try:
            rows = [self.rows[lang, text] for text in texts]
        except KeyError as err:
            missing_lang, missing = err.args[0]
            raise VectorsError(
                f"{self.path} holds no vector of the {missing_lang} sentence {missing!r}: the "
                "evaluation reads sentences its source's encode job did not encode (the "
                f"vectors are older than the evaluation's files); remake them with "
                f"`snakemake --forcerun {self.path}`"
            ) from None
        return self.matrix[rows]
