"""Collators: the tensors each method's losses read, built from pairs, word spans and links;
MLM's and TLM's masking and joined pairs by hand."""

import ast
import dataclasses
import importlib

import numpy as np
import pytest
import torch
from support import ragged

from xlsent.ragged import Ragged
from xlsent.train.collate import Batch, Collator, Tokens, collate, mask_tokens
from xlsent.train.data import (
    Pairs,
    WordAligned,
)

T = Tokens(cls=0, sep=2, pad=1, mask=9)
LANGUAGES = {"en": 0, "de": 1, "kk": 2}

# Two pairs. Pair 0 (de): x = 10 11 | 12 (2 words), y = 20 | 21 22 (2 words), x0 ↔ y1.
# Pair 1 (kk): x = 30 (1 word), y = 40 41 | 42 (2 words), x0 ↔ y0 and x0 ↔ y1.
PAIRS = Pairs(
    xx=Ragged.from_rows([np.array([10, 11, 12]), np.array([30])]),
    en=Ragged.from_rows([np.array([20, 21, 22]), np.array([40, 41, 42])]),
    lang=np.array([0, 1], dtype=np.int16),
    langs=("de", "kk"),
)
WORDS = WordAligned(
    xx_starts=Ragged.from_rows([np.array([0, 2]), np.array([0])]),
    xx_ends=Ragged.from_rows([np.array([2, 3]), np.array([1])]),
    en_starts=Ragged.from_rows([np.array([0, 1]), np.array([0, 2])]),
    en_ends=Ragged.from_rows([np.array([1, 3]), np.array([2, 3])]),
    links=Ragged(np.array([[0, 1], [0, 0], [0, 1]], dtype=np.int32), np.array([0, 1, 3])),
)
BOTH = np.array([1, 0])  # pair 1 first: the batch's order, not the pool's


def test_collate_wraps_each_row_in_cls_sep_and_pads_to_the_longest():
    ids, mask = collate([np.array([5, 6, 7]), np.array([8])], T.cls, T.sep, T.pad)
    assert ids.tolist() == [[0, 5, 6, 7, 2], [0, 8, 2, 1, 1]]
    assert mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]


def test_tr_batch_is_2n_sentences_non_english_first_and_nothing_else():
    batch = Collator(T)(PAIRS, BOTH)
    assert batch.n_pairs == 2
    assert batch.ids.tolist() == [
        [0, 30, 2, 1, 1],
        [0, 10, 11, 12, 2],
        [0, 40, 41, 42, 2],
        [0, 20, 21, 22, 2],
    ]
    assert batch.mask.sum(1).tolist() == [3, 5, 5, 5]
    others = [f for f, v in vars(batch).items() if v is not None]
    assert others == ["ids", "mask"]


def test_language_ids_tag_every_token_and_every_masked_copy():
    collator = Collator(T, LANGUAGES, awp_samples=0)
    batch = collator(PAIRS, BOTH, WORDS, np.random.default_rng(0))
    assert batch.types[:, 0].tolist() == [2, 1, 0, 0]  # kk, de, en, en
    assert (batch.types == batch.types[:, :1]).all()
    # One copy per aligned word, sentence by sentence: kk x0; de x0; kk y0, y1; de y1.
    assert batch.awp.ids[:2].tolist() == [[0, 9, 2, 1, 1], [0, 9, 9, 12, 2]]
    assert batch.awp.types[:, 0].tolist() == [2, 1, 0, 0, 0]
    assert (batch.awp.types == batch.awp.types[:, :1]).all()


def test_awp_predicts_at_masked_positions_after_cls():
    awp = Collator(T, awp_samples=0)(PAIRS, BOTH, WORDS, np.random.default_rng(0)).awp
    copy, position = awp.predict.unbind(1)
    assert (awp.ids[copy, position] == T.mask).all()
    # Every aligned word is masked in its own copy: pair 1's x0, y0, y1; pair 0's x0, y1.
    assert len(awp.ids) == 5
    # Pair 1's x0 (one subword, 30) predicts y0's first subword (40) and y1's (42), clipped.
    x0 = awp.ids[:, 1] == T.mask
    x0_copy = int(np.flatnonzero((x0 & (awp.ids[:, 2] == T.sep)).numpy())[0])
    assert sorted(awp.targets[copy == x0_copy].tolist()) == [40, 42]
    assert awp.weights.dtype == torch.float32 and awp.targets.dtype == torch.int64


def test_awp_carries_its_terms_and_links_per_sentence_to_the_device():
    """What the diagnostics read: 3 links over the 2N = 4 sentences, and each prediction's
    share of its term (pair 0's x0 and y1 are 2 subwords each: a term of two halves a side;
    pair 1's links are clipped to one subword)."""
    batch = Collator(T, awp_samples=0)(PAIRS, BOTH, WORDS, np.random.default_rng(0))
    awp = batch.to(torch.device("cpu")).awp  # the number passes through as it is
    assert awp.links_per_sentence == 1.5
    assert awp.terms.dtype == torch.float32
    assert sorted(awp.terms.tolist()) == [0.5] * 4 + [1.0] * 4
    assert awp.terms.sum().item() == 6  # one term per link side


