"""RTL's head (DAP eq. 4, `xlsent.models.rtl_head`): its input (DAP's code: the padded layout
through the head's embedding layer), what it predicts, and the loss over its English rows by
hand; its output layer over the English token ids (DAP's code), which the trainer derives from
its data (the loss alone: tests/unit/losses/test_rtl.py)."""

import math

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from support import scratch_trainer, tiny_encoder, tiny_shape, train_settings

from xlsent.losses.rtl import representation_translation_loss
from xlsent.models.rtl_head import RTLHead, english_vocabulary
from xlsent.train import speed
from xlsent.train.loop import Preempted, Trainer


def test_head_starts_from_the_encoders_last_layers_and_owns_its_copies():
    encoder = tiny_encoder(layers=3)
    head = RTLHead(encoder, layers=2, mask_id=4)
    last = encoder.encoder.layer[1:]
    for mine, theirs in zip(head.layers, last, strict=True):
        for (name, a), (_, b) in zip(
            mine.named_parameters(), theirs.named_parameters(), strict=True
        ):
            assert torch.equal(a, b), name
            assert a.data_ptr() != b.data_ptr()  # a copy, trained on its own
    assert head.embeddings.word_embeddings.weight.data_ptr() != (
        encoder.embeddings.word_embeddings.weight.data_ptr()
    )
    # Its MLM head predicts through its own embeddings.
    assert head.lm_head.decoder.weight is head.embeddings.word_embeddings.weight
    with pytest.raises(ValueError, match="1 to 3 layers"):
        RTLHead(encoder, layers=4)


@pytest.mark.parametrize("kind", ["xlm-roberta", "bert"])
def test_padding_is_neither_attended_nor_predicted(kind):
    head = RTLHead(tiny_encoder(kind=kind), layers=2, mask_id=4).eval()
    torch.manual_seed(1)
    states = torch.randn(2, 5, 16)
    source_mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    target_mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    logits = head(states, source_mask, target_mask)
    assert logits.shape == (5, 50)  # the five real English tokens, row by row
    changed = states.clone()
    changed[0, 3:] = 100.0  # the first sentence's source padding
    assert torch.allclose(head(changed, source_mask, target_mask), logits, atol=1e-5)
    # Sentence 0 alone gives the same predictions: no state of sentence 1 leaks in.
    single = head(states[:1], source_mask[:1], target_mask[:1])
    assert torch.allclose(single, logits[:2], atol=1e-5)


# -- g^[0] as DAP's code computes it -----------------------------------------------------------
def _daps_head_input(head: RTLHead, states, source, english) -> torch.Tensor:
    """DAP's cl_forward (rtl_pattern target) written out over whole rows, CLS columns and all,
    with the head's modules: the [MASK] row embedded with the model's own position numbering,
    [x's states; the masks] embedded again as `inputs_embeds` (numbered in sequence), both
    CLS columns blocked, the English tokens after CLS predicted."""
    width = states.shape[1]
    masks = torch.where(english.bool(), head.mask_id, head.pad_id)
    embed = head.embeddings
    mask_states = embed(input_ids=masks, token_type_ids=torch.zeros_like(masks))
    joined = torch.cat([states, mask_states], dim=1)
    hidden = embed(inputs_embeds=joined, token_type_ids=torch.zeros(joined.shape[:2], dtype=int))
    attend = torch.cat([source, english], dim=1).bool()
    attend[:, [0, width]] = False
    additive = torch.zeros(attend.shape).masked_fill(~attend, torch.finfo(torch.float).min)
    for layer in head.layers:
        out = layer(hidden, attention_mask=additive[:, None, None, :])
        hidden = out[0] if isinstance(out, tuple) else out
    return head.lm_head(hidden[:, width + 1 :][english[:, 1:].bool()])


# Two pairs padded to the batch's width 5: x rows of 3 and 5 tokens, y rows of 4 and 3 (CLS,
# subwords, </s>), as the collator lays out a micro-batch.
SOURCE = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
ENGLISH = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])


