"""SimAlign: word alignment from the similarity of a multilingual encoder's hidden states.

Jalili Sabet, Dufter, Yvon and Schütze, "SimAlign: High Quality Word Alignments without
Parallel Training Data using Static and Contextualized Embeddings", Findings of EMNLP 2020
(arXiv:2004.08728). No training and no parallel data: each sentence of a pair goes through a
pretrained encoder alone, the cosine similarity of every English subword vector with every
foreign one (hidden state `layer`, 0 being the embeddings) makes a matrix, and a matching
method picks links from it (§2.3):

- `argmax`: i and j are linked when j is i's most similar subword and i is j's (mutual
  argmax; high precision, the method of SimAlign's comparison with statistical aligners);
- `itermax`: argmax, then argmax again over the subwords left unaligned (`itermax`, with
  the paper's two rounds and discount α = 0.9);
- `match`: the maximum-weight bipartite matching, every subword of the shorter side linked.

SimAlign's optional distortion prior (similarities scaled down away from the diagonal;
off by default there) is left out.

Links are found between subwords and lifted to words as SimAlign's default ("bpe" token
type) does: two words are linked when any subword of one is linked to any subword of the
other (word vectors are not averaged). A link's score is the highest cosine similarity of
the subword links behind it.

Where we differ from SimAlign's code: it encodes the words joined by spaces, each word
tokenized alone; we encode the sentence as written and give each subword the word its
characters overlap most (the tokenize stage's words are found in the text, as WSPAlign's
questions are). A word tokenized alone gets pieces it never has in running text (a lone
"▁" before punctuation); on the gold sets' dev part the text as written aligned better on
average (docs/methods.md, "Align"). The model's text prefix (e5's "query: ") is not added:
SimAlign adds none, and it did not help there either.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch import nn
from tqdm import tqdm

from xlsent.align.links import PairAlignment, ScoredLinks, SentencePair
from xlsent.defaults import schema_defaults
from xlsent.failures.errors import XlsentError
from xlsent.tokenize import word_offsets

METHODS = ("argmax", "itermax", "match")
# Itermax as the paper runs it (§2.3, and its code): two rounds of argmax, similarities of
# pairs with one word already aligned discounted by α.
ITERMAX_ROUNDS = 2
ITERMAX_ALPHA = 0.9
# Pairs per chunk, in units of batch_size: sentences are sorted by length within a chunk,
# so a large one pads little, while its vectors (about 1024 sentences at batch size 64) stay
# small in memory whatever the shard's size.
_CHUNK_FACTOR = 8


class SimAlignError(XlsentError):
    """A SimAlign setting the model cannot take (a layer it lacks, too many subwords)."""


@dataclass(frozen=True)
@schema_defaults("align.simalign")
class SimAlignConfig:
    """The program's settings: the `align.simalign` block less `model` (the rule passes its
    directory) and `gpus` (the job's resource). Defaults are the schema's."""

    layer: int
    method: str
    batch_size: int
    max_subwords: int
    device: str

    @property
    def chunk_pairs(self) -> int:
        """Pairs the aligner prepares and batches together: their batches depend on no other
        pair, so aligning runs of a multiple of it gives what aligning all at once gives."""
        return _CHUNK_FACTOR * self.batch_size

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; use one of {', '.join(METHODS)}")
        if self.layer < 0:
            raise ValueError(f"layer must be at least 0 (the embeddings), not {self.layer}")
        for name in ("batch_size", "max_subwords"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")


# -- the matching methods: a similarity matrix in, a boolean link matrix out ---------------


def mutual_argmax(sim: np.ndarray) -> np.ndarray:
    """Links (i, j) where j is row i's argmax and i is column j's (the first on ties)."""
    links = np.zeros(sim.shape, dtype=bool)
    rows = np.arange(sim.shape[0])
    best_col = sim.argmax(axis=1)
    mutual = sim.argmax(axis=0)[best_col] == rows
    links[rows[mutual], best_col[mutual]] = True
    return links


def itermax(
    sim: np.ndarray, rounds: int = ITERMAX_ROUNDS, alpha: float = ITERMAX_ALPHA
) -> np.ndarray:
    """Itermax (§2.3): mutual argmax, then again on what is left, up to `rounds` in all.

    Each further round works on the similarities moved to [0, 1] ((cos + 1) / 2, as SimAlign
    does, so that a discount lowers every score), weighted by how many of the two words are
    still unaligned: both 1, one `alpha`, none 0; pairs of two aligned words cannot link.
    Stops early when a side is fully aligned or a round adds nothing. A matrix with a side
    of at most two subwords keeps argmax's links, as in SimAlign's code.
    """
    links = mutual_argmax(sim)
    if min(sim.shape) <= 2:
        return links
    positive = (sim + 1.0) / 2.0
    for _ in range(rounds - 1):
        open_rows, open_cols = ~links.any(axis=1), ~links.any(axis=0)
        if not open_rows.any() or not open_cols.any():
            break
        unaligned = open_rows[:, None].astype(float) + open_cols[None, :]
        new = mutual_argmax(positive * np.minimum(alpha * unaligned, 1.0)) & (unaligned > 0)
        if not (new & ~links).any():
            break
        links |= new
    return links


def max_weight_match(sim: np.ndarray) -> np.ndarray:
    """Match (§2.3): the maximum-weight bipartite matching (Hungarian algorithm), which
    links every subword of the shorter side once. Any constant added to the similarities
    leaves it unchanged, so cosines need no shift."""
    rows, cols = linear_sum_assignment(sim, maximize=True)
    links = np.zeros(sim.shape, dtype=bool)
    links[rows, cols] = True
    return links


MATCHERS = {"argmax": mutual_argmax, "itermax": itermax, "match": max_weight_match}


# -- subwords and words ----------------------------------------------------------------


def piece_words(
    piece_spans: Sequence[tuple[int, int]], word_spans: Sequence[tuple[int, int]]
) -> np.ndarray:
    """The word of each subword: the one whose characters it overlaps most (the first on a
    tie), -1 for none.

    Spans are [start, end) character offsets. Special tokens (empty spans) and pieces of
    whitespace alone overlap no word. A piece across a word boundary ("▁didn" over spaCy's
    "did" and "n't") goes to one word, as every subword belongs to one word in SimAlign
    (crediting both lowered the precision on the 60 de-en gold pairs from 0.979 to 0.964).
    """
    pieces = np.asarray(piece_spans, dtype=np.int64).reshape(-1, 2)
    words = np.asarray(word_spans, dtype=np.int64).reshape(-1, 2)
    if not len(words):
        return np.full(len(pieces), -1)
    overlap = np.minimum(pieces[:, None, 1], words[None, :, 1]) - np.maximum(
        pieces[:, None, 0], words[None, :, 0]
    )
    return np.where(overlap.max(axis=1) > 0, overlap.argmax(axis=1), -1)


def word_links(
    links: np.ndarray, cos: np.ndarray, en_words: np.ndarray, xx_words: np.ndarray
) -> ScoredLinks:
    """Subword links lifted to word links (SimAlign's "bpe" mode): words a and b are linked
    when a subword of a is linked to a subword of b, scored by the highest cosine of those
    subword links. `en_words`/`xx_words`: the word of each row and column (`piece_words`)."""
    scores: ScoredLinks = {}
    for i, j in zip(*np.nonzero(links), strict=True):
        key = (int(en_words[i]), int(xx_words[j]))
        scores[key] = max(scores.get(key, -1.0), float(cos[i, j]))
    return dict(sorted(scores.items()))


def align_vectors(
    en: np.ndarray, xx: np.ndarray, en_words: np.ndarray, xx_words: np.ndarray, method: str
) -> ScoredLinks:
    """Word links of one pair from its subwords' unit vectors ([pieces, dim] each, only the
    pieces that belong to a word) and the word of each (`piece_words`)."""
    cos = en @ xx.T
    return word_links(MATCHERS[method](cos), cos, en_words, xx_words)


# -- the aligner -----------------------------------------------------------------------


def check_layer(layer: int, layers: int) -> None:
    """`align.simalign.layer` names a hidden state the model has (0 to its layer count)."""
    if layer > layers:
        raise SimAlignError(
            f"config key `align.simalign.layer` is {layer}, but the model's hidden states go "
            f"from 0 (the embeddings) to {layers} (its last layer): set it to at most {layers}"
        )


@dataclass(frozen=True)
class _Sentence:
    ids: list[int]  # the model input, special tokens included
    pieces: np.ndarray  # positions in `ids` of the pieces that belong to a word
    words: np.ndarray  # the word of each of those pieces


class SimAligner:
    """Align sentence pairs by the similarity of `model`'s hidden states (module docstring).

    `model`: a Hugging Face encoder (any `AutoModel` that returns hidden states); `tokenizer`
    its fast tokenizer (offset mappings are needed).
    """

    def __init__(self, model: nn.Module, tokenizer: Any, cfg: SimAlignConfig):
        if not getattr(tokenizer, "is_fast", False):
            raise SimAlignError(
                "SimAlign needs a tokenizer with offset mappings (a Rust-backed `tokenizers` "
                f"one); got {type(tokenizer).__name__}"
            )
        check_layer(cfg.layer, model.config.num_hidden_layers)
        special, most = tokenizer.num_special_tokens_to_add(), tokenizer.model_max_length
        if cfg.max_subwords + special > most:
            raise SimAlignError(
                f"config key `align.simalign.max_subwords` is {cfg.max_subwords}, but the model "
                f"takes {most} tokens a sentence, {special} of them special: set it to at most "
                f"{most - special}"
            )
        device = cfg.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.cfg = cfg
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer

    @classmethod
    def load(cls, model_dir: str | Path, cfg: SimAlignConfig) -> SimAligner:
        """An aligner over the model directory's encoder, built with only the `cfg.layer`
        layers that it reads (the rest would be computed for nothing)."""
        from transformers import AutoConfig, AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        check_layer(cfg.layer, AutoConfig.from_pretrained(model_dir).num_hidden_layers)
        # The checkpoint's later layers are left out on purpose; transformers would list each
        # of their weights as unexpected.
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            model = AutoModel.from_pretrained(model_dir, num_hidden_layers=cfg.layer)
        finally:
            hf_logging.set_verbosity(verbosity)
        return cls(model, AutoTokenizer.from_pretrained(model_dir), cfg)

    def align(self, pairs: Sequence[SentencePair]) -> list[PairAlignment]:
        """Each pair's word links, in input order, or why it was skipped: "empty" (a side
        without words, or whose words the tokenizer keeps no piece of), "word_not_in_text"
        (a word not found in its sentence), "too_long" (a side of more than `max_subwords`
        subwords: never truncated)."""
        out: list[PairAlignment] = []
        size = self.cfg.chunk_pairs
        with tqdm(total=len(pairs), desc="simalign", unit=" pairs", mininterval=10) as bar:
            for start in range(0, len(pairs), size):
                chunk = pairs[start : start + size]
                out += self._align_chunk(chunk)
                bar.update(len(chunk))
        return out

    def _align_chunk(self, pairs: Sequence[SentencePair]) -> list[PairAlignment]:
        out = [PairAlignment() for _ in pairs]
        located: list[tuple[int, list[tuple[int, int]], list[tuple[int, int]]]] = []
        for index, pair in enumerate(pairs):
            if not pair.en_words or not pair.xx_words:
                out[index].status = "empty"
            elif (en := word_offsets(pair.en, pair.en_words)) is None or (
                xx := word_offsets(pair.xx, pair.xx_words)
            ) is None:
                out[index].status = "word_not_in_text"
            else:
                located.append((index, en, xx))
        texts = [text for index, _, _ in located for text in (pairs[index].en, pairs[index].xx)]
        sentences = self._tokenize(texts, [spans for _, en, xx in located for spans in (en, xx)])
        encoded: list[tuple[int, _Sentence, _Sentence]] = []
        for k, (index, _, _) in enumerate(located):
            en, xx = sentences[2 * k], sentences[2 * k + 1]
            longest = max(len(en.ids), len(xx.ids)) - self.tokenizer.num_special_tokens_to_add()
            if not len(en.pieces) or not len(xx.pieces):
                out[index].status = "empty"
            elif longest > self.cfg.max_subwords:
                out[index].status = "too_long"
            else:
                encoded.append((index, en, xx))
        vectors = self._vectors([s for _, en, xx in encoded for s in (en, xx)])
        for k, (index, en, xx) in enumerate(encoded):
            out[index].links = align_vectors(
                vectors[2 * k], vectors[2 * k + 1], en.words, xx.words, self.cfg.method
            )
        return out

    def _tokenize(
        self, texts: list[str], word_spans: list[list[tuple[int, int]]]
    ) -> list[_Sentence]:
        """Each text's model input and which of its pieces belong to which words."""
        if not texts:
            return []
        encoding = self.tokenizer(
            texts,
            return_offsets_mapping=True,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        sentences = []
        for ids, offsets, spans in zip(
            encoding["input_ids"], encoding["offset_mapping"], word_spans, strict=True
        ):
            words = piece_words(offsets, spans)
            pieces = np.flatnonzero(words >= 0)
            sentences.append(_Sentence(ids, pieces, words[pieces]))
        return sentences

    def _batches(self, sentences: list[_Sentence]) -> Iterator[list[int]]:
        """Indices of `sentences` in length-sorted batches of `batch_size`."""
        order = sorted(range(len(sentences)), key=lambda k: len(sentences[k].ids))
        for start in range(0, len(order), self.cfg.batch_size):
            yield order[start : start + self.cfg.batch_size]

    @torch.inference_mode()
    def _vectors(self, sentences: list[_Sentence]) -> list[np.ndarray]:
        """The unit vectors of each sentence's word pieces at `layer`, [pieces, dim]."""
        out: list[np.ndarray] = [np.empty(0)] * len(sentences)
        for batch in self._batches(sentences):
            width = max(len(sentences[k].ids) for k in batch)
            ids = torch.full((len(batch), width), self.tokenizer.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, k in enumerate(batch):
                ids[row, : len(sentences[k].ids)] = torch.tensor(sentences[k].ids)
                mask[row, : len(sentences[k].ids)] = 1
            # A model built for `layer` (`load`) ends there; a deeper one is read at `layer`.
            deeper = self.model.config.num_hidden_layers > self.cfg.layer
            output = self.model(
                input_ids=ids.to(self.device),
                attention_mask=mask.to(self.device),
                output_hidden_states=deeper,
            )
            states = output.hidden_states[self.cfg.layer] if deeper else output.last_hidden_state
            states = nn.functional.normalize(states.float(), dim=-1).cpu().numpy()
            for row, k in enumerate(batch):
                out[k] = states[row, sentences[k].pieces]
        return out