def test_wtr_links_name_their_pair_in_batch_order():
    batch = Collator(T, wtr=True)(PAIRS, BOTH, WORDS)
    assert batch.wtr.links.tolist() == [[0, 0, 0], [0, 0, 1], [1, 0, 1]]
    assert batch.wtr.valid.tolist() == [[True, False], [True, True], [True, True], [True, True]]
    assert batch.wtr.pool.shape == (4, 2, batch.ids.shape[1])
    assert batch.awp is None  # no AWP asked for


def test_rtl_targets_are_the_english_tokens_with_sep_without_cls_or_padding():
    """As DAP's released code: the English ids after CLS, </s> included, padding not."""
    batch = Collator(T, rtl=True)(PAIRS, BOTH)
    assert batch.rtl.targets.tolist() == [40, 41, 42, T.sep, 20, 21, 22, T.sep]
    assert batch.rtl.mask.shape == (2, batch.ids.shape[1] - 1)  # the English rows after CLS


def test_tlm_in_daps_layout_puts_each_padded_side_beside_the_other():
    """`tlm_input: dap`, DAP's code: the pair's two rows as the micro-batch pads them (width 5,
    its longest sentence with <s> and </s>), side by side, the padding between them masked,
    positions counted from 0 at each side's <s>, each side's language."""
    dap = Collator(T, LANGUAGES, ranking=False, lm="tlm", mlm_probability=1e-12, tlm_input="dap")
    batch = dap(PAIRS, BOTH, rng=np.random.default_rng(0))
    assert batch.ids is None and len(batch.lm.targets) == 0  # TLM alone, nothing chosen
    lm = batch.lm
    assert lm.ids.tolist() == [
        [0, 30, 2, 1, 1, 0, 40, 41, 42, 2],  # kk: x = 30, y = 40 41 42
        [0, 10, 11, 12, 2, 0, 20, 21, 22, 2],  # de
    ]
    assert lm.mask.tolist() == [[1, 1, 1, 0, 0, 1, 1, 1, 1, 1], [1] * 10]
    assert lm.positions.tolist() == [[0, 1, 2, 3, 4] * 2] * 2
    assert lm.types.tolist() == [[2] * 5 + [0] * 5, [1] * 5 + [0] * 5]
    # Everything chosen: every subword predicts itself at its column, y's after x's row and
    # y's <s>; the draws are the XLM layout's, subword for subword.
    every = Collator(T, ranking=False, lm="tlm", mlm_probability=1.0, vocab_size=50)
    ours = dataclasses.replace(every, tlm_input="dap")(PAIRS, BOTH, rng=np.random.default_rng(4))
    ours = ours.lm
    xlm = every(PAIRS, BOTH, rng=np.random.default_rng(4)).lm
    rows, columns = ours.predict.unbind(1)
    assert sorted(zip(rows.tolist(), columns.tolist(), strict=True)) == [
        (0, 1), (0, 6), (0, 7), (0, 8), (1, 1), (1, 2), (1, 3), (1, 6), (1, 7), (1, 8)
    ]  # fmt: skip
    assert ours.targets.tolist() == xlm.targets.tolist()
    assert lm.ids[rows, columns].tolist() == ours.targets.tolist()
    xlm_rows, xlm_columns = xlm.predict.unbind(1)
    assert ours.ids[rows, columns].tolist() == xlm.ids[xlm_rows, xlm_columns].tolist()


def test_word_objectives_need_word_alignments():
    with pytest.raises(ValueError, match="word alignments"):
        Collator(T, wtr=True)(PAIRS, BOTH)


def test_the_draws_are_the_generators_alone():
    """What a resumed run relies on: the same seed gives the same batch, bit for bit."""
    collator = Collator(T, LANGUAGES, wtr=True, awp_samples=1, rtl=True)

    def build(seed: int) -> Batch:
        return collator(PAIRS, BOTH, WORDS, np.random.default_rng(seed))

    def tensors(part: object) -> list[torch.Tensor | float | None]:
        """The tensors (and numbers: AWP's links per sentence) of a batch's fields and parts,
        in field order."""
        if not dataclasses.is_dataclass(part):
            return [part]
        return [t for f in dataclasses.fields(part) for t in tensors(getattr(part, f.name))]

    def same(a: torch.Tensor | float | None, b: torch.Tensor | float | None) -> bool:
        return torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b

    first, again = tensors(build(5)), tensors(build(5))
    assert all(same(a, b) for a, b in zip(first, again, strict=True))
    drawn = {tuple(build(seed).awp.ids[:, 1].tolist()) for seed in range(20)}
    assert len(drawn) > 1  # pair 1's y has two aligned words: the draw picks one


def test_to_keeps_the_fields_a_method_does_not_need_empty():
    batch = Collator(T, rtl=True)(PAIRS, BOTH).to(torch.device("cpu"))
    assert batch.wtr is None and batch.rtl.targets is not None


