"""The methods' objectives on real word-aligned pairs: eq. 11, gradients, RTL's inputs,
language embeddings, and a WACSE run that resumes exactly."""

import math

import numpy as np
import pytest
import torch
from support import scratch_objectives, scratch_trainer, tiny_encoder, tiny_shape, train_settings
from transformers import AutoModel

from xlsent.losses.rtl import representation_translation_loss
from xlsent.losses.tr import translation_ranking_loss
from xlsent.models import encoder
from xlsent.ragged import Ragged
from xlsent.train.collate import Tokens
from xlsent.train.data import Pairs, load_word_aligned
from xlsent.train.loop import Preempted, Trainer
from xlsent.train.objectives import Objectives
from xlsent.train.settings import TrainSettings

SHAPE = tiny_shape(layers=2)


@pytest.fixture(scope="module")
def aligned(small_word_spans):
    return load_word_aligned(small_word_spans, max_length=16)[:2]


def _objectives(small_tokenizer, method: str, **settings) -> Objectives:
    return scratch_objectives(small_tokenizer, SHAPE, method=method, **settings)


def _batch(objectives, aligned, seed=0):
    pairs, words = aligned
    index = np.random.default_rng(seed).choice(len(pairs), 16, replace=False)
    return objectives.collator(pairs, index, words, np.random.default_rng(seed))


def test_wacse_combines_its_losses_as_eq_11(small_tokenizer, aligned):
    objectives = _objectives(small_tokenizer, "wacse", wacse_weights=(0.8, 0.02, 0.18))
    loss, parts = objectives(_batch(objectives, aligned))
    assert set(parts) == {"tr", "awp", "wtr"}
    expected = 0.8 * parts["tr"] + 0.02 * parts["awp"] + 0.18 * parts["wtr"]
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert all(value.item() > 0 for value in parts.values())


def test_a_zero_weight_skips_its_objective(small_tokenizer, aligned):
    objectives = _objectives(small_tokenizer, "wacse", wacse_weights=(0.8, 0.2, 0.0))
    batch = _batch(objectives, aligned)
    assert batch.wtr is None and batch.awp is not None
    _, parts = objectives(batch)
    assert set(parts) == {"tr", "awp"}
    assert set(objectives.diagnostics) == {"awp_term_ce", "awp_links_per_sentence"}
    tr_only = _objectives(small_tokenizer, "tr")
    assert tr_only.mlm is None and tr_only.rtl is None
    # Without AWP no diagnostic: TR alone, and WACSE with AWP's weight 0.
    tr_wtr = _objectives(small_tokenizer, "wacse", wacse_weights=(0.8, 0.0, 0.2))
    for other in (tr_only, tr_wtr):
        other(_batch(other, aligned))
        assert other.diagnostics == {}


