"""An encoder as the evaluations call it, and the call that encodes many sentences.

`Encoder` is what every evaluation takes: sentences of one language (its code) in, one vector
per sentence out; the language matters only to encoders with language embeddings. A model
loaded by `xlsent.models.load` is one, and so is a vector file that the encode job wrote
(`xlsent.evaluate.vectors.SentenceVectors`). `embed` calls one over many sentences in
length-sorted chunks: the encode job's call (`xlsent.evaluate.vectors.encode_sentences`) and
bitext mining's (`xlsent.evaluate.bucc.mine_split`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Encoder = Callable[[list[str], str], np.ndarray]
# Sentences per encoder call: sorted by length within it, so that batches pad little, and
# few enough that tokenising a chunk is cheap in memory (BUCC 2018: 400K a side).
CHUNK = 8192


def embed(encode: Encoder, texts: Sequence[str], lang: str) -> np.ndarray:
    """One float32 vector per text, encoded in length-sorted chunks (little padding)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    parts = []
    for start in range(0, len(texts), CHUNK):
        chunk = [texts[i] for i in order[start : start + CHUNK]]
        vectors = np.asarray(encode(chunk, lang), dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(chunk):
            raise ValueError(
                f"the encoder returned shape {vectors.shape} for {len(chunk)} sentences; it "
                "must return one row per sentence"
            )
        parts.append(vectors)
    if not parts:
        raise ValueError(f"no {lang} sentences to encode")
    out = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
    out[order] = np.concatenate(parts)
    return out