@pytest.mark.parametrize("kind", ["xlm-roberta", "bert"])
def test_the_heads_input_is_daps_layout_through_its_embedding_layer(kind):
    """The states after CLS and the masks, at the code's positions, through the head's
    embeddings (position and type embeddings, LayerNorm) before its layers: the logits of the
    code's whole-row computation, for XLM-R (positions from padding_idx + 1) and BERT (from
    0, multilingual-e5's) alike."""
    head = RTLHead(tiny_encoder(kind=kind), layers=2, mask_id=4).eval()
    torch.manual_seed(1)
    states = torch.randn(2, 5, 16)  # the encoder's last states, CLS in column 0
    logits = head(states[:, 1:], SOURCE[:, 1:], ENGLISH[:, 1:])
    assert logits.shape == (int(ENGLISH[:, 1:].sum()), 50)  # the 5 English tokens after CLS
    with torch.no_grad():
        expected = _daps_head_input(head, states, SOURCE, ENGLISH)
    assert torch.allclose(logits, expected, atol=1e-5)


@pytest.mark.parametrize("kind", ["xlm-roberta", "bert"])
def test_the_source_states_pass_the_heads_positions_and_layer_norm(kind):
    """What the raw states fed to the layers (before the fix) would not show: the head's
    position embeddings change its output, and with its embedding LayerNorm's gain at 0 every
    input column is the LayerNorm's bias, so the source states no longer matter."""
    head = RTLHead(tiny_encoder(kind=kind), layers=2, mask_id=4).eval()
    torch.manual_seed(1)
    states, changed = torch.randn(2, 4, 16), torch.randn(2, 4, 16)
    with torch.no_grad():
        logits = head(states, SOURCE[:, 1:], ENGLISH[:, 1:])
        # x's first subword sits at the code's column 1 (position row first + 1; a shift
        # along every dimension alike would vanish in the LayerNorm).
        head.embeddings.position_embeddings.weight[head.first + 1] = torch.randn(16)
        moved = head(states, SOURCE[:, 1:], ENGLISH[:, 1:])
        assert not torch.allclose(moved, logits, atol=1e-3)
        head.embeddings.LayerNorm.weight.zero_()
        flat = head(states, SOURCE[:, 1:], ENGLISH[:, 1:])
        assert torch.allclose(head(changed, SOURCE[:, 1:], ENGLISH[:, 1:]), flat, atol=1e-6)


def test_a_short_position_table_grows_to_hold_the_concatenation():
    """A scratch encoder's table holds a sentence's positions (max_length + 2 rows), the
    head's sequence two sentences': the head's copy gains fresh rows, the encoder's kept."""
    encoder = tiny_encoder()  # XLM-R numbering, 40 rows: sentences of up to 38 tokens
    table = encoder.embeddings.position_embeddings.weight
    torch.manual_seed(2)
    head = RTLHead(encoder, layers=1, mask_id=4, max_length=32).eval()
    grown = head.embeddings.position_embeddings
    assert grown.num_embeddings == 2 + 2 * 32 and grown.padding_idx == 1
    assert torch.equal(grown.weight[:40], table)
    std = float(grown.weight[40:].detach().std())
    assert abs(std - encoder.config.initializer_range) < 0.25 * encoder.config.initializer_range
    # Two sides of 32 tokens (the batch's width): the last mask at position 2 + 2·32 − 1.
    full = torch.ones(1, 31, dtype=torch.long)
    assert head(torch.randn(1, 31, 16), full, full).shape == (31, 50)
    # Long enough already (BERT: 0 to 2·20 − 1 of 40): the table is the encoder's, as copied.
    bert = tiny_encoder(kind="bert")
    same = RTLHead(bert, layers=1, mask_id=4, max_length=20).embeddings.position_embeddings
    assert torch.equal(same.weight, bert.embeddings.position_embeddings.weight)


# -- the output layer over English token ids (DAP's code, `rtl_vocabulary: english`) ---------
KEPT = [2, 7, 9, 30]  # sorted: logit column j stands for token KEPT[j]


