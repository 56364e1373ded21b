"""The masked-language-model head that AWP (WACSE) and RTL (DAP) predict subwords with.

For a pretrained encoder it is the checkpoint's own MLM head (XLM-R's `lm_head`, BERT's
`cls`), so AWP starts from a head that already predicts the encoder's vocabulary; for a
scratch encoder it is a fresh head of the same architecture. Its output projection is tied to
the word embeddings it is given, as in the pretrained models.
"""

from __future__ import annotations

from pathlib import Path

from torch import nn


def mlm_head(
    config: object, word_embeddings: nn.Embedding, pretrained_dir: str | Path | None = None
) -> nn.Module:
    """An MLM head (hidden states → vocabulary logits) whose decoder shares `word_embeddings`."""
    from transformers import AutoModelForMaskedLM

    if pretrained_dir is not None:
        full = AutoModelForMaskedLM.from_pretrained(pretrained_dir)
    else:
        full = AutoModelForMaskedLM.from_config(config)
    for name in ("lm_head", "cls"):  # XLM-R / RoBERTa, BERT
        head = getattr(full, name, None)
        if isinstance(head, nn.Module):
            break
    else:
        raise ValueError(
            f"{type(full).__name__} has no MLM head this trainer knows (lm_head or cls); "
            "AWP and RTL support XLM-R, RoBERTa and BERT encoders"
        )
    decoder = full.get_output_embeddings()
    if decoder.weight.shape != word_embeddings.weight.shape:
        raise ValueError(
            f"the MLM head predicts {decoder.weight.shape[0]} tokens but the embeddings hold "
            f"{word_embeddings.weight.shape[0]}: the tokenizer and the checkpoint disagree"
        )
    decoder.weight = word_embeddings.weight
    return head
