"""WSPAlign inference: question building, span decoding, link credit, batching and limits.

The models are built here: hand-set and "copy" QA modules whose answers are known exactly,
and a tiny randomly initialized XLM-R QA model for what must not depend on batching.
"""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
from support import ROOT, tiny_qa_model
from torch import nn
from transformers import (
    AutoTokenizer,
    BertTokenizer,
    XLMRobertaForQuestionAnswering,
)
from transformers.modeling_outputs import QuestionAnsweringModelOutput

from xlsent.align.links import SentencePair
from xlsent.align.wspalign import (
    WSPAlignConfig,
    WSPAligner,
    decode_spans,
    question,
)
from xlsent.config import aligner_settings, load
from xlsent.tokenize import word_offsets, word_tokenizer


def _pairs(rows: list[tuple[str, str]], lang: str) -> list[SentencePair]:
    """Sentence pairs with the tokenize stage's (spaCy) words."""
    en = word_tokenizer("en")([en for en, _ in rows])
    xx = word_tokenizer(lang)([xx for _, xx in rows])
    return [
        SentencePair(en_text, xx_text, en_words, xx_words)
        for (en_text, xx_text), en_words, xx_words in zip(rows, en, xx, strict=True)
    ]


@pytest.fixture(scope="module")
def tokenizer(small_tokenizer: Path):
    return AutoTokenizer.from_pretrained(small_tokenizer)


@pytest.fixture(scope="module")
def tiny_qa(tokenizer) -> XLMRobertaForQuestionAnswering:
    """A randomly initialized XLM-R QA model: arbitrary but fixed, non-trivial answers."""
    return tiny_qa_model(tokenizer, layers=2)


@pytest.fixture(scope="module")
def real_pairs(small_corpus) -> list[SentencePair]:
    """Real German and Kazakh pairs of the dev splits."""
    pairs = []
    for lang in ("de", "kk"):
        table = pq.read_table(small_corpus[lang]["dev"], columns=["en", "xx"]).slice(0, 30)
        pairs += _pairs(list(zip(*table.to_pydict().values(), strict=True)), lang)
    return pairs


def _unpadded(input_ids: torch.Tensor, attention_mask: torch.Tensor, row: int) -> list[int]:
    return input_ids[row, : int(attention_mask[row].sum())].tolist()


def _context_start_end(ids: list[int], sep_id: int) -> tuple[int, int]:
    """The context's tokens [start, end) of an XLM-R pair `<s> A </s></s> B </s>`."""
    return ids.index(sep_id) + 2, len(ids) - 1


# --- questions ----------------------------------------------------------------------------


def test_word_offsets_and_question_mark_the_word_at_its_characters():
    text = "I like cats."
    words = next(iter(word_tokenizer("en")([text])))
    assert words == ["I", "like", "cats", "."]
    offsets = word_offsets(text, words)
    assert offsets == [(0, 1), (2, 6), (7, 11), (11, 12)]
    assert question(text, offsets[1]) == "I  ¶ like ¶  cats."
    assert question(text, offsets[0]) == " ¶ I ¶  like cats."
    assert question(text, offsets[3]) == "I like cats ¶ . ¶ "


def test_a_repeated_word_gets_its_own_occurrence():
    text = "the cat saw the dog"
    offsets = word_offsets(text, ["the", "cat", "saw", "the", "dog"])
    assert offsets == [(0, 3), (4, 7), (8, 11), (12, 15), (16, 19)]
    assert question(text, offsets[3]) == "the cat saw  ¶ the ¶  dog"
    # A real CLDR name: punctuation words are located without spaces around them.
    real = "Spanish Peseta (A account)"
    words = next(iter(word_tokenizer("en")([real])))
    assert words == ["Spanish", "Peseta", "(", "A", "account", ")"]
    assert word_offsets(real, words)[2:4] == [(15, 16), (16, 17)]
    assert question(real, (16, 17)) == "Spanish Peseta ( ¶ A ¶  account)"


def test_a_word_not_in_the_text_or_out_of_order_is_not_located():
    assert word_offsets("I like cats.", ["I", "love", "cats"]) is None
    assert word_offsets("I like cats.", ["cats", "I"]) is None


# --- span decoding ------------------------------------------------------------------------


