"""Collators: one micro-batch's pairs, word spans and alignment links turned into the tensors
its losses read (a `Batch`), on the CPU, in numpy over ragged arrays.

Everything a loss needs that is not a model output is built here, once per micro-batch and
ahead of time (the trainer builds the next micro-batch in a background thread while the
device computes): the padded ids (`collate`), WTR's word-averaging weights and links
(`word_pooling`), AWP's masked copies and targets (`masked_copies`), RTL's English targets
(`english_targets`), MLM's and TLM's corrupted sentences (`mask_tokens`, `Collator`), TR's
hard negatives (`hard_negatives`).
So the losses (`xlsent.losses`) stay tensor maths, and the objectives
(`xlsent.train.objectives`) only encode, apply heads and call them.

A micro-batch of N pairs is laid out as 2N sentences: the N non-English sides X_0..X_{N-1},
then their English translations Y_0..Y_{N-1}. A language-modelling batch (`Batch.lm`) holds
its own sequences: monolingual sentences (MLM) or concatenated pairs (TLM).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from xlsent.ragged import Ragged, offsets_of, row_of_each, within
from xlsent.train.data import Monolingual, Pairs, WordAligned


@dataclass(frozen=True)
class Tokens:
    """The tokenizer's special ids."""

    cls: int
    sep: int
    pad: int
    mask: int

    @classmethod
    def read(cls, tokenizer_dir: Path) -> Tokens:
        """The special ids of the tokenizer in `tokenizer_dir`."""
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
        return cls(
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            tokenizer.pad_token_id,
            tokenizer.mask_token_id,
        )


@dataclass(frozen=True)
class WTRTensors:
    """WTR's word pooling and links (`word_pooling`)."""

    pool: torch.Tensor  # 2N×W×T word-averaging weights
    valid: torch.Tensor  # 2N×W: which words have a subword
    links: torch.Tensor  # L×3: pair, xx word, en word


@dataclass(frozen=True)
class AWPTensors:
    """AWP's masked copies and what their masked positions predict (`masked_copies`)."""

    ids: torch.Tensor  # C×T masked copies
    mask: torch.Tensor
    types: torch.Tensor | None  # language ids, for encoders with language embeddings
    predict: torch.Tensor  # P×2: copy, position
    targets: torch.Tensor  # P
    weights: torch.Tensor  # P
    # What the diagnostics read (`MaskedCopies`): each position's share of its term, and the
    # batch's links per sentence.
    terms: torch.Tensor  # P
    links_per_sentence: float


@dataclass(frozen=True)
class RTLTensors:
    """What RTL reconstructs (`english_targets`)."""

    mask: torch.Tensor  # N×(T-1): the English tokens to reconstruct
    targets: torch.Tensor  # Q: their ids, row by row


@dataclass(frozen=True)
class HardNegativeTensors:
    """TR's hard negatives of a micro-batch (`hard_negatives`): the English sentences mined
    for its pairs, each once, and each pair's rows of them."""

    ids: torch.Tensor  # M×T: the negatives' subwords, collated
    mask: torch.Tensor
    types: torch.Tensor | None  # English's language id, for encoders with language embeddings
    index: torch.Tensor  # N×k: each pair's negatives, rows of `ids`; -1 for an empty slot


@dataclass(frozen=True)
class LMTensors:
    """MLM's or TLM's own sequences: monolingual sentences (MLM) or concatenated pairs (TLM),
    corrupted, and the subwords they predict."""

    ids: torch.Tensor  # S×T corrupted sequences
    mask: torch.Tensor
    predict: torch.Tensor  # P×2: sequence, position of each chosen subword
    targets: torch.Tensor  # P: the subword it must predict
    types: torch.Tensor | None = None  # language ids
    positions: torch.Tensor | None = None  # TLM: position ids, counted from 0