class _UniformHead(torch.nn.Module):
    """An MLM head whose logits are all 0: a uniform guess over the V pieces."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return states.new_zeros(len(states), self.vocab_size)


def test_awps_term_cross_entropy_of_a_uniform_guess_is_ln_v(small_tokenizer, aligned):
    """Per term a uniform guess costs ln V, whatever the links; eq. 5's value costs ln V times
    the terms' weight a sentence, which the batch's links per sentence estimate."""
    objectives = _objectives(small_tokenizer, "wacse").eval()
    vocab = objectives.encoder.config.vocab_size
    objectives.mlm = _UniformHead(vocab)
    batch = _batch(objectives, aligned)
    with torch.no_grad():
        _, parts = objectives(batch)
    total, terms = objectives.diagnostics["awp_term_ce"].tolist()
    assert total / terms == pytest.approx(math.log(vocab), rel=1e-6)
    weights = batch.awp.weights.sum().item()
    assert parts["awp"].item() == pytest.approx(math.log(vocab) * weights / 32, rel=1e-6)
    # The links, counted on the pairs the batch drew (the collator's seed): 16 pairs, 32
    # sentences, each link seen from both of its sentences.
    index = np.random.default_rng(0).choice(len(aligned[0]), 16, replace=False)
    links = int(aligned[1].links.lengths[index].sum())
    assert links > 16  # more than one link a sentence: eq. 5's value is above ln V
    assert objectives.diagnostics["awp_links_per_sentence"] == (2 * links, 32)
    assert parts["awp"].item() > math.log(vocab)


def test_dap_adds_weighted_rtl(small_tokenizer, aligned):
    objectives = _objectives(small_tokenizer, "dap", rtl_weight=0.1, rtl_layers=1)
    loss, parts = objectives(_batch(objectives, aligned))
    assert set(parts) == {"tr", "rtl"}
    assert loss.item() == pytest.approx((parts["tr"] + 0.1 * parts["rtl"]).item(), rel=1e-6)


def test_rtl_reads_the_states_after_cls_and_predicts_the_english_tokens(small_tokenizer, aligned):
    objectives = _objectives(small_tokenizer, "dap").eval()  # no dropout
    batch = _batch(objectives, aligned)
    n = batch.n_pairs
    pairs = aligned[0]
    english = pairs.en.take(np.random.default_rng(0).choice(len(pairs), 16, replace=False))
    english = english.to_list()
    with_sep = [[*e, objectives.collator.tokens.sep] for e in english]  # no CLS or pad
    assert batch.rtl.targets.tolist() == np.concatenate(with_sep).tolist()
    assert batch.rtl.mask.sum(1).tolist() == [len(e) for e in with_sep]
    with torch.no_grad():
        hidden = objectives.encoder(input_ids=batch.ids, attention_mask=batch.mask)[0]
        logits = objectives.rtl(hidden[:n, 1:], batch.mask[:n, 1:], batch.rtl.mask)  # no CLS
        expected = representation_translation_loss(logits, batch.rtl.targets)
        assert objectives(batch)[1]["rtl"].item() == expected.item()


@pytest.mark.parametrize(
    ("method", "part", "settings"),
    [
        ("tr", "tr", {}),
        ("wacse", "awp", {"wacse_weights": (0.0, 1.0, 0.0)}),
        ("wacse", "wtr", {"wacse_weights": (0.0, 0.0, 1.0)}),
        ("dap", "rtl", {"rtl_weight": 1.0, "rtl_layers": 1}),
    ],
)
def test_one_step_lowers_each_loss(small_tokenizer, aligned, method, part, settings):
    objectives = _objectives(small_tokenizer, method, **settings).eval()  # no dropout
    batch = _batch(objectives, aligned)
    # Adam's first step moves every parameter by about lr against its gradient's sign, a
    # descent step whatever the gradient's scale: a scratch encoder's CLS vectors start
    # nearly equal (cosine 0.9999), and TR's gradient there is too small for an SGD step to
    # show in float32 (whether it did depended on the demo data's Babel release).
    optimizer = torch.optim.Adam([p for p in objectives.parameters() if p.requires_grad], lr=1e-3)
    before = objectives(batch)[1][part]
    before.backward()
    optimizer.step()
    with torch.no_grad():
        after = objectives(batch)[1][part]
    assert after < before


def test_language_embeddings_are_token_types_that_survive_saving(small_tokenizer, tmp_path):
    model = encoder.build("scratch", small_tokenizer, max_length=16, shape=SHAPE)
    before = model.embeddings.token_type_embeddings.weight[0].clone()
    encoder.add_language_embeddings(model, ["kk", "de"], seed=0)
    assert model.config.xlsent_languages == ["en", "de", "kk"]
    rows = model.embeddings.token_type_embeddings.weight
    assert rows.shape[0] == 3
    # Each language starts as the pretrained type row plus its own random vector.
    assert not torch.equal(rows[1], rows[2])
    assert (rows - before).abs().max() < 0.2

    out = tmp_path / "model"
    encoder.save(model, small_tokenizer, out, max_length=16)
    assert AutoModel.from_pretrained(out).config.xlsent_languages == ["en", "de", "kk"]
    encode = encoder.TextEncoder.load(out, max_length=16)
    kk, de = encode(["Алматы"], "kk"), encode(["Алматы"], "de")
    assert not np.allclose(kk, de)  # the language id changes the vector
    with pytest.raises(ValueError, match="language embeddings"):
        encode(["Алматы"], "fr")


def _wacse_trainer(small_word_spans, small_subwords, small_tokenizer, checkpoints, **overrides):
    settings = train_settings(
        seed=3,
        method="wacse",
        batch_size=16,
        micro_batch_size=8,
        max_steps=6,
        eval_every=3,
        checkpoint_every=2,
        log_every=1,
        dev_max_pairs=50,
        language_embeddings=True,
    )
    return scratch_trainer(
        small_subwords,
        small_tokenizer,
        checkpoints,
        {**settings, **overrides},
        shape=SHAPE,
        train=small_word_spans,
    )


def test_wacse_run_logs_its_losses_and_resumes_exactly(
    small_word_spans, small_subwords, small_tokenizer, tmp_path
):
    torch.set_num_threads(1)
    straight = _wacse_trainer(small_word_spans, small_subwords, small_tokenizer, tmp_path / "a")
    straight.run()
    logged = [e for e in straight.history if "loss" in e]
    assert {"loss_tr", "loss_awp", "loss_wtr"} <= set(logged[0])
    # Beside eq. 5's estimate, its two factors (a term's cross-entropy, links per sentence).
    for entry in logged:
        keys = list(entry)
        at = max(i for i, key in enumerate(keys) if key.startswith("loss_")) + 1
        assert keys[at : at + 2] == ["awp_term_ce", "awp_links_per_sentence"]
        assert 0 < entry["awp_term_ce"] < 2 * math.log(straight.model.config.vocab_size)
        assert entry["awp_links_per_sentence"] > 0

    interrupted = _wacse_trainer(small_word_spans, small_subwords, small_tokenizer, tmp_path / "b")
    original = interrupted.train_step

    def stop_after_step_3():
        record = original()
        if interrupted.step == 3:
            interrupted._request_stop(15, None)
        return record

    interrupted.train_step = stop_after_step_3
    with pytest.raises(Preempted):
        interrupted.run()
    resumed = _wacse_trainer(small_word_spans, small_subwords, small_tokenizer, tmp_path / "b")
    resumed.run()
    assert resumed.step == straight.step == 6
    for name, tensor in straight.objective.state_dict().items():
        assert torch.equal(tensor, resumed.objective.state_dict()[name]), name


def test_the_mlp_pooler_trains_only_when_asked(small_tokenizer, aligned):
    cls = _objectives(small_tokenizer, "tr")
    assert cls.mlp is None
    assert not any(p.requires_grad for p in cls.encoder.pooler.parameters())
    mlp = _objectives(small_tokenizer, "tr", pooler="mlp")
    loss, _ = mlp(_batch(mlp, aligned))
    loss.backward()
    assert mlp.mlp.dense.weight.grad.abs().sum() > 0
    assert not any(p.requires_grad for p in mlp.encoder.pooler.parameters())
    # The TR loss saw the MLP's vectors, not raw CLS.
    mlp.eval()
    batch = _batch(mlp, aligned)
    with torch.no_grad():
        out = mlp.encoder(input_ids=batch.ids, attention_mask=batch.mask)
        n = batch.n_pairs
        cls_states = out.last_hidden_state[:, 0]
        through = torch.tanh(mlp.mlp.dense(cls_states))
        pooled = translation_ranking_loss(through[:n], through[n:])
        raw = translation_ranking_loss(cls_states[:n], cls_states[n:])
        ours = mlp(batch)[1]["tr"].item()
        # An untrained encoder's losses are all near ln 16: compare closely.
        assert ours == pytest.approx(pooled.item(), rel=1e-7)
        assert ours != pytest.approx(raw.item(), rel=1e-7)


@pytest.mark.parametrize(
    ("method", "settings"),
    [("wacse", {}), ("dap", {}), ("tr-tlm", {"tlm_input": "dap"}), ("tr-tlm", {})],
)
def test_length_groups_give_the_losses_of_one_pass(small_tokenizer, aligned, method, settings):
    """Also for TLM's rows in DAP's layout, which hold padding between their two sides: a
    group is as wide as its rows' last real token, not their number of tokens."""
    one = _objectives(small_tokenizer, method, rtl_layers=1, **settings).eval()
    grouped = _objectives(small_tokenizer, method, rtl_layers=1, length_groups=3, **settings)
    grouped.eval()
    grouped.load_state_dict(one.state_dict())
    batch = _batch(one, aligned)
    with torch.no_grad():
        _, parts = one(batch)
        _, grouped_parts = grouped(batch)
    for name, value in parts.items():
        assert grouped_parts[name].item() == pytest.approx(value.item(), rel=1e-5), name