def _heads(vocabulary) -> tuple[RTLHead, RTLHead]:
    """A full head and a restricted one with the same weights (the MLM head's dense layer is
    drawn from the same seed)."""
    encoder = tiny_encoder()
    torch.manual_seed(5)
    full = RTLHead(encoder, layers=2, mask_id=4).eval()
    torch.manual_seed(5)
    restricted = RTLHead(encoder, layers=2, mask_id=4, vocabulary=vocabulary).eval()
    return full, restricted


def _inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    return torch.randn(2, 4, 16), torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]]), torch.ones(2, 3)


def test_the_restricted_head_gives_the_full_heads_logits_at_the_kept_rows():
    full, restricted = _heads([30, 7, 2, 9, 7])  # any order, repeats: kept once, sorted
    assert restricted.vocabulary.tolist() == KEPT
    for name in ("dense.weight", "dense.bias", "layer_norm.weight"):
        assert torch.equal(
            full.lm_head.get_parameter(name), restricted.lm_head.get_parameter(name)
        ), name
    with torch.no_grad():
        every = full(*_inputs())
        kept = restricted(*_inputs())
    assert every.shape == (6, 50) and kept.shape == (6, 4)
    assert torch.allclose(kept, every[:, KEPT], atol=1e-6)


def test_the_kept_rows_are_copies_untied_from_the_embeddings_as_in_daps_code():
    full, restricted = _heads(KEPT)
    head = restricted.lm_head
    embeddings = restricted.embeddings.word_embeddings.weight
    assert torch.equal(head.decoder.weight, embeddings[KEPT])
    assert head.decoder.weight.data_ptr() != embeddings.data_ptr()
    assert head.bias is head.decoder.bias and head.bias.shape == (4,)  # one bias, 4 rows
    assert torch.equal(head.bias, full.lm_head.bias[KEPT])
    # Trained on their own: a gradient reaches the rows, not the embeddings' other rows.
    restricted.train()
    restricted(*_inputs()).sum().backward()
    assert head.decoder.weight.grad.abs().sum() > 0
    others = torch.ones(50, dtype=torch.bool)
    others[4] = False  # [MASK]'s row, the only one the head reads
    assert embeddings.grad[others].abs().sum() == 0
    # The full head's projection is its embeddings themselves.
    assert full.lm_head.decoder.weight is full.embeddings.word_embeddings.weight


def test_targets_map_to_their_rows_of_the_restricted_layer():
    full, restricted = _heads(KEPT)
    targets = torch.tensor([30, 2, 9, 7, 30])
    assert restricted.target_rows(targets).tolist() == [3, 0, 2, 1, 3]
    assert full.target_rows(targets) is targets  # the whole vocabulary: ids are the rows
    with pytest.raises(ValueError, match=r"RTL targets \[5, 8\] are not among the head's 4"):
        restricted.target_rows(torch.tensor([2, 8, 5, 8]))
    with pytest.raises(ValueError, match="token ids in"):
        RTLHead(tiny_encoder(), layers=1, vocabulary=[3, 50])


def test_the_loss_over_the_english_rows_is_the_cross_entropy_over_them_by_hand():
    full, restricted = _heads(KEPT)
    targets = torch.tensor([7, 30, 2, 9, 2, 7])
    with torch.no_grad():
        logits = full(*_inputs())
        loss = representation_translation_loss(
            restricted(*_inputs()), restricted.target_rows(targets)
        )
        whole = representation_translation_loss(logits, targets)
    # By hand: each token's -log softmax over the kept ids' logits only.
    by_hand = []
    for row, target in zip(logits.tolist(), targets.tolist(), strict=True):
        denominator = sum(math.exp(row[k]) for k in KEPT)
        by_hand.append(-math.log(math.exp(row[target]) / denominator))
    assert loss.item() == pytest.approx(sum(by_hand) / len(by_hand), rel=1e-5)
    # The full softmax's denominator has 46 more positive terms: its loss is larger.
    assert whole.item() > loss.item()


def test_the_english_vocabulary_is_every_id_of_the_english_side_and_sep():
    english = np.array([5, 3, 5, 9, 3], dtype=np.int32)
    assert english_vocabulary(english, sep=2).tolist() == [2, 3, 5, 9]
    assert english_vocabulary(english, sep=11).tolist() == [3, 5, 9, 11]
    assert english_vocabulary(np.array([4, 2], dtype=np.int32), sep=2).tolist() == [2, 4]