@dataclass(frozen=True)
class Batch:
    """Tensors of one micro-batch: the 2N sentences of its pairs, and each objective's own
    tensors (None where the method does not use them)."""

    ids: torch.Tensor | None  # 2N×T: non-English sides, then English (None: an LM-only batch)
    mask: torch.Tensor | None
    types: torch.Tensor | None  # language ids, for encoders with language embeddings
    wtr: WTRTensors | None = None
    awp: AWPTensors | None = None  # None also in a micro-batch without an aligned word
    rtl: RTLTensors | None = None
    lm: LMTensors | None = None
    hard: HardNegativeTensors | None = None

    @property
    def n_pairs(self) -> int:
        return 0 if self.ids is None else len(self.ids) // 2

    @property
    def tokens(self) -> int:
        """Real (non-pad) tokens the encoder reads in the batch's main passes: read on the
        batch as built, on the CPU (on a device's copy each read waits for the device)."""
        lm_mask = None if self.lm is None else self.lm.mask
        hard_mask = None if self.hard is None else self.hard.mask
        return sum(int(m.sum()) for m in (self.mask, lm_mask, hard_mask) if m is not None)

    def to(self, device: torch.device) -> Batch:
        return _mapped(self, lambda t: t.to(device, non_blocking=True))

    def pin(self) -> Batch:
        """Page-locked copies, for a fast (asynchronous) copy to a GPU."""
        return _mapped(self, lambda t: t.pin_memory())