def test_decode_spans_normalise_with_the_no_answer_and_keep_the_band():
    """Softmaxes over the context tokens and CLS (position 0, the model's "no answer"), not
    over the question's or special tokens; the answer is a context span within the band."""
    start = torch.zeros(3, 8)
    end = torch.zeros(3, 8)
    context = torch.zeros(3, 8, dtype=torch.bool)
    # Row 0: context tokens 3..6; the question's tokens 1 and 2 have the largest logits (not
    # in the softmax); CLS has 1 and 0.5 (in it, never the answer).
    context[0, 3:7] = True
    start[0, 0], start[0, 1], start[0, 3], start[0, 4] = 1.0, 50.0, 2.0, 1.0
    end[0, 0], end[0, 2], end[0, 5] = 0.5, 50.0, 3.0
    # Row 1: context tokens 2..7; the best pair (2, 7) is 6 tokens long.
    context[1, 2:8] = True
    start[1, 2] = 8.0
    end[1, 3], end[1, 7] = 3.0, 10.0
    # Row 2: context tokens 1..6; the end's peak (2) comes before the start's (5).
    context[2, 1:7] = True
    start[2, 5] = 6.0
    end[2, 2], end[2, 5] = 6.0, 1.0

    s, e, score = decode_spans(start, end, context, max_answer_tokens=6)
    # Each normaliser: CLS's exp(logit), then the context tokens'.
    z_start0 = math.exp(1) + math.exp(2) + math.exp(1) + 2
    z_end0 = math.exp(0.5) + math.exp(3) + 3
    z_start1 = 1 + math.exp(8) + 5
    z_end1 = 1 + math.exp(10) + math.exp(3) + 4
    z_start2 = 1 + math.exp(6) + 5
    z_end2 = 1 + math.exp(6) + math.exp(1) + 4
    assert (s.tolist(), e.tolist()) == ([3, 2, 5], [5, 7, 5])
    assert score[0].item() == pytest.approx(math.exp(2) / z_start0 * math.exp(3) / z_end0)
    assert score[1].item() == pytest.approx(math.exp(8) / z_start1 * math.exp(10) / z_end1)
    assert score[2].item() == pytest.approx(math.exp(6) / z_start2 * math.exp(1) / z_end2)

    # One token shorter: (2, 7) leaves the band s ≤ e < s + 5; the best is then (2, 3).
    s, e, score = decode_spans(start, end, context, max_answer_tokens=5)
    assert (s[1].item(), e[1].item()) == (2, 3)
    assert score[1].item() == pytest.approx(math.exp(8) / z_start1 * math.exp(3) / z_end1)

    # CLS with the largest logits is still never the answer.
    start[0, 0] = end[0, 0] = 30.0
    s, e, score = decode_spans(start, end, context, max_answer_tokens=6)
    assert (s[0].item(), e[0].item()) == (3, 5) and score[0].item() < 1e-20


class FixedSpanQA(nn.Module):
    """Answers every question with the span of context tokens [start, end] (from the context's
    first token; negative: from its last), with logit 4 on both ends, 0 on the other context
    tokens, and `no_answer` on CLS.

    Question and the other special tokens get far larger logits: they must be ignored.
    """

    def __init__(self, sep_id: int, start: int, end: int, no_answer: float = 0.0):
        super().__init__()
        self.sep_id = sep_id
        self.start = start
        self.end = end
        self.no_answer = no_answer

    def forward(self, input_ids, attention_mask, **_):
        start = torch.full(input_ids.shape, 20.0)
        end = torch.full(input_ids.shape, 20.0)
        start[:, 0] = end[:, 0] = self.no_answer
        for row in range(len(input_ids)):
            first, stop = _context_start_end(_unpadded(input_ids, attention_mask, row), self.sep_id)
            start[row, first:stop] = 0.0
            end[row, first:stop] = 0.0
            start[row, first:stop][self.start] = 4.0
            end[row, first:stop][self.end] = 4.0
        return QuestionAnsweringModelOutput(start_logits=start, end_logits=end)


