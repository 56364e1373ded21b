"""The masked-language-model head that AWP (WACSE) and RTL (DAP) predict subwords with.

For a pretrained encoder it is the checkpoint's own MLM head (XLM-R's `lm_head`, BERT's
`cls`), so AWP starts from a head that already predicts the encoder's vocabulary. A
checkpoint without one (a sentence embedding model such as multilingual-e5-small, saved as a
bare `BertModel`) gets a fresh head of its architecture's own kind, which for BERT and XLM-R
is the same: dense, GELU, LayerNorm, a decoder tied to the word embeddings and a bias,
initialised as XLM-R's (normal(0, initializer_range) weights, zero biases, unit LayerNorm)
from the run's seed, and trained with the run; for a model
this workflow trained with a head (an `mlm` run, which a run's `init_from` starts from) it is
that head, saved beside the model (`save_mlm_head`); for a scratch encoder it is a fresh head
of the same architecture. Its output projection is tied to the word embeddings it is given,
as in the pretrained models; RTL's head keeps only the rows of the English token ids, untied
(`restrict_output`, as DAP's code).
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import nn

HEAD_FILE = "mlm_head.pt"
log = logging.getLogger(__name__)


def _tied(head: nn.Module, embeddings: nn.Parameter) -> list[str]:
    """The head's keys that hold the word embeddings (its tied output projection): the
    model's own file holds them."""
    return [k for k, v in head.state_dict(keep_vars=True).items() if v is embeddings]


def save_mlm_head(head: nn.Module, embeddings: nn.Parameter, out_dir: str | Path) -> None:
    """Save `head` beside a saved model, without its output projection (`embeddings`)."""
    tied = _tied(head, embeddings)
    state = {k: v.cpu() for k, v in head.state_dict().items() if k not in tied}
    torch.save(state, Path(out_dir) / HEAD_FILE)


def mlm_head(
    config: object, word_embeddings: nn.Embedding, pretrained_dir: str | Path | None = None
) -> nn.Module:
    """An MLM head (hidden states → vocabulary logits) whose decoder shares `word_embeddings`."""
    from transformers import AutoModelForMaskedLM

    saved = Path(pretrained_dir) / HEAD_FILE if pretrained_dir is not None else None
    if saved is not None and not saved.is_file():
        full, loading = AutoModelForMaskedLM.from_pretrained(
            pretrained_dir, output_loading_info=True
        )
        if loading["missing_keys"]:
            log.info(
                "%s has no MLM head (%d of its weights missing): a fresh one, initialised as "
                "XLM-R's, trains with the run",
                pretrained_dir,
                len(loading["missing_keys"]),
            )
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
    if saved is not None and saved.is_file():
        _load_head(head, saved, _tied(head, word_embeddings.weight))
    return head


def _load_head(head: nn.Module, saved: Path, tied: list[str]) -> None:
    """Load a head saved by `save_mlm_head` (all but its `tied` keys); an error naming the
    file if it does not fit."""
    try:
        missing, unexpected = head.load_state_dict(
            torch.load(saved, map_location="cpu"), strict=False
        )
        problem = (
            f"missing {missing}, unexpected {unexpected}" if missing != tied or unexpected else None
        )
    except RuntimeError as err:  # a tensor of another shape
        problem = str(err).splitlines()[-1].strip()
    if problem:
        raise ValueError(
            f"{saved} does not fit the encoder's MLM head ({problem}): retrain the run that "
            "wrote it"
        )


def restrict_output(head: nn.Module, embeddings: nn.Parameter, ids: torch.Tensor) -> None:
    """Shrink `head`'s output layer, tied to `embeddings`, to the rows of the token ids `ids`:
    logit j of the shrunk head is the full head's logit of token `ids[j]`.

    As DAP's released code shrinks its RTL head (`RobertaRTLHead.shrink`, ChillingDream/DAP
    core/models.py): the kept rows of the projection and of its bias become parameters of
    their own, copies that are no longer tied to the embeddings.
    """
    decoder = next(
        (m for m in head.modules() if isinstance(m, nn.Linear) and m.weight is embeddings), None
    )
    if decoder is None:
        raise ValueError("the head's output layer is not tied to the embeddings it was given")
    decoder.weight = nn.Parameter(embeddings.detach()[ids].clone())
    bias = decoder.bias
    if bias is not None:  # XLM-R's and BERT's heads also hold it as `bias`: replace each name
        rows = nn.Parameter(bias.detach()[ids].clone())
        names = [n for n, p in head.named_parameters(remove_duplicate=False) if p is bias]
        for name in names:
            owner, _, attr = name.rpartition(".")
            setattr(head.get_submodule(owner), attr, rows)
    decoder.out_features = len(ids)
