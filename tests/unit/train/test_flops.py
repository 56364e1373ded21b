"""The model FLOPs of a training step (`xlsent.train.flops`) against counts by hand.

A tiny shape: hidden 4, MLP 8, 2 layers, 50 ids, so a layer's matmul parameters are
4·4² + 2·4·8 = 128, and a sentence of l tokens costs, per layer, 6·128·l for its matmuls and
12·4·l² for attention.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from xlsent.train.flops import (
    StepFlops,
    encoder_flops,
    head_flops,
    micro_batch_flops,
    rtl_rows,
)

CONFIG = SimpleNamespace(hidden_size=4, intermediate_size=8, num_hidden_layers=2, vocab_size=50)


def _mask(lengths: list[int], width: int) -> torch.Tensor:
    return (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()


def _batch(lengths=(5, 4, 3, 5), width=5, **parts) -> SimpleNamespace:
    """A pair batch (foreign sides, then English), by default two pairs of width 5:
    sentences of 5, 4 (foreign) and 3, 5 (English) real tokens: 17."""
    mask = _mask(list(lengths), width)
    fields = {"awp": None, "wtr": None, "rtl": None, "lm": None, "hard": None, **parts}
    return SimpleNamespace(
        mask=mask, ids=torch.zeros_like(mask), n_pairs=len(lengths) // 2, **fields
    )


def _objectives(weights=("tr",), mlm=False, rtl=None, lm=None, direction="fwd"):
    return SimpleNamespace(
        encoder=SimpleNamespace(config=CONFIG),
        weights=dict.fromkeys(weights, 1.0),
        settings=SimpleNamespace(direction=direction),
        mlm=object() if mlm else None,
        rtl=rtl,
        lm=lm,
    )


# The two pairs of `_batch`: 6 · 2 · 128 · 17 + 12 · 2 · 4 · (25 + 16 + 9 + 25)
ENCODER = 26_112 + 7_200


def test_encoder_flops_count_matmuls_and_attention_over_each_sentences_own_length():
    # Two sentences of 5: 2 layers · (6 · 128 · 10 + 12 · 4 · (25 + 25))
    assert encoder_flops(CONFIG, [5, 5]) == 15_360 + 4_800
    assert encoder_flops(CONFIG, [5, 5], layers=1) == (15_360 + 4_800) / 2
    # 5 and 3 tokens, however wide the padded batch: attention 12 · 2 · 4 · (25 + 9)
    assert encoder_flops(CONFIG, torch.tensor([5, 3])) == 12_288 + 3_264


def test_head_flops_count_the_dense_layer_and_the_output_rows():
    assert head_flops(CONFIG, positions=3) == 6 * 3 * (4 * 4 + 4 * 50)  # 3,888
    assert head_flops(CONFIG, positions=3, rows=7) == 6 * 3 * (4 * 4 + 4 * 7)  # 792


def test_tr_counts_the_encoder_over_the_real_tokens_and_the_similarities():
    # The similarities: 2 queries against 2 candidates, 6 · 4 each
    assert micro_batch_flops(_objectives(), _batch()) == {"encoder": ENCODER, "tr": 96}
    # Both directions; every process's candidates (2 processes: 2 × 4 of them)
    both = micro_batch_flops(_objectives(direction="both"), _batch(), world_size=2)
    assert both["tr"] == 2 * 6 * 4 * 2 * 4


def test_hard_negatives_count_their_pass_and_each_querys_similarities_with_its_own():
    # Three negatives of 5, 2 and 4 tokens, the second pair's second slot empty (k = 2):
    # 2 layers · (6 · 128 · 11 + 12 · 4 · (25 + 4 + 16)), and 4 slots' products, 6 · 4 each.
    hard = SimpleNamespace(mask=_mask([5, 2, 4], 5), index=torch.tensor([[0, 1], [2, -1]]))
    negatives = 16_896 + 4_320
    flops = micro_batch_flops(_objectives(), _batch(hard=hard))
    assert flops == {"encoder": ENCODER, "tr": 96, "hard_negatives": negatives + 6 * 4 * 4}
    # Cached: their pass without a graph too, a third of it.
    cached = micro_batch_flops(_objectives(), _batch(hard=hard), cached=True)
    assert cached["hard_negatives"] == negatives * 4 / 3 + 6 * 4 * 4


def test_cached_tr_counts_its_pass_without_a_graph_and_the_whole_batchs_similarities():
    step = StepFlops(_objectives(), cached=True)
    for _ in range(2):  # two micro-batches of two pairs
        step.count(_batch())
    # Each micro-batch once more, forward only (a third); 4 queries against 4 candidates once.
    assert step.total() == {"encoder": 2 * ENCODER, "tr_cache": 2 * ENCODER / 3, "tr": 6 * 4 * 16}
    uncached = StepFlops(_objectives(), cached=False)
    for _ in range(2):
        uncached.count(_batch())
    assert uncached.total() == {"encoder": 2 * ENCODER, "tr": 2 * 96}


def test_awp_adds_a_pass_over_the_masked_copies_and_the_mlm_head():
    copies = _mask([6, 5, 4], 6)  # 15 real tokens, one target each
    awp = SimpleNamespace(mask=copies, ids=torch.zeros_like(copies), targets=[1, 2, 3])
    counted = micro_batch_flops(_objectives(("tr", "awp"), mlm=True), _batch(awp=awp))
    # 6 · 2 · 128 · 15 + 12 · 2 · 4 · (36 + 25 + 16), then the head at 3 positions: 6 · 3 · 216
    assert counted["awp"] == 23_040 + 7_392 + 3_888
    assert counted.keys() == {"encoder", "tr", "awp"}


def test_wtr_counts_its_word_pooling_and_each_links_cosines():
    # One pair, two words a side, 4 columns (CLS first). Foreign: word 0 of subwords 1-2,
    # word 1 of subword 3; English: word 0 of subword 1, word 1 without a subword.
    pool = torch.zeros(2, 2, 4)
    pool[0, 0, 1:3] = 0.5
    pool[0, 1, 3] = 1.0
    pool[1, 0, 1] = 1.0
    valid = torch.tensor([[True, True], [True, False]])
    links = torch.tensor([[0, 0, 0], [0, 1, 0]])  # both foreign words to English word 0
    wtr = SimpleNamespace(pool=pool, valid=valid, links=links)
    counted = micro_batch_flops(_objectives(("tr", "wtr")), _batch((4, 2), 4, wtr=wtr))
    # 4 subwords pooled; each link against the 1 English word, then against the 2 foreign
    # ones: 2 · 1 + 2 · 2 = 6 cosines; 6 · 4 FLOPs each of the 10
    assert counted["wtr"] == 6 * 4 * (4 + 6)


def test_rtl_counts_its_layers_over_source_and_masks_and_its_vocabulary():
    rtl = SimpleNamespace(layers=[None], vocabulary=list(range(7)))
    masks = SimpleNamespace(mask=_mask([3, 2], 4), targets=[0] * 5)  # 5 English tokens
    counted = micro_batch_flops(_objectives(("tr", "rtl"), rtl=rtl), _batch(rtl=masks))
    # Rows of the foreign tokens after CLS (4, 3) and the masks (3, 2): 7 and 5 long, one
    # layer: 6 · 128 · 12 + 12 · 4 · (49 + 25); the head's 7 rows at 5 positions.
    assert counted["rtl"] == 9_216 + 3_552 + 6 * 5 * (4 * 4 + 4 * 7)
    assert rtl_rows(_objectives(rtl=rtl)) == 7
    everything = SimpleNamespace(layers=[None], vocabulary=None)  # dap-all
    assert rtl_rows(_objectives(rtl=everything)) == CONFIG.vocab_size
    assert rtl_rows(_objectives()) is None


def test_tlm_adds_a_pass_over_the_concatenated_pairs_and_the_mlm_head():
    pairs = _mask([9, 7], 9)  # 16 real tokens, 4 targets
    lm = SimpleNamespace(mask=pairs, ids=torch.zeros_like(pairs), targets=[1, 2, 3, 4])
    counted = micro_batch_flops(_objectives(("tr", "tlm"), mlm=True, lm="tlm"), _batch(lm=lm))
    # 6 · 2 · 128 · 16 + 12 · 2 · 4 · (81 + 49), then the head at 4 positions: 6 · 4 · 216
    assert counted["tlm"] == 24_576 + 12_480 + 5_184
    # MLM's batch is its sentences alone: no pair pass, no similarities
    mlm = SimpleNamespace(
        ids=None, mask=None, n_pairs=0, awp=None, wtr=None, rtl=None, lm=lm, hard=None
    )
    assert micro_batch_flops(_objectives(("mlm",), mlm=True, lm="mlm"), mlm).keys() == {"mlm"}