def _n_tokens(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def _fixed_score(tokenizer, context: str, no_answer: float = 0.0) -> float:
    """p_start · p_end of FixedSpanQA's span, by hand: logit 4 against n - 1 zeros and the
    no-answer's logit."""
    p = math.exp(4) / (math.exp(4) + _n_tokens(tokenizer, context) - 1 + math.exp(no_answer))
    return p * p


def _links(model: nn.Module, tokenizer, pair: SentencePair) -> dict:
    cfg = WSPAlignConfig(combine="union", threshold=0.0)
    return WSPAligner(model, tokenizer, cfg).align([pair])[0].links


def test_a_span_over_several_words_credits_each_its_share(tokenizer):
    pair = _pairs([("Hungarian Forint", "Ungarischer Forint")], "de")[0]
    links = _links(FixedSpanQA(tokenizer.sep_token_id, 0, -1), tokenizer, pair)
    # Every question's span is its whole context: both words, each half of the score.
    share = _fixed_score(tokenizer, pair.xx) / 2 + _fixed_score(tokenizer, pair.en) / 2
    assert links == pytest.approx({(0, 0): share, (0, 1): share, (1, 0): share, (1, 1): share})


def test_a_span_ending_inside_a_word_covers_the_word(tokenizer):
    """The span is widened to whole tokenizer words, as the reference pipeline does: an
    answer of the first token alone covers the first word, though the token is only part of
    it."""
    pair = _pairs([("I like cats.", "Ich mag Katzen.")], "de")[0]
    assert pair.en_words == ["I", "like", "cats", "."]
    assert pair.xx_words == ["Ich", "mag", "Katzen", "."]
    xx_chars = tokenizer(pair.xx, add_special_tokens=False, return_offsets_mapping=True)
    assert xx_chars["offset_mapping"][0][1] < len("Ich")  # the first token ends inside "Ich"
    f, r = _fixed_score(tokenizer, pair.xx), _fixed_score(tokenizer, pair.en)
    links = _links(FixedSpanQA(tokenizer.sep_token_id, 0, 0), tokenizer, pair)
    # en→xx: every English word's answer covers "Ich"; xx→en: every German word's covers "I".
    assert links == pytest.approx(
        {(i, j): (f if j == 0 else 0.0) + (r if i == 0 else 0.0) for i, j in links}
    )
    assert set(links) == {(i, 0) for i in range(4)} | {(0, j) for j in range(4)}


def test_a_span_over_a_word_and_its_punctuation_splits_the_credit(tokenizer):
    """ "Katzen." is one tokenizer word (a whitespace chunk) and two words of the tokenize
    stage: an answer on its last token covers both, each with half the score."""
    pair = _pairs([("I like cats.", "Ich mag Katzen.")], "de")[0]
    f, r = _fixed_score(tokenizer, pair.xx), _fixed_score(tokenizer, pair.en)
    links = _links(FixedSpanQA(tokenizer.sep_token_id, -1, -1), tokenizer, pair)
    # "Katzen" (2) and "." (3) on the German side, "cats" (2) and "." (3) on the English.
    expected = {(i, j): (f / 2 if j >= 2 else 0.0) + (r / 2 if i >= 2 else 0.0) for i, j in links}
    assert set(links) == {(i, j) for i in range(4) for j in range(4) if i >= 2 or j >= 2}
    assert links == pytest.approx(expected)


@pytest.mark.parametrize(("no_answer", "linked"), [(-20.0, True), (4.0, False)])
def test_the_no_answer_mass_suppresses_a_link(tokenizer, no_answer, linked):
    """The model puts mass on CLS for a word without a translation: the reference keeps CLS in
    the softmax, so the span's score drops. Scored over the context alone, both would pass
    0.9 (sum of both directions)."""
    pair = _pairs([("Hungarian Forint", "Ungarischer Forint")], "de")[0]
    model = FixedSpanQA(tokenizer.sep_token_id, -1, -1, no_answer=no_answer)
    cfg = WSPAlignConfig(combine="sum", threshold=0.9)
    links = WSPAligner(model, tokenizer, cfg).align([pair])[0].links
    score = _fixed_score(tokenizer, pair.xx, no_answer) + _fixed_score(
        tokenizer, pair.en, no_answer
    )
    assert _fixed_score(tokenizer, pair.xx, -100.0) + _fixed_score(tokenizer, pair.en, -100.0) > 0.9
    assert ((1, 1) in links) == linked
    if linked:
        assert links[(1, 1)] == pytest.approx(score)
    else:
        assert score < 0.9


# --- a copying model: exact links ---------------------------------------------------------


class CopyQA(nn.Module):
    """Answers with the first context tokens equal to the marked word's tokens.

    The question's marker ¶ is a token of its own (an added token, as in XLM-R's vocabulary);
    the words between the two markers are looked up in the context. A word with no copy gets
    flat logits.
    """

    def __init__(self, marker_id: int, sep_id: int):
        super().__init__()
        self.marker_id = marker_id
        self.sep_id = sep_id

    def forward(self, input_ids, attention_mask, **_):
        start = torch.zeros(input_ids.shape)
        end = torch.zeros(input_ids.shape)
        for row in range(len(input_ids)):
            ids = _unpadded(input_ids, attention_mask, row)
            first, stop = _context_start_end(ids, self.sep_id)
            left, right = (k for k, token in enumerate(ids[:first]) if token == self.marker_id)
            word = ids[left + 1 : right]
            for k in range(first, stop - len(word) + 1):
                if ids[k : k + len(word)] == word:
                    start[row, k] = end[row, k + len(word) - 1] = 10.0
                    break
        return QuestionAnsweringModelOutput(start_logits=start, end_logits=end)


@pytest.fixture(scope="module")
def marker_tokenizer(small_tokenizer: Path):
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    tokenizer.add_tokens(["¶"])
    return tokenizer


@pytest.mark.parametrize(
    ("method", "threshold", "expected"),
    [
        # f: the en→xx credit of a copied word, r: the xx→en one. "Forint" twice in English
        # is found once in German ((1, 0): en→xx only), "Kip" twice in German ((2, 2): xx→en).
        ("sum", 0.9, {(0, 0): "f+r", (1, 0): "f", (2, 1): "f+r"}),
        ("sum", 1.5, {(0, 0): "f+r", (2, 1): "f+r"}),
        ("intersection", 0.9, {(0, 0): "f+r", (2, 1): "f+r"}),
        ("union", 0.9, {(0, 0): "f+r", (1, 0): "f", (2, 1): "f+r", (2, 2): "r"}),
        ("mean", 0.9, {(0, 0): "(f+r)/2", (2, 1): "(f+r)/2"}),
    ],
)
def test_copied_words_are_linked_and_combined(marker_tokenizer, method, threshold, expected):
    pairs = _pairs(
        [("Forint Forint Kip", "Forint Kip Kip"), ("Hungarian Forint", "Ungarischer Forint")], "de"
    )
    model = CopyQA(marker_tokenizer.convert_tokens_to_ids("¶"), marker_tokenizer.sep_token_id)
    cfg = WSPAlignConfig(combine=method, threshold=threshold)
    aligned = WSPAligner(model, marker_tokenizer, cfg).align(pairs)

    def copied(context: str) -> float:  # p_start · p_end of the copy, by hand (CLS: 0)
        p = math.exp(10) / (math.exp(10) + _n_tokens(marker_tokenizer, context) - 1 + 1)
        return p * p

    def scores(pair: SentencePair) -> dict[str, float]:
        f, r = copied(pair.xx), copied(pair.en)
        return {"f": f, "r": r, "f+r": f + r, "(f+r)/2": (f + r) / 2}

    first = scores(pairs[0])
    assert aligned[0].links == pytest.approx({k: first[v] for k, v in expected.items()})
    # The real pair: only "Forint" is copied; the other words' flat answers stay far below.
    second = scores(pairs[1])
    assert aligned[1].links == pytest.approx(
        {(1, 1): second["(f+r)/2" if method == "mean" else "f+r"]}
    )
    assert all(a.status is None for a in aligned)


# --- batching, limits, statuses -----------------------------------------------------------


def test_batching_gives_the_links_of_one_pair_at_a_time(tokenizer, tiny_qa, real_pairs):
    cfg = WSPAlignConfig(combine="union", threshold=0.0)
    alone = [WSPAligner(tiny_qa, tokenizer, cfg).align([pair])[0] for pair in real_pairs]
    assert sum(len(a.links) >= 2 for a in alone) >= 5  # random answers, not trivial ones
    for batch_size in (1, 7, 64):
        cfg = WSPAlignConfig(combine="union", threshold=0.0, batch_size=batch_size)
        batched = WSPAligner(tiny_qa, tokenizer, cfg).align(real_pairs)
        assert len(batched) == len(real_pairs)
        for got, want in zip(batched, alone, strict=True):
            assert got.status is None
            assert got.links == pytest.approx(want.links, rel=1e-4)


def test_bf16_acts_on_cuda_and_the_paper_config_aligns_in_fp32(tokenizer, tiny_qa, real_pairs):
    """`precision: bf16` autocasts on CUDA only: on a CPU both settings compute in fp32 and
    give the same links. The paper config aligns as WSPAlign.InferEval's pipeline does, in
    fp32, whose scores WACSE's threshold was set on (issue 38)."""
    cfg = {"combine": "union", "threshold": 0.0, "device": "cpu"}
    links = {
        precision: [
            aligned.links
            for aligned in WSPAligner(
                tiny_qa, tokenizer, WSPAlignConfig(precision=precision, **cfg)
            ).align(real_pairs)
        ]
        for precision in ("fp32", "bf16")
    }
    assert links["bf16"] == links["fp32"]
    config = load(ROOT / "config.yaml", ROOT / "workflow/schemas/config.schema.yaml")
    assert aligner_settings(config, "wspalign")["precision"] == "fp32"


def test_skipped_pairs_get_a_status_and_leave_the_others_alone(tokenizer, tiny_qa, real_pairs):
    kept = real_pairs[:3]
    skipped = {
        "empty": SentencePair("Hungarian Forint", "", ["Hungarian", "Forint"], []),
        # a word made only of characters the tokenizer drops
        "empty_tokens": SentencePair("Forint", "\u200b", ["Forint"], ["\u200b"]),
        "word_not_in_text": SentencePair(
            "Hungarian Forint",
            "Ungarischer Forint",
            ["Hungarian", "Florin"],
            ["Ungarischer", "Forint"],
        ),
        "too_many_words": SentencePair(
            " ".join(["Forint"] * 65), "Forint", ["Forint"] * 65, ["Forint"]
        ),
        "too_many_tokens": SentencePair(
            " ".join(["Mikronesisches"] * 60), "Forint", ["Mikronesisches"] * 60, ["Forint"]
        ),
    }
    pairs = [kept[0], *skipped.values(), kept[1], kept[2]]
    cfg = WSPAlignConfig(combine="union", threshold=0.0, batch_size=4)
    aligned = WSPAligner(tiny_qa, tokenizer, cfg).align(pairs)
    assert [a.status for a in aligned] == [
        None,
        "empty",
        "empty",
        "word_not_in_text",
        "too_long",
        "too_long",
        None,
        None,
    ]
    assert all(a.links == {} for a in aligned if a.status)
    reference = WSPAligner(tiny_qa, tokenizer, cfg).align(kept)
    for got, want in zip([aligned[0], aligned[-2], aligned[-1]], reference, strict=True):
        assert got.links == pytest.approx(want.links, rel=1e-4)


def test_token_limits_are_exact_and_never_truncate(tokenizer, tiny_qa, real_pairs):
    pair = max(real_pairs, key=lambda p: len(p.en) + len(p.xx))
    context = max(_n_tokens(tokenizer, pair.en), _n_tokens(tokenizer, pair.xx))
    longest_question = max(
        _n_tokens(tokenizer, question(text, span))
        for text, words in ((pair.en, pair.en_words), (pair.xx, pair.xx_words))
        for span in word_offsets(text, words)
    )

    def status(max_question_tokens: int, max_context_tokens: int, max_words: int = 64) -> str:
        cfg = WSPAlignConfig(
            max_question_tokens=max_question_tokens,
            max_context_tokens=max_context_tokens,
            max_words=max_words,
        )
        return WSPAligner(tiny_qa, tokenizer, cfg).align([pair])[0].status

    assert status(longest_question, context) is None
    assert status(longest_question - 1, context) == "too_long"
    assert status(longest_question, context - 1) == "too_long"
    words = max(len(pair.en_words), len(pair.xx_words))
    assert status(longest_question, context, words) is None
    assert status(longest_question, context, words - 1) == "too_long"


class RecordingQA(nn.Module):
    """Records the padded rows it is given; answers with flat logits."""

    def __init__(self):
        super().__init__()
        self.rows: list[tuple[list[int], list[int], list[int] | None]] = []

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        for row in range(len(input_ids)):
            types = None if token_type_ids is None else token_type_ids[row].tolist()
            self.rows.append((input_ids[row].tolist(), attention_mask[row].tolist(), types))
        flat = torch.zeros(input_ids.shape)
        return QuestionAnsweringModelOutput(start_logits=flat, end_logits=flat)


def _model_inputs(tokenizer, pairs: list[SentencePair], batch_size: int) -> list[tuple]:
    """What the model sees of each question: (input ids, token type ids), unpadded."""
    model = RecordingQA()
    WSPAligner(model, tokenizer, WSPAlignConfig(batch_size=batch_size)).align(pairs)
    inputs = []
    for ids, mask, types in model.rows:
        n = sum(mask)
        assert mask == [1] * n + [0] * (len(mask) - n)
        assert ids[n:] == [tokenizer.pad_token_id] * (len(ids) - n)
        inputs.append((ids[:n], None if types is None else types[:n]))
    return sorted(inputs, key=str)


def _pair_encodings(tokenizer, pairs: list[SentencePair]) -> list[tuple]:
    """`tokenizer(question, context)` of every question of `pairs`, both directions."""
    encodings = []
    for pair in pairs:
        for text, words, context in (
            (pair.en, pair.en_words, pair.xx),
            (pair.xx, pair.xx_words, pair.en),
        ):
            for span in word_offsets(text, words):
                encoded = tokenizer(question(text, span), context)
                encodings.append((encoded["input_ids"], encoded.get("token_type_ids")))
    return sorted(encodings, key=str)


def test_the_model_sees_the_tokenizers_own_pair_encodings(tokenizer, real_pairs, tmp_path):
    # Questions and contexts are tokenized apart and joined: it must change nothing.
    pairs = real_pairs[:10] + real_pairs[-10:]
    assert _model_inputs(tokenizer, pairs, batch_size=16) == _pair_encodings(tokenizer, pairs)

    # A BERT-style tokenizer: [CLS] A [SEP] B [SEP], with token types 0 then 1.
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "¶", ".", "cats", "i", "ich"]
    (tmp_path / "vocab.txt").write_text("\n".join([*words, "katzen", "like", "mag"]) + "\n")
    bert = BertTokenizer(vocab_file=str(tmp_path / "vocab.txt"))
    pairs = _pairs([("I like cats.", "Ich mag Katzen."), ("Like cats!", "Katzen")], "de")
    inputs = _model_inputs(bert, pairs, batch_size=3)
    assert inputs == _pair_encodings(bert, pairs)
    assert all(types[0] == 0 and types[-1] == 1 for _, types in inputs)