def test_an_mlp_pooler_is_freshly_initialised_and_trained_as_daps(small_tokenizer):
    """`pooler: mlp` trains TR through a new dense + tanh (DAP's code: its own `mlp` module,
    initialised as the model's layers), not a checkpoint's pooler; the checkpoint's pooler is
    frozen and left as it was under either setting, which is what the export holds."""
    tokens = Tokens.read(small_tokenizer)
    for pooler in ("mlp", "cls"):
        model = encoder.build("scratch", small_tokenizer, max_length=16, shape=SHAPE)
        torch.nn.init.constant_(model.pooler.dense.weight, 0.5)  # as if from a checkpoint
        objectives = Objectives(model, TrainSettings(seed=0, method="tr", pooler=pooler), tokens)
        weight = model.pooler.dense.weight
        assert not weight.requires_grad and bool((weight == 0.5).all())
        if pooler == "mlp":
            dense = objectives.mlp.dense
            std = model.config.initializer_range
            assert dense.weight.requires_grad
            assert abs(float(dense.weight.detach().std()) - std) < 0.2 * std
            assert not dense.bias.detach().any()
            assert not any(name.startswith("mlp") for name in model.state_dict())


# -- TLM in DAP's layout (`tlm_input: dap`) ---------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "positions"),
    [
        # DAP's call, torch.arange(T).repeat(1, 2) per pair: each side from its <s>.
        ("bert", [[0, 1, 2, 3, 4, 0, 1, 2, 3, 4]] * 2),
        # XLM-R numbers a side as it numbers a sentence: from padding_idx + 1 = 2, padding 1.
        ("xlm-roberta", [[2, 3, 4, 1, 1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6, 2, 3, 4, 5, 6]]),
    ],
)
def test_daps_tlm_rows_reach_the_encoder_with_each_sides_positions(kind, positions):
    """The tlm batch of two pairs (x of 1 and 3 subwords, y of 3 and 3), each side padded to
    width 5: the encoder reads its states at these position ids, not at its default ones."""
    model = tiny_encoder(layers=1, kind=kind)
    tokens = Tokens(cls=0, sep=2, pad=1, mask=3)
    settings = TrainSettings(seed=0, method="tlm", tlm_input="dap")
    objectives = Objectives(model, settings, tokens).eval()

    def rows(*ids):
        return Ragged.from_rows([np.array(r, dtype=np.int32) for r in ids])

    lang = np.zeros(2, dtype=np.int16)
    pairs = Pairs(rows([30], [10, 11, 12]), rows([40, 41, 42], [20, 21, 22]), lang, ("de",))
    lm = objectives.collator(pairs, np.array([0, 1]), rng=np.random.default_rng(0)).lm
    assert lm.ids.shape == (2, 10)
    assert lm.mask[0].tolist() == [1, 1, 1, 0, 0, 1, 1, 1, 1, 1]
    with torch.no_grad():
        ours = objectives.encode(lm.ids, lm.mask, None, lm.positions)
        expected = model(
            input_ids=lm.ids,
            attention_mask=lm.mask,
            position_ids=torch.tensor(positions),
        ).last_hidden_state
        default = model(input_ids=lm.ids, attention_mask=lm.mask).last_hidden_state
    real = lm.mask.bool()
    assert torch.allclose(ours[real], expected[real], atol=1e-6)
    assert not torch.allclose(ours[real], default[real], atol=1e-3)