# -- the trainer derives it from its English training side -----------------------------------
SHAPE = tiny_shape(layers=2)


def _dap_trainer(small_subwords, small_tokenizer, checkpoints, **overrides) -> Trainer:
    settings = train_settings(
        seed=3,
        method="dap",
        batch_size=16,
        micro_batch_size=8,
        max_steps=4,
        eval_every=2,
        checkpoint_every=2,
        log_every=1,
        dev_max_pairs=50,
        rtl_layers=1,
    )
    return scratch_trainer(
        small_subwords, small_tokenizer, checkpoints, {**settings, **overrides}, shape=SHAPE
    )


def test_the_trainer_predicts_over_its_english_training_side(
    small_subwords, small_tokenizer, tmp_path
):
    from transformers import AutoTokenizer

    trainer = _dap_trainer(small_subwords, small_tokenizer, tmp_path)
    # Every English id the training files hold within max_length (16: 14 subwords and the
    # specials), and </s>, which RTL predicts after each sentence.
    english = set()
    for paths in small_subwords.values():
        for row in pq.read_table(paths["train"], columns=["en_ids"]).column("en_ids").to_pylist():
            english.update(row[:14])
    sep = AutoTokenizer.from_pretrained(small_tokenizer).sep_token_id
    assert sep not in english  # the files hold no specials: </s> is added
    rtl = trainer.objective.rtl
    assert rtl.vocabulary.tolist() == sorted(english | {sep})
    assert rtl.lm_head.decoder.weight.shape == (len(english) + 1, SHAPE["hidden_size"])
    assert len(english) + 1 < trainer.model.config.vocab_size  # a real restriction
    record = trainer.train_step()  # every batch's targets find their rows
    assert math.isfinite(record["parts"]["rtl"])

    everything = _dap_trainer(
        small_subwords, small_tokenizer, tmp_path / "all", rtl_vocabulary="all"
    )
    head = everything.objective.rtl
    assert head.vocabulary is None
    assert head.lm_head.decoder.weight is head.embeddings.word_embeddings.weight
    assert everything.fingerprint != trainer.fingerprint  # a checkpoint of one is not resumed


def test_a_dap_run_over_english_ids_resumes_exactly(small_subwords, small_tokenizer, tmp_path):
    torch.set_num_threads(1)
    straight = _dap_trainer(small_subwords, small_tokenizer, tmp_path / "a")
    straight.run()
    interrupted = _dap_trainer(small_subwords, small_tokenizer, tmp_path / "b")
    original = interrupted.train_step

    def stop_after_step_2():
        record = original()
        if interrupted.step == 2:
            interrupted._request_stop(15, None)
        return record

    interrupted.train_step = stop_after_step_2
    with pytest.raises(Preempted):
        interrupted.run()
    resumed = _dap_trainer(small_subwords, small_tokenizer, tmp_path / "b")
    resumed.run()
    assert resumed.step == straight.step == 4
    logged = [
        [{k: v for k, v in e.items() if k not in speed.FIELDS} for e in t.history]
        for t in (straight, resumed)
    ]
    assert logged[0] == logged[1]  # every loss, RTL's included, and every dev score
    for name, tensor in straight.objective.state_dict().items():
        assert torch.equal(tensor, resumed.objective.state_dict()[name]), name


def test_a_frozen_encoder_trains_the_rtl_heads_copies(small_subwords, small_tokenizer, tmp_path):
    """`freeze_encoder` with DAP: the encoder is fixed after the RTL head copied its
    embeddings and last layers, so the copies (and the head's own layers) are what trains."""
    trainer = _dap_trainer(small_subwords, small_tokenizer, tmp_path, freeze_encoder=True)
    optimised = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert not optimised & {id(p) for p in trainer.model.parameters()}
    rtl = trainer.objective.rtl
    trained = {id(p) for p in rtl.parameters() if p.requires_grad}
    assert trained and trained <= optimised
    assert {id(p) for p in rtl.layers.parameters()} <= trained