def test_load_from_a_directory(tokenizer, tiny_qa, real_pairs, tmp_path):
    tiny_qa.save_pretrained(tmp_path / "qa")
    tokenizer.save_pretrained(tmp_path / "qa")
    cfg = WSPAlignConfig(combine="union", threshold=0.0)
    loaded = WSPAligner.load(tmp_path / "qa", cfg).align(real_pairs[:8])
    direct = WSPAligner(tiny_qa, tokenizer, cfg).align(real_pairs[:8])
    assert any(a.links for a in loaded)
    for got, want in zip(loaded, direct, strict=True):
        assert got.links == pytest.approx(want.links, rel=1e-5)


def test_invalid_settings_are_refused(tokenizer, tiny_qa, small_tokenizer: Path):
    with pytest.raises(ValueError, match="unknown combination"):
        WSPAlignConfig(combine="vote")
    with pytest.raises(ValueError, match="max_answer_tokens"):
        WSPAlignConfig(max_answer_tokens=0)
    short = AutoTokenizer.from_pretrained(small_tokenizer, model_max_length=256)
    with pytest.raises(ValueError, match="exceeds the tokenizer's model_max_length 256"):
        WSPAligner(tiny_qa, short, WSPAlignConfig())
    WSPAligner(tiny_qa, short, WSPAlignConfig(max_question_tokens=100))


def test_an_error_in_the_background_thread_reaches_the_caller(tokenizer, tiny_qa):
    broken = SentencePair("Forint", "Forint", [None], ["Forint"])
    with pytest.raises(TypeError):
        WSPAligner(tiny_qa, tokenizer).align([broken])