# -- `train.compile`: the training passes through torch.compile ---------------------------------
COMPILE_SETTINGS = train_settings(
    seed=3,
    max_steps=3,
    eval_every=3,
    checkpoint_every=3,
    log_every=1,
    dev_max_pairs=20,
    precision="fp32",
)


def _compile_trainer(small_subwords, small_tokenizer, checkpoints, **settings) -> Trainer:
    return scratch_trainer(
        small_subwords, small_tokenizer, checkpoints, {**COMPILE_SETTINGS, **settings}, shape=SHAPE
    )


@pytest.mark.slow  # inductor compiles the tiny encoder's two graphs in about a minute on 2 cores
def test_a_compiled_run_trains_as_the_uncompiled_one_to_rounding(
    small_subwords, small_tokenizer, tmp_path
):
    """`train.compile`: the encoder's training passes through torch.compile give the losses
    and weights of the uncompiled run to rounding (dropout on, TR cached over two
    micro-batches, so the compiled pass without a graph and the one with a graph replay the
    same masks), leave the checkpoint's names and dev P@1's encoder as they are."""
    torch.set_num_threads(1)
    plain = _compile_trainer(small_subwords, small_tokenizer, tmp_path / "plain")
    plain.run()  # before the other is built: each draws from the seed its building sets
    compiled = _compile_trainer(
        small_subwords, small_tokenizer, tmp_path / "compiled", compile=True
    )
    compiled.run()
    assert plain.objective._compiled is None and compiled.objective._compiled is not None
    losses = [[e["loss"] for e in t.history if "loss" in e] for t in (plain, compiled)]
    assert len(losses[0]) == 3
    assert losses[1] == pytest.approx(losses[0], abs=1e-5)
    ours, theirs = compiled.objective.state_dict(), plain.objective.state_dict()
    assert list(ours) == list(theirs)
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value, rtol=1e-4, atol=1e-5, msg=name)
    assert compiled.best["dev_p1"] == plain.best["dev_p1"]