def _mapped(tensors: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """A batch, or one of its parts, with `fn` applied to each of its tensors."""
    if tensors is None:
        return None
    if isinstance(tensors, torch.Tensor):
        return fn(tensors)
    if not is_dataclass(tensors):  # a number (AWP's links per sentence)
        return tensors
    return replace(
        tensors, **{f.name: _mapped(getattr(tensors, f.name), fn) for f in fields(tensors)}
    )


@dataclass(frozen=True)
class Collator:
    """Builds a method's batches: what it builds is what the method's losses read.

    `tokens` are the special ids; `language_ids` ({code: token type id}) gives every token its
    sentence's language, for an encoder with language embeddings; `ranking` builds the 2N
    sentences of a pair batch (TR and the word-level objectives read them); `wtr` adds WTR's
    word pooling weights and links, `awp_samples` AWP's masked copies with that many copies
    per sentence (0: every aligned word; None: no AWP), `rtl` RTL's English targets; `lm`
    a language-modelling batch: `mlm` (monolingual sentences, from a `Monolingual` pool) or
    `tlm` (the pairs concatenated, as `tlm_input` lays them out), each subword chosen with
    `mlm_probability` and corrupted with a random one of the `vocab_size` ids (never a special
    one) in a tenth of the cases; `hard_negatives` the first that many of each pair's mined
    English negatives (`Pairs.negatives`), for TR.
    """

    tokens: Tokens
    language_ids: dict[str, int] | None = None
    ranking: bool = True
    wtr: bool = False
    awp_samples: int | None = None
    rtl: bool = False
    lm: str | None = None
    mlm_probability: float = 0.15
    vocab_size: int = 0
    tlm_input: str = "xlm"
    hard_negatives: int = 0

    def __call__(
        self,
        pairs: Pairs | Monolingual,
        index: np.ndarray,
        words: WordAligned | None = None,
        rng: np.random.Generator | None = None,
    ) -> Batch:
        """The batch of the pairs `index` of `pairs` (and of `words`, the same pool's word
        spans and links, which WTR and AWP need), or with `lm: mlm` of the sentences `index`
        of a `Monolingual` pool; `rng` draws AWP's masked words and the LM corruption."""
        if self.lm == "mlm":
            return Batch(None, None, None, lm=self._monolingual(pairs, index, rng))
        batch = self._pairs(pairs, index, words, rng) if self.ranking else Batch(None, None, None)
        if self.lm == "tlm":
            translation_lm = self._separate_sides if self.tlm_input == "dap" else self._joined
            batch = replace(batch, lm=translation_lm(pairs, index, rng))
        return batch

    def _pairs(
        self,
        pairs: Pairs,
        index: np.ndarray,
        words: WordAligned | None,
        rng: np.random.Generator | None,
    ) -> Batch:
        rows = Ragged.concat([pairs.xx.take(index), pairs.en.take(index)])
        t = self.tokens
        ids, mask = collate(rows, t.cls, t.sep, t.pad)
        sentence_types = types = None
        if self.language_ids is not None:
            codes = [self.language_ids[pairs.langs[i]] for i in pairs.lang[index]]
            sentence_types = torch.tensor(codes + [self.language_ids["en"]] * len(index))
            types = sentence_types[:, None].expand_as(ids).contiguous()
        rtl = RTLTensors(*english_targets(ids, mask)) if self.rtl else None
        hard = self._hard(pairs, index) if self.hard_negatives else None
        if not self.wtr and self.awp_samples is None:
            return Batch(ids, mask, types, rtl=rtl, hard=hard)
        if words is None:
            raise ValueError("WTR and AWP need the pairs' word alignments")
        starts = Ragged.concat([words.xx_starts.take(index), words.en_starts.take(index)])
        ends = Ragged.concat([words.xx_ends.take(index), words.en_ends.take(index)])
        links = words.links.take(index)
        wtr = self._wtr(starts, ends, links, ids.shape[1]) if self.wtr else None
        awp = None
        if self.awp_samples is not None:
            awp = self._awp(rows, starts, ends, links, sentence_types, rng)
        return Batch(ids, mask, types, wtr=wtr, awp=awp, rtl=rtl, hard=hard)

    def _hard(self, pairs: Pairs, index: np.ndarray) -> HardNegativeTensors:
        """The first `hard_negatives` mined negatives of the pairs `index` (`hard_negatives`)."""
        if pairs.negatives is None:
            raise ValueError("TR's hard negatives need the pool's mined negatives")
        rows, slots = hard_negatives(pairs.negatives[index, : self.hard_negatives])
        t = self.tokens
        if len(rows):
            ids, mask = collate(pairs.en.take(rows), t.cls, t.sep, t.pad)
        else:  # no pair of the micro-batch has one: nothing to encode
            ids = mask = torch.zeros((0, 2), dtype=torch.int64)
        types = None
        if self.language_ids is not None:
            types = torch.full_like(ids, self.language_ids["en"])
        return HardNegativeTensors(ids, mask, types, torch.from_numpy(slots))

    @staticmethod
    def _wtr(starts: Ragged, ends: Ragged, links: Ragged, width: int) -> WTRTensors:
        pool, valid = word_pooling(starts, ends, width)
        pair = row_of_each(links.lengths)
        links = np.column_stack([pair, links.values.reshape(-1, 2)]).astype(np.int64)
        return WTRTensors(pool, valid, torch.from_numpy(links))

    def _awp(
        self,
        rows: Ragged,
        starts: Ragged,
        ends: Ragged,
        links: Ragged,
        sentence_types: torch.Tensor | None,
        rng: np.random.Generator | None,
    ) -> AWPTensors | None:
        """AWP's masked copies of the 2N sentences `rows`; None without an aligned word."""
        t = self.tokens
        copies = masked_copies(rows, starts, ends, links, t.mask, self.awp_samples, rng)
        if not len(copies.rows):
            return None
        ids, mask = collate(copies.rows, t.cls, t.sep, t.pad)
        types = None
        if sentence_types is not None:
            types = sentence_types[copies.sentence][:, None].expand_as(ids).contiguous()
        return AWPTensors(
            ids,
            mask,
            types,
            # +1: the collated rows start with CLS.
            torch.from_numpy(np.stack([copies.copy, copies.positions + 1], 1)),
            torch.from_numpy(copies.targets),
            torch.from_numpy(copies.weights),
            torch.from_numpy(copies.terms),
            copies.links_per_sentence,
        )

    @functools.cached_property
    def replacements(self) -> np.ndarray:
        """The ids a chosen subword may be replaced with: every id but the special ones."""
        t = self.tokens
        return np.setdiff1d(
            np.arange(self.vocab_size, dtype=np.int32), [t.cls, t.sep, t.pad, t.mask]
        )

    def _corrupt(self, rows: Ragged, rng: np.random.Generator) -> MaskedTokens:
        return mask_tokens(rows, self.mlm_probability, self.tokens.mask, self.replacements, rng)

    def _monolingual(
        self, pool: Monolingual, index: np.ndarray, rng: np.random.Generator
    ) -> LMTensors:
        """MLM: the sentences `index`, corrupted; CLS at position 0."""
        t = self.tokens
        chosen = self._corrupt(pool.sentences.take(index), rng)
        ids, mask = collate(chosen.rows, t.cls, t.sep, t.pad)
        types = None
        if self.language_ids is not None:
            codes = torch.tensor([self.language_ids[pool.langs[i]] for i in pool.lang[index]])
            types = codes[:, None].expand_as(ids).contiguous()
        return LMTensors(
            ids,
            mask,
            torch.from_numpy(np.stack([chosen.row, chosen.position + 1], 1)),
            torch.from_numpy(chosen.targets),
            types,
        )

    def _joined(self, pairs: Pairs, index: np.ndarray, rng: np.random.Generator) -> LMTensors:
        """TLM (`tlm_input: xlm`): each pair as one sequence `<s> x </s> </s> y </s>`, both
        sides corrupted, positions restarting at y's first `</s>` (XLM's reset of the
        target's positions)."""
        t = self.tokens
        n = len(index)
        xx = self._corrupt(pairs.xx.take(index), rng)
        en = self._corrupt(pairs.en.take(index), rng)
        seps = Ragged(np.full(2 * n, t.sep, dtype=xx.rows.values.dtype), offsets_of(np.full(n, 2)))
        # Rows x_0, seps, y_0, x_1, ...: three rows per pair, joined into one.
        parts = Ragged.concat([xx.rows, seps, en.rows])
        order = (np.arange(n)[:, None] + np.array([0, n, 2 * n])[None, :]).ravel()
        joined = parts.take(order)
        ids, mask = collate(Ragged(joined.values, joined.offsets[::3]), t.cls, t.sep, t.pad)
        first = xx.rows.lengths.astype(np.int64) + 2  # <s> x </s>: the first segment
        columns = np.arange(ids.shape[1])[None, :]
        second = columns >= first[:, None]
        positions = np.where(second, columns - first[:, None], columns) * mask.numpy()
        predict = np.concatenate(
            [
                np.stack([xx.row, xx.position + 1], 1),
                # <s>, x, two </s>: y starts at column len(x) + 3.
                np.stack([en.row, first[en.row] + 1 + en.position], 1),
            ]
        )
        types = None
        if self.language_ids is not None:
            codes = np.array([self.language_ids[pairs.langs[i]] for i in pairs.lang[index]])
            types = torch.from_numpy(
                np.where(second, self.language_ids["en"], codes[:, None]).astype(np.int64)
            )
        return LMTensors(
            ids,
            mask,
            torch.from_numpy(predict),
            torch.from_numpy(np.concatenate([xx.targets, en.targets])),
            types,
            torch.from_numpy(positions),
        )

    def _separate_sides(
        self, pairs: Pairs, index: np.ndarray, rng: np.random.Generator
    ) -> LMTensors:
        """TLM (`tlm_input: dap`) as DAP's released code builds it: each side `<s> s </s>`
        padded to the width T of the micro-batch's longest sentence (either side), the two
        rows side by side (2T columns, padding between them masked), each side's positions
        counted from 0 at its `<s>` (`torch.arange(T).repeat(1, 2)` there). The corruption
        draws are `_joined`'s: the same subwords are chosen and corrupted alike."""
        t = self.tokens
        n = len(index)
        xx = self._corrupt(pairs.xx.take(index), rng)
        en = self._corrupt(pairs.en.take(index), rng)
        ids, mask = collate(Ragged.concat([xx.rows, en.rows]), t.cls, t.sep, t.pad)
        width = ids.shape[1]
        predict = np.concatenate(
            [
                np.stack([xx.row, xx.position + 1], 1),
                np.stack([en.row, width + 1 + en.position], 1),  # after x's row and y's <s>
            ]
        )
        types = None
        if self.language_ids is not None:
            codes = torch.tensor([self.language_ids[pairs.langs[i]] for i in pairs.lang[index]])
            english = torch.full((n, width), self.language_ids["en"])
            types = torch.cat([codes[:, None].expand(n, width), english], dim=1)
        return LMTensors(
            torch.cat([ids[:n], ids[n:]], dim=1),
            torch.cat([mask[:n], mask[n:]], dim=1),
            torch.from_numpy(predict),
            torch.from_numpy(np.concatenate([xx.targets, en.targets])),
            types,
            torch.arange(width).repeat(n, 2),
        )


@dataclass(frozen=True)
class MaskedTokens:
    """Sentences with some subwords chosen for prediction, and those corrupted.

    `rows` are the corrupted subword ids (no special tokens); the p-th chosen subword sits in
    row `row[p]` at `position[p]` and must be predicted as `targets[p]`.
    """

    rows: Ragged
    row: np.ndarray
    position: np.ndarray
    targets: np.ndarray


def mask_tokens(
    rows: Ragged,
    probability: float,
    mask_id: int,
    replacements: np.ndarray,
    rng: np.random.Generator,
) -> MaskedTokens:
    """BERT's corruption (Devlin et al. 2019, §3.1; `xlsent.losses.mlm`): every subword is
    chosen with `probability`; of the chosen, 80 % become `mask_id`, 10 % a random id of
    `replacements`, 10 % stay as they are. Vectorised over the whole batch."""
    values = rows.values.copy()
    chosen = np.flatnonzero(rng.random(len(values)) < probability)
    action = rng.random(len(chosen))
    targets = values[chosen].astype(np.int64)
    values[chosen[action < 0.8]] = mask_id
    randomised = chosen[(action >= 0.8) & (action < 0.9)]
    values[randomised] = replacements[rng.integers(len(replacements), size=len(randomised))]
    row = np.searchsorted(rows.offsets, chosen, side="right") - 1
    return MaskedTokens(
        Ragged(values, rows.offsets), row.astype(np.int64), chosen - rows.offsets[row], targets
    )


def collate(
    rows: Ragged | list[np.ndarray], cls_id: int, sep_id: int, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """`<s> ids </s>` per row, right-padded to the longest row: (input_ids, attention_mask).
    Padding to the batch's longest row rather than to the length limit saves the encoder
    the work of the padding."""
    if not isinstance(rows, Ragged):
        rows = Ragged.from_rows(rows)
    lengths = rows.lengths
    width = int(lengths.max()) + 2
    ids = np.full((len(lengths), width), pad_id, dtype=np.int64)
    ids[:, 0] = cls_id
    ids[row_of_each(lengths), within(lengths) + 1] = rows.values
    ids[np.arange(len(lengths)), lengths + 1] = sep_id
    mask = (np.arange(width)[None, :] < lengths[:, None] + 2).astype(np.int64)
    return torch.from_numpy(ids), torch.from_numpy(mask)


def hard_negatives(mined: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pool rows a micro-batch encodes as its hard negatives, and each pair's slots in
    them: `mined` (N×k) holds each pair's negatives as rows of the pool, -1 where the stage
    found fewer than k. Every filled slot is a row of its own (M of them, in slot order), so
    that a negative is one encoded sentence, and its gradient reaches it once; the slots
    (N×k) index the M rows, -1 for the empty ones."""
    filled = mined >= 0
    slots = np.full(mined.shape, -1, dtype=np.int64)
    slots[filled] = np.arange(int(filled.sum()))
    return mined[filled].astype(np.int64), slots


def word_pooling(starts: Ragged, ends: Ragged, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Averaging weights (S×W×width) that turn a collated batch's token states (CLS at
    position 0) into word vectors, and which words have any subword (S×W); `starts` and
    `ends` hold each sentence's word spans."""
    words = starts.lengths
    sentence, word = row_of_each(words), within(words)
    first = starts.values.astype(np.int64)
    lengths = np.maximum(ends.values.astype(np.int64) - first, 0)
    pool = np.zeros((len(words), max(int(words.max()), 1), width), dtype=np.float32)
    valid = np.zeros(pool.shape[:2], dtype=bool)
    valid[sentence, word] = lengths > 0
    # Every subword of every word: its sentence, word, token position (+1 for the CLS).
    token_word = row_of_each(lengths)
    positions = first[token_word] + within(lengths) + 1
    pool[sentence[token_word], word[token_word], positions] = 1.0 / lengths[token_word]
    return torch.from_numpy(pool), torch.from_numpy(valid)


def english_targets(ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """What RTL reconstructs (DAP eq. 6's y) from a collated batch of 2N sentences: which of
    the English rows' tokens after CLS are targets (N×(T-1): every real token, </s> included,
    as DAP's code predicts it) and their ids (Q, row by row)."""
    n = len(ids) // 2
    target_mask = mask[n:, 1:].bool()
    return target_mask, ids[n:, 1:][target_mask]


@dataclass(frozen=True)
class MaskedCopies:
    """Masked copies of the batch's sentences and what each masked position must predict.

    `rows` are subword ids without special tokens; `positions` index into them (add 1 for a
    leading CLS). Each prediction p belongs to copy `copy[p]`, predicts `targets[p]`, and
    weighs `weights[p]` in the sum of eq. 5. `terms[p]` is its share of its term (1/n of a
    word clipped to n subwords, without the |A|/m of the draw): Σ terms·CE / Σ terms is the
    mean cross-entropy of a term, which a uniform guess puts at ln V, where eq. 5's value is
    about `links_per_sentence` terms a sentence (the batch's links from both sides over its
    2N sentences) times it.
    """

    rows: Ragged
    sentence: np.ndarray  # the batch sentence each copy was made from
    copy: np.ndarray
    positions: np.ndarray
    targets: np.ndarray
    weights: np.ndarray
    terms: np.ndarray
    links_per_sentence: float


def masked_copies(
    ids: Ragged,
    starts: Ragged,
    ends: Ragged,
    links: Ragged,
    mask_id: int,
    samples: int,
    rng: np.random.Generator,
) -> MaskedCopies:
    """AWP's inputs (WACSE eq. 4–5, `xlsent.losses.awp`) for a batch of N pairs laid out as
    2N sentences: X_0..X_{N-1} (the non-English sides) then Y_0..Y_{N-1}.

    `ids` holds the sentences' subwords; `starts`/`ends` each sentence's word spans in them;
    `links` the (x word, y word) index pairs of each pair. Vectorised over the batch: it runs
    for every micro-batch of training.

    The choices `xlsent.losses.awp` describes are made here:
    - Cost. Eq. 4 masks one aligned word per encoder pass. Each sentence instead gets
      `samples` masked copies, each masking one of its |A| aligned words drawn without
      replacement (m = min(samples, |A|) drawn), and each drawn word's terms weigh |A|/m: an
      unbiased estimate of eq. 4's sum. `samples=0` masks every aligned word in its own copy
      (eq. 4 exactly, at |A| passes per sentence).
    - Subwords. All of a masked word's subwords become `mask_id`; with n the shorter of the
      word's and its partner's subword counts, the word's first n masked positions predict
      the partner's first n subwords (the longer is clipped, WACSE §4.3), each weighing 1/n
      so that a word counts once whatever its length. A word linked to several words makes
      one term per link.
    """
    n = len(links)
    if len(links.values) == 0:
        return MaskedCopies(Ragged.from_rows([]), *(np.zeros(0, t) for t in _DTYPES), 0.0)
    flat = links.values.reshape(-1, 2).astype(np.int64)
    pair = row_of_each(links.lengths)
    # Every link seen from each side: (sentence, its word, other sentence, partner word).
    sentence = np.concatenate([pair, pair + n])
    word = np.concatenate([flat[:, 0], flat[:, 1]])
    other = np.concatenate([pair + n, pair])
    partner = np.concatenate([flat[:, 1], flat[:, 0]])

    # The aligned words of each sentence, and which of them get a masked copy.
    base = int(word.max()) + 1
    aligned, link_word = np.unique(sentence * base + word, return_inverse=True)
    aligned_sentence = aligned // base
    per_sentence = np.bincount(aligned_sentence, minlength=2 * n)
    if samples == 0:
        chosen = np.ones(len(aligned), dtype=bool)
        drawn = per_sentence
    else:
        order = np.lexsort((rng.random(len(aligned)), aligned_sentence))
        grouped = aligned_sentence[order]
        rank = np.empty(len(aligned), dtype=np.int64)
        rank[order] = np.arange(len(aligned)) - np.searchsorted(grouped, grouped)
        chosen = rank < samples
        drawn = np.minimum(per_sentence, samples)
    scale = per_sentence / np.maximum(drawn, 1)
    copy_of = np.full(len(aligned), -1, dtype=np.int64)
    copy_of[chosen] = np.arange(chosen.sum())

    def start(s: np.ndarray, w: np.ndarray) -> np.ndarray:
        return starts.values[starts.offsets[s] + w].astype(np.int64)

    def end(s: np.ndarray, w: np.ndarray) -> np.ndarray:
        return ends.values[ends.offsets[s] + w].astype(np.int64)

    links_per_sentence = len(word) / (2 * n)  # each link seen from both of its sentences
    # The copies: their sentences' subwords with the chosen word's subwords masked.
    copy_sentence, copy_word = aligned_sentence[chosen], (aligned % base)[chosen]
    rows = ids.take(copy_sentence)
    masked = end(copy_sentence, copy_word) - start(copy_sentence, copy_word)
    first = rows.offsets[:-1] + start(copy_sentence, copy_word)
    rows.values[np.repeat(first, masked) + within(masked)] = mask_id

    # One term per link whose word was masked: the clipped subwords of its partner.
    link_copy = copy_of[link_word]
    kept = link_copy >= 0
    sentence, word, other, partner = sentence[kept], word[kept], other[kept], partner[kept]
    own, target = start(sentence, word), start(other, partner)
    width = np.minimum(end(sentence, word) - own, end(other, partner) - target)
    step = within(width)
    return MaskedCopies(
        rows,
        copy_sentence.astype(np.int64),
        np.repeat(link_copy[kept], width),
        np.repeat(own, width) + step,
        ids.values[np.repeat(ids.offsets[other] + target, width) + step].astype(np.int64),
        np.repeat(scale[sentence] / width, width).astype(np.float32),
        np.repeat(1 / width, width).astype(np.float32),
        links_per_sentence,
    )


_DTYPES = (np.int64, np.int64, np.int64, np.int64, np.float32, np.float32)
