"""Word spans: the word-level batches of WACSE's AWP and WTR, prepared once per language.

Miao, Wu, Zhao, Wu, Tsuruoka (2024), "Enhancing Cross-lingual Sentence Embedding for
Low-resource Languages with Word Alignment" (WACSE), arXiv:2404.02490, §3.1–3.2. Aligned
word prediction (`xlsent.losses.awp`) masks a word and predicts its aligned word; word
translation ranking (`xlsent.losses.wtr`) ranks the other sentence's words by their
contextual vectors. Both need, for every training pair, the subword positions of each word
and the word links of the align stage.

A word's span is its [start, end) range of subword positions in the encoder's tokenization
of the sentence after the model's prefix (`xlsent.models.sentence.prefix_of`): the words
are those of the align stage's shards (the tokenize stage's spaCy words), found in the
sentence by `xlsent.tokenize.word_offsets`; the prefix's subwords belong to no word. The
word-span file of a language and model holds, row for row with its training pairs, the
subword ids (those of `xlsent.tokenize.subwords`), every word's span and the links whose
two words kept a subword of their own; training (`xlsent.train.data.load_word_aligned`)
builds its batches from them by slicing arrays, never by tokenizing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from xlsent.failures.kill_points import kill_point
from xlsent.failures.unreadable import reading
from xlsent.io import parquet_writer
from xlsent.models.sentence import Prefix, prefix_of
from xlsent.models.tokenizer import fast_tokenizer
from xlsent.tokenize import prefixed, word_offsets

LINK = pa.struct([("en", pa.int16()), ("xx", pa.int16())])
SPANS_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("en_ids", pa.list_(pa.int32())),
        ("xx_ids", pa.list_(pa.int32())),
        ("en_starts", pa.list_(pa.int16())),
        ("en_ends", pa.list_(pa.int16())),
        ("xx_starts", pa.list_(pa.int16())),
        ("xx_ends", pa.list_(pa.int16())),
        ("links", pa.list_(LINK)),
    ]
)


def text_spans(
    text: str, words: list[str], offsets: list[tuple[int, int]], before: str = ""
) -> np.ndarray | None:
    """Each word's [start, end) range of subword positions in the tokenization of
    `before + text` (its pieces' character `offsets`): the words are found in the sentence
    itself (a word may also occur in the prefix) and moved past the prefix, whose pieces
    belong to no word. None if a word is not in the text (`word_offsets`)."""
    chars = word_offsets(text, words)
    if chars is None:
        return None
    return subword_spans(np.array(chars, dtype=np.int64).reshape(-1, 2) + len(before), offsets)


def subword_spans(word_chars: np.ndarray, offsets: list[tuple[int, int]]) -> np.ndarray:
    """Each word's [start, end) range of subword positions (start == end: no subword of its
    own). A subword belongs to the word holding its first character; SentencePiece pieces
    never cross spaces, but one can hold the end of one spaCy word and the start of the next
    ("don't" → do|n't): the piece goes to the first word only.
    """
    spans = np.zeros((len(word_chars), 2), dtype=np.int64)
    if len(word_chars) == 0 or not offsets:
        return spans
    first_char = np.array([start for start, _ in offsets])
    owner = np.searchsorted(word_chars[:, 0], first_char, side="right") - 1
    inside = (owner >= 0) & (first_char < word_chars[np.maximum(owner, 0), 1])
    positions = np.arange(len(offsets))
    for word in np.unique(owner[inside]):
        mine = positions[inside & (owner == word)]
        spans[word] = mine[0], mine[-1] + 1
    return spans


def word_spans(
    corpus_path: str | Path,
    shards: Iterable[pa.Table],
    tokenizer_dir: str | Path,
    out_path: str | Path,
    prefix: Prefix = "",
    batch_size: int = 10_000,
) -> dict:
    """Subword ids, each word's subword span and the alignment links of every training pair,
    each sentence after the model's `prefix` (the ids are those of `xlsent.tokenize.subwords`).

    `shards` are a language's alignment shards in order (`xlsent.align.shards.iter_shards`),
    row for row the pairs of `corpus_path`. Computed once per language and model, so that
    training builds its word-level batches by slicing arrays, never by tokenizing.
    Returns counts: pairs whose words are not in their text, words without a subword of their
    own, and the links dropped because of either (never silently).
    """
    tokenizer = fast_tokenizer(tokenizer_dir)
    with reading(corpus_path):
        text = pq.read_table(corpus_path, columns=["id", "en", "xx"])
    stats = dict.fromkeys(
        ["pairs", "words_not_in_text", "words", "words_without_subword", "links", "links_dropped"],
        0,
    )
    with (
        parquet_writer(out_path, SPANS_SCHEMA) as writer,
        tqdm(total=text.num_rows, desc="word spans", unit=" pairs", mininterval=5) as bar,
    ):
        for shard in shards:
            for start in range(0, shard.num_rows, batch_size):
                aligned = shard.slice(start, batch_size)
                rows = text.slice(stats["pairs"], aligned.num_rows)
                _spans_batch(rows, aligned, tokenizer, writer, stats, prefix)
                bar.update(aligned.num_rows)
                kill_point("word_spans")
        if stats["pairs"] != text.num_rows:
            raise ValueError(
                f"the alignment shards hold {stats['pairs']} pairs but {corpus_path} holds "
                f"{text.num_rows}: re-run the align stage of this language"
            )
    return stats


def _spans_batch(
    text: pa.Table,
    aligned: pa.Table,
    tokenizer,
    writer: pq.ParquetWriter,
    stats: dict,
    prefix: Prefix,
) -> None:
    ids = text.column("id").to_pylist()
    if aligned.column("id").to_pylist() != ids:
        raise ValueError(
            "the alignment shards do not hold the training pairs row for row (ids differ); "
            "re-run the align stage of this language"
        )
    columns: dict[str, list] = {name: [] for name in SPANS_SCHEMA.names}
    columns["id"] = ids
    sides = {}
    for side in ("en", "xx"):
        texts = text.column(side).to_pylist()
        before = prefix_of(prefix, side)
        encoded = tokenizer.encode_batch(prefixed(texts, before), add_special_tokens=False)
        sides[side] = (texts, aligned.column(f"{side}_words").to_pylist(), encoded, before)
        columns[f"{side}_ids"] = [encoding.ids for encoding in encoded]
    for row, links in enumerate(aligned.column("links").to_pylist()):
        usable = {}
        for side, (texts, words, encoded, before) in sides.items():
            spans = text_spans(texts[row], words[row], encoded[row].offsets, before)
            if spans is None:
                stats["words_not_in_text"] += 1
                spans = np.zeros((len(words[row]), 2), dtype=np.int64)
            stats["words"] += len(spans)
            stats["words_without_subword"] += int((spans[:, 1] <= spans[:, 0]).sum())
            usable[side] = spans[:, 1] > spans[:, 0]
            columns[f"{side}_starts"].append(spans[:, 0].tolist())
            columns[f"{side}_ends"].append(spans[:, 1].tolist())
        kept = [
            {"en": link["en"], "xx": link["xx"]}
            for link in links
            if usable["en"][link["en"]] and usable["xx"][link["xx"]]
        ]
        stats["links"] += len(links)
        stats["links_dropped"] += len(links) - len(kept)
        columns["links"].append(kept)
    stats["pairs"] += len(ids)
    writer.write_table(pa.table(columns, schema=SPANS_SCHEMA))
