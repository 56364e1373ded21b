"""WSPAlign: word alignment as extractive question answering (inference only).

WSPAlign (Wu, Nagata and Tsuruoka, "WSPAlign: Word Alignment Pre-training via Large-Scale
Weakly Supervised Span Prediction", ACL 2023) fine-tunes a multilingual encoder with a
SQuAD-style span head. To align a word w of a source sentence S, the *question* is S with w
enclosed in markers (`S[:a] + " ¶ " + w + " ¶ " + S[b:]`) and the *context* is the target
sentence T; the predicted answer span of T is what w aligns to. Any
`AutoModelForQuestionAnswering` checkpoint with its tokenizer works (e.g.
`qiyuw/WSPAlign-xlm-base`, or a local directory).

Scores follow the reference inference (WSPAlign.InferEval's `inference.py`, the code WACSE
cites for its threshold, which runs Hugging Face's question-answering pipeline):

- Per question, the start and end logits are softmaxed separately over the context tokens
  and the first token (CLS, `<s>`): WSPAlign is trained SQuAD-2 style, a word without a
  translation answered by CLS, so the mass the model puts there ("no answer") lowers every
  span's score. CLS is then excluded from the answer. A span (s, e) with s ≤ e < s +
  `max_answer_tokens` scores p_start[s] · p_end[e]; the best one is kept.
- The span is widened to whole tokenizer words (the pipeline's `token_to_word` and
  `word_to_chars`): a span that starts or ends inside a word covers all of it. For XLM-R a
  tokenizer word is a whitespace-delimited chunk ("Katzen." is one), so in scripts written
  without spaces a span widens to the whole run of text (the reference's behaviour too).
- The target words (the tokenize stage's) lying entirely inside the widened span are covered;
  each gets the span's score divided by the number covered.

Both directions run (English words over the foreign sentence and the reverse) and
`xlsent.align.links.combine` merges them, by default `sum` with threshold 0.9 as in WACSE:
the reference's `bidirectional_align` with the English side as its source (links proposed by
English words, the reverse credit added), which sentence WACSE passed as the source is not
stated.

Throughput matters (tens of millions of pairs), so the questions of many pairs are tokenized
together in a background thread, sorted by length into padded batches, and decoded on the
device with tensor operations; results are scattered back per pair in input order. A
sentence is the context of every question about a word of the other side, so each sentence
is tokenized once and each question alone, and the two are joined with the tokenizer's own
pair template. Pairs beyond the length limits are skipped with a status, never truncated.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from xlsent.align.links import COMBINATIONS, PairAlignment, ScoredLinks, SentencePair, combine
from xlsent.defaults import schema_defaults
from xlsent.tf32 import tf32_matmuls
from xlsent.tokenize import word_offsets

MARKER = " ¶ "
PRECISIONS = ("bf16", "fp32", "tf32")

# Pairs per chunk, in units of batch_size: a pair gives about 2 × words questions, so a chunk
# fills dozens of batches, enough for sorting by length to leave little padding.
_CHUNK_FACTOR = 4
# Chunks prepared ahead of the device: one in the making while one waits never starves the
# device, and bounds the memory held by prepared batches.
_PREFETCH_CHUNKS = 2
# Character offset of padding "words": no span ends after it, so padding is never covered.
_NO_WORD = np.iinfo(np.int32).max


@dataclass(frozen=True)
@schema_defaults("align.wspalign")
class WSPAlignConfig:
    """The aligner's settings: the `align.wspalign` block less `model` (the rule passes its
    directory) and `gpus` (the job's resource). Defaults are the schema's."""

    threshold: float
    combine: str
    batch_size: int  # questions per forward pass
    max_question_tokens: int
    max_context_tokens: int
    max_answer_tokens: int
    max_words: int
    device: str  # auto: cuda if available
    precision: str  # bf16 autocast on CUDA, else fp32; tf32: TF32 matmuls on CUDA

    @property
    def chunk_pairs(self) -> int:
        """Pairs the aligner prepares and batches together: their batches depend on no other
        pair, so aligning runs of a multiple of it gives what aligning all at once gives."""
        return _CHUNK_FACTOR * self.batch_size

    def __post_init__(self) -> None:
        if self.combine not in COMBINATIONS:
            raise ValueError(
                f"unknown combination {self.combine!r}; use one of {', '.join(COMBINATIONS)}"
            )
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"unknown precision {self.precision!r}; use one of {', '.join(PRECISIONS)}"
            )
        for name in (
            "batch_size",
            "max_question_tokens",
            "max_context_tokens",
            "max_answer_tokens",
            "max_words",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")


def question(text: str, offsets: tuple[int, int]) -> str:
    """`text` with the word at character `offsets` enclosed in WSPAlign's ¶ markers."""
    start, end = offsets
    return text[:start] + MARKER + text[start:end] + MARKER + text[end:]


def decode_spans(
    start_logits: torch.Tensor,
    end_logits: torch.Tensor,
    context: torch.Tensor,
    max_answer_tokens: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The best answer span of each row of a batch: (start token, end token, score).

    `context` [batch, tokens] marks the tokens an answer may use (every row needs one).
    Probabilities are softmaxes over those tokens and the first one, CLS, whose mass is the
    model's "no answer" (SQuAD 2); CLS is then no answer token. A span (s, e) with s ≤ e <
    s + `max_answer_tokens` scores p_start[s] · p_end[e]. The outer product is taken in log
    space so that tiny probabilities cannot underflow to zero and let an invalid span tie for
    best.
    """
    length = start_logits.shape[1]
    normaliser = context.clone()
    normaliser[:, 0] = True

    def log_probs(logits: torch.Tensor) -> torch.Tensor:
        log_p = logits.float().masked_fill(~normaliser, -torch.inf).log_softmax(-1)
        return log_p.masked_fill(~context, -torch.inf)

    log_start, log_end = log_probs(start_logits), log_probs(end_logits)
    position = torch.arange(length, device=start_logits.device)
    width = position[None, :] - position[:, None]  # [s, e] → e - s
    band = (width >= 0) & (width < max_answer_tokens)
    joint = (log_start[:, :, None] + log_end[:, None, :]).masked_fill(~band, -torch.inf)
    best, flat = joint.flatten(1).max(-1)
    return flat // length, flat % length, best.exp()


class _PairTemplate:
    """How a tokenizer joins a question and a context: `prefix A middle B suffix`.

    Read off the encoding of a probe pair and checked against it, so that questions and
    contexts tokenized separately (each sentence once, however many questions it answers)
    give exactly the model inputs of `tokenizer(question, context)`.
    """

    def __init__(self, tokenizer: Any):
        # Any pair with tokens on both sides would do.
        q_text, c_text = question("I like cats.", (2, 6)), "Ich mag Katzen."
        pair = tokenizer(q_text, c_text)
        sequence = pair.sequence_ids(0)
        q_at = [k for k, s in enumerate(sequence) if s == 0]
        c_at = [k for k, s in enumerate(sequence) if s == 1]
        parts = (
            slice(None, q_at[0]),
            q_at[0],
            slice(q_at[-1] + 1, c_at[0]),
            c_at[0],
            slice(c_at[-1] + 1, None),
        )
        ids = pair["input_ids"]
        self.prefix, _, self.middle, _, self.suffix = (ids[part] for part in parts)
        if self.prefix[:1] != [tokenizer.cls_token_id]:
            raise ValueError(
                f"{type(tokenizer).__name__} does not start a pair with its CLS token, the "
                "position of WSPAlign's no-answer"
            )
        self.extra = len(self.prefix) + len(self.middle) + len(self.suffix)
        # BERT-style models also take token type ids: those of the special tokens, and one
        # type for all of A and one for all of B (checked below).
        types = pair.get("token_type_ids")
        self.types = None if types is None else tuple(types[part] for part in parts)
        q_ids, c_ids = _ids(tokenizer, [q_text, c_text])
        if self.join(q_ids, c_ids) != ids or (
            types is not None and self.join_types(len(q_ids), len(c_ids)) != types
        ):
            raise ValueError(
                f"{type(tokenizer).__name__} does not encode a pair as its two sequences "
                "tokenized alone and joined by special tokens; WSPAlign cannot use it"
            )

    def join(self, q_ids: list[int], c_ids: list[int]) -> list[int]:
        """The input ids of a question and a context tokenized alone."""
        return self.prefix + q_ids + self.middle + c_ids + self.suffix

    def join_types(self, n_question: int, n_context: int) -> list[int]:
        """The token type ids of a question and a context of these lengths."""
        prefix, q_type, middle, c_type, suffix = self.types
        return prefix + [q_type] * n_question + middle + [c_type] * n_context + suffix


def _ids(tokenizer: Any, texts: list[str]) -> list[list[int]]:
    """Token ids of each text alone, without special tokens."""
    return tokenizer(
        texts, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False
    )["input_ids"]


@dataclass(frozen=True)
class _Context:
    """A sentence as the context of questions: its tokens and where its words are."""

    ids: list[int]
    token_chars: list[tuple[int, int]]  # the span of each token's tokenizer word, in characters
    word_chars: list[tuple[int, int]]  # character span of each (tokenize stage) word


def _widened(offsets: list[tuple[int, int]], words: list[int | None]) -> list[tuple[int, int]]:
    """Each token's character span widened to its tokenizer word (the tokens of one word id):
    what an answer starting or ending on the token covers."""
    span: dict[int, tuple[int, int]] = {}
    for (start, end), word in zip(offsets, words, strict=True):
        if word is not None:
            low, high = span.get(word, (start, end))
            span[word] = (min(low, start), max(high, end))
    return [offset if w is None else span[w] for offset, w in zip(offsets, words, strict=True)]


@dataclass(frozen=True)
class _Question:
    """A word of one side of a pair, marked, asked over the other side."""

    pair: int  # index of the pair in the input
    forward: bool  # True: an English word asked over the foreign sentence (en→xx)
    word: int  # index of the marked word on the question's side
    ids: list[int]  # the marked sentence's tokens
    context: _Context


@dataclass
class _Batch:
    """Padded model inputs of a batch of questions and what maps answers back to words."""

    inputs: dict[str, torch.Tensor]
    context: torch.Tensor  # [B, L] bool: the context's tokens
    token_chars: np.ndarray  # [B, L, 2]: character span of each context token
    word_chars: np.ndarray  # [B, W, 2]: character span of each context word
    questions: list[_Question]


@dataclass
class _Chunk:
    """A run of consecutive pairs: the statuses of skipped ones, the batches of the others."""

    skipped: dict[int, str]  # pair index → status
    batches: list[_Batch]


class WSPAligner:
    """Align sentence pairs with a WSPAlign span-prediction model (see the module docstring).

    `model` is an nn.Module returning `start_logits` and `end_logits` (any
    `AutoModelForQuestionAnswering`); `tokenizer` must give offset mappings (a Rust-backed
    Hugging Face tokenizer).
    """

    def __init__(self, model: nn.Module, tokenizer: Any, cfg: WSPAlignConfig | None = None):
        self.cfg = cfg or WSPAlignConfig()
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(
                "WSPAlign needs a tokenizer with offset mappings (a Rust-backed `tokenizers` "
                f"one); got {type(tokenizer).__name__}"
            )
        self._template = _PairTemplate(tokenizer)
        longest = self.cfg.max_question_tokens + self.cfg.max_context_tokens + self._template.extra
        if longest > tokenizer.model_max_length:
            raise ValueError(
                f"max_question_tokens + max_context_tokens + special tokens = {longest} exceeds "
                f"the tokenizer's model_max_length {tokenizer.model_max_length}; lower the limits"
            )
        device = self.cfg.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self._bf16 = self.device.type == "cuda" and self.cfg.precision == "bf16"

    @classmethod
    def load(cls, model_dir: str | Path, cfg: WSPAlignConfig | None = None) -> WSPAligner:
        """An aligner from a directory holding a question-answering model and its tokenizer."""
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        return cls(
            AutoModelForQuestionAnswering.from_pretrained(model_dir),
            AutoTokenizer.from_pretrained(model_dir),
            cfg,
        )

    def align(self, pairs: Sequence[SentencePair]) -> list[PairAlignment]:
        """The combined links of each pair, in input order, or the status it was skipped with.

        Statuses: "empty" (a side without words or tokens), "word_not_in_text" (a word not
        found in its sentence), "too_long" (more than `max_words` words on a side, or a
        question or context beyond its token limit).
        """
        statuses: list[str | None] = [None] * len(pairs)
        en2xx: list[ScoredLinks] = [{} for _ in pairs]
        xx2en: list[ScoredLinks] = [{} for _ in pairs]
        # A batch's answers are read back only once the next batch is queued, so that an
        # asynchronous device computes while Python turns answers into links.
        pending: tuple[_Batch, tuple[torch.Tensor, ...]] | None = None
        for chunk in self._chunks(pairs):
            for index, status in chunk.skipped.items():
                statuses[index] = status
            for batch in chunk.batches:
                spans = self._spans(batch)
                if pending is not None:
                    _credit(*pending, en2xx, xx2en)
                pending = batch, spans
        if pending is not None:
            _credit(*pending, en2xx, xx2en)
        return [
            PairAlignment(status=status)
            if status
            else PairAlignment(links=combine(f, r, self.cfg.combine, self.cfg.threshold))
            for status, f, r in zip(statuses, en2xx, xx2en, strict=True)
        ]

    def _chunks(self, pairs: Sequence[SentencePair]) -> Iterator[_Chunk]:
        """The chunks of `pairs` in order, each prepared in a background thread.

        Tokenization (Rust, which releases the GIL) and padding of the next chunks overlap
        the model's work on the current one.
        """
        size = self.cfg.chunk_pairs
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wspalign-prepare")
        try:
            futures = (
                pool.submit(self._prepare, pairs[start : start + size], start)
                for start in range(0, len(pairs), size)
            )
            ahead = deque(itertools.islice(futures, _PREFETCH_CHUNKS))
            while ahead:
                chunk = ahead.popleft().result()
                ahead.extend(itertools.islice(futures, 1))
                yield chunk
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _prepare(self, pairs: Sequence[SentencePair], first: int) -> _Chunk:
        """The questions of `pairs` (numbered from `first`), checked, sorted and padded."""
        skipped: dict[int, str] = {}
        located: list[tuple[int, SentencePair, list[tuple[int, int]], list[tuple[int, int]]]] = []
        for index, pair in enumerate(pairs, start=first):
            if not pair.en_words or not pair.xx_words:
                skipped[index] = "empty"
            elif max(len(pair.en_words), len(pair.xx_words)) > self.cfg.max_words:
                skipped[index] = "too_long"
            elif (en := word_offsets(pair.en, pair.en_words)) is None or (
                xx := word_offsets(pair.xx, pair.xx_words)
            ) is None:
                skipped[index] = "word_not_in_text"
            else:
                located.append((index, pair, en, xx))
        if not located:
            return _Chunk(skipped, [])
        contexts = self.tokenizer(
            [text for _, pair, _, _ in located for text in (pair.en, pair.xx)],
            add_special_tokens=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            return_offsets_mapping=True,
        )
        marked = [
            question(text, span)
            for _, pair, en, xx in located
            for text, spans in ((pair.en, en), (pair.xx, xx))
            for span in spans
        ]
        question_ids = iter(_ids(self.tokenizer, marked))
        questions: list[_Question] = []
        for k, (index, _, en, xx) in enumerate(located):
            en_context, xx_context = (
                _Context(
                    contexts["input_ids"][j],
                    _widened(contexts["offset_mapping"][j], contexts.word_ids(j)),
                    words,
                )
                for j, words in ((2 * k, en), (2 * k + 1, xx))
            )
            pair_questions = [
                _Question(index, True, w, next(question_ids), xx_context) for w in range(len(en))
            ] + [_Question(index, False, w, next(question_ids), en_context) for w in range(len(xx))]
            status = self._status(pair_questions, en_context, xx_context)
            if status:
                skipped[index] = status
            else:
                questions += pair_questions
        questions.sort(key=lambda q: len(q.ids) + len(q.context.ids))
        size = self.cfg.batch_size
        batches = [self._pad(questions[i : i + size]) for i in range(0, len(questions), size)]
        return _Chunk(skipped, batches)

    def _status(
        self, questions: list[_Question], en_context: _Context, xx_context: _Context
    ) -> str | None:
        """Why a pair's tokenized questions cannot be asked, or None."""
        if not en_context.ids or not xx_context.ids:
            return "empty"  # words made only of what the tokenizer drops
        longest_question = max(len(q.ids) for q in questions)
        longest_context = max(len(en_context.ids), len(xx_context.ids))
        if (
            longest_question > self.cfg.max_question_tokens
            or longest_context > self.cfg.max_context_tokens
        ):
            return "too_long"
        return None

    def _pad(self, questions: list[_Question]) -> _Batch:
        """One padded batch: model inputs, context masks and character spans."""
        template = self._template
        lengths = [len(q.ids) + len(q.context.ids) + template.extra for q in questions]
        shape = (len(questions), max(lengths))
        input_ids = np.full(shape, self.tokenizer.pad_token_id, np.int64)
        attention = np.zeros(shape, np.int64)
        types = np.zeros(shape, np.int64)
        context = np.zeros(shape, bool)
        token_chars = np.zeros((*shape, 2), np.int32)
        word_chars = np.full(
            (len(questions), max(len(q.context.word_chars) for q in questions), 2),
            _NO_WORD,
            np.int32,
        )
        for r, (q, n) in enumerate(zip(questions, lengths, strict=True)):
            input_ids[r, :n] = template.join(q.ids, q.context.ids)
            attention[r, :n] = 1
            if template.types:
                types[r, :n] = template.join_types(len(q.ids), len(q.context.ids))
            start = len(template.prefix) + len(q.ids) + len(template.middle)
            end = start + len(q.context.ids)
            context[r, start:end] = True
            token_chars[r, start:end] = q.context.token_chars
            word_chars[r, : len(q.context.word_chars)] = q.context.word_chars
        tensors = {"input_ids": input_ids, "attention_mask": attention, "context": context}
        if template.types:
            tensors["token_type_ids"] = types
        tensors = {name: torch.from_numpy(a) for name, a in tensors.items()}
        if self.device.type == "cuda":
            # Page-locked memory lets the copy to the device run asynchronously.
            tensors = {name: t.pin_memory() for name, t in tensors.items()}
        mask = tensors.pop("context")
        return _Batch(tensors, mask, token_chars, word_chars, questions)

    @torch.inference_mode()
    def _spans(self, batch: _Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run the model on a batch; its best spans, still on the device."""
        inputs = {k: v.to(self.device, non_blocking=True) for k, v in batch.inputs.items()}
        with (
            tf32_matmuls(self.cfg.precision == "tf32"),
            torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self._bf16),
        ):
            out = self.model(**inputs)
        return decode_spans(
            out.start_logits,
            out.end_logits,
            batch.context.to(self.device, non_blocking=True),
            self.cfg.max_answer_tokens,
        )


def _credit(
    batch: _Batch,
    spans: tuple[torch.Tensor, ...],
    en2xx: list[ScoredLinks],
    xx2en: list[ScoredLinks],
) -> None:
    """Credit the words each answer span covers, score / covered words, keyed (en, xx)."""
    start, end, score = (t.cpu().numpy() for t in spans)
    rows = np.arange(len(start))
    first_char = batch.token_chars[rows, start, 0]
    end_char = batch.token_chars[rows, end, 1]
    covered = (batch.word_chars[:, :, 0] >= first_char[:, None]) & (
        batch.word_chars[:, :, 1] <= end_char[:, None]
    )
    row, target = np.nonzero(covered)
    credit = score[row] / covered.sum(1)[row]
    for r, j, c in zip(row.tolist(), target.tolist(), credit.tolist(), strict=True):
        q = batch.questions[r]
        if q.forward:
            en2xx[q.pair][q.word, j] = c
        else:
            xx2en[q.pair][j, q.word] = c