@pytest.mark.parametrize("name", ["tr", "awp", "wtr", "rtl", "mlm"])
def test_the_losses_build_no_batches_and_call_no_model(name):
    """Batch building lives here; a loss module imports nothing but torch."""
    module = importlib.import_module(f"xlsent.losses.{name}")
    with open(module.__file__) as f:
        tree = ast.parse(f.read())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "collections.abc", "torch", "torch.nn.functional"}


# -- MLM's and TLM's corruption (pretraining) -----------------------------------------------
TOKENS = Tokens(cls=0, sep=2, pad=1, mask=3)


def test_mask_tokens_chooses_and_corrupts_as_bert_does():
    rng = np.random.default_rng(0)
    rows = ragged([list(range(10, 10 + n)) for n in rng.integers(1, 30, size=4000)])
    replacements = np.arange(4, 200, dtype=np.int32)
    out = mask_tokens(rows, 0.15, TOKENS.mask, replacements, np.random.default_rng(1))
    n = len(rows.values)
    # Every chosen subword's target is the original at its row and position.
    flat = rows.offsets[out.row] + out.position
    np.testing.assert_array_equal(rows.values[flat], out.targets)
    assert abs(len(out.targets) / n - 0.15) < 0.01  # ~60K subwords: 0.15 ± 0.0015 (1 s.d.)
    corrupted = out.rows.values[flat]
    masked = corrupted == TOKENS.mask
    kept = corrupted == out.targets
    assert abs(masked.mean() - 0.8) < 0.02
    assert abs(kept.mean() - 0.1) < 0.02  # kept, or replaced by chance with itself
    changed = ~masked & ~kept
    assert abs(changed.mean() - 0.1) < 0.02
    assert np.isin(corrupted[changed], replacements).all()
    # What was not chosen is untouched.
    untouched = np.ones(n, dtype=bool)
    untouched[flat] = False
    np.testing.assert_array_equal(out.rows.values[untouched], rows.values[untouched])


def _uncorrupted(pairs: Pairs, index: np.ndarray):
    """The TLM batch of the pairs with nothing chosen, for comparing layouts."""
    plain = Collator(TOKENS, ranking=False, lm="tlm", mlm_probability=1e-12, vocab_size=50)
    return plain(pairs, index, rng=np.random.default_rng(0))


def test_tlm_concatenates_each_pair_and_restarts_positions():
    pairs = Pairs(
        xx=ragged([[5, 6], [7]]),
        en=ragged([[8], [9, 10, 11]]),
        lang=np.zeros(2, dtype=np.int16),
        langs=("de",),
    )
    collator = Collator(TOKENS, ranking=False, lm="tlm", mlm_probability=1.0, vocab_size=50)
    plain = _uncorrupted(pairs, np.array([0, 1]))
    assert plain.ids is None  # no pair batch: TLM alone
    # <s> x </s> </s> y </s>, padded with 1.
    assert plain.lm.ids.tolist() == [[0, 5, 6, 2, 2, 8, 2, 1], [0, 7, 2, 2, 9, 10, 11, 2]]
    assert plain.lm.mask.tolist() == [[1] * 7 + [0], [1] * 8]
    # Positions restart at y's first </s> (column len(x) + 2); padding 0.
    assert plain.lm.positions.tolist() == [[0, 1, 2, 3, 0, 1, 2, 0], [0, 1, 2, 0, 1, 2, 3, 4]]
    assert len(plain.lm.targets) == 0
    # Everything chosen: every subword of both sides predicts itself, at its column.
    batch = collator(pairs, np.array([0, 1]), rng=np.random.default_rng(3))
    rows, cols = batch.lm.predict[:, 0], batch.lm.predict[:, 1]
    assert sorted(zip(rows.tolist(), cols.tolist(), strict=True)) == [
        (0, 1), (0, 2), (0, 5), (1, 1), (1, 4), (1, 5), (1, 6)
    ]  # fmt: skip
    assert plain.lm.ids[rows, cols].tolist() == batch.lm.targets.tolist()


def test_tlm_language_ids_follow_each_side():
    pairs = Pairs(ragged([[5, 6]]), ragged([[8]]), np.zeros(1, dtype=np.int16), ("kk",))
    collator = Collator(
        TOKENS, {"en": 0, "kk": 1}, ranking=False, lm="tlm", mlm_probability=1e-12, vocab_size=50
    )
    batch = collator(pairs, np.array([0]), rng=np.random.default_rng(0))
    assert batch.lm.types.tolist() == [[1, 1, 1, 1, 0, 0, 0]]


def test_collate_of_the_pair_batch_is_unchanged_by_language_modelling():
    """tr-tlm's pair batch is TR's: the TLM sequences come beside it."""
    pairs = Pairs(ragged([[5, 6], [7]]), ragged([[8], [9, 10]]), np.zeros(2, np.int16), ("de",))
    tr = Collator(TOKENS)(pairs, np.array([1, 0]))
    both = Collator(TOKENS, lm="tlm", vocab_size=50)(
        pairs, np.array([1, 0]), rng=np.random.default_rng(0)
    )
    expected, _ = collate(ragged([[7], [5, 6], [9, 10], [8]]), 0, 2, 1)
    assert torch.equal(tr.ids, expected) and torch.equal(both.ids, expected)
    assert both.lm is not None and tr.lm is None
