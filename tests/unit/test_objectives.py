"""The methods' objectives on real word-aligned pairs: eq. 11, gradients, RTL's inputs,
language embeddings, and a WACSE run that resumes exactly."""

import numpy as np
import pytest
import torch
from support import tiny_shape
from transformers import AutoModel

from xlsent.losses.rtl import representation_translation_loss
from xlsent.losses.tr import translation_ranking_loss
from xlsent.models import encoder
from xlsent.train.collate import Tokens
from xlsent.train.data import load_word_aligned
from xlsent.train.loop import ModelSpec, Preempted, Trainer, TrainSettings
from xlsent.train.objectives import Objectives

SHAPE = tiny_shape(layers=2)


@pytest.fixture(scope="module")
def aligned(small_word_spans):
    return load_word_aligned(small_word_spans, max_length=16)[:2]


def _objectives(small_tokenizer, method: str, **settings) -> Objectives:
    from transformers import AutoTokenizer

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(small_tokenizer)
    model = encoder.build("scratch", small_tokenizer, max_length=16, shape=SHAPE)
    tokens = Tokens(tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.mask_token_id)
    return Objectives(model, TrainSettings(seed=0, method=method, **settings), tokens)


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
    assert batch.pool is None and batch.masked_ids is not None
    _, parts = objectives(batch)
    assert set(parts) == {"tr", "awp"}
    tr_only = _objectives(small_tokenizer, "tr")
    assert tr_only.mlm is None and tr_only.rtl is None


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
    assert batch.rtl_targets.tolist() == np.concatenate(with_sep).tolist()
    assert batch.rtl_mask.sum(1).tolist() == [len(e) for e in with_sep]
    with torch.no_grad():
        hidden = objectives.encoder(input_ids=batch.ids, attention_mask=batch.mask)[0]
        logits = objectives.rtl(hidden[:n, 1:], batch.mask[:n, 1:], batch.rtl_mask)  # no CLS
        expected = representation_translation_loss(logits, batch.rtl_targets)
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
    optimizer = torch.optim.SGD([p for p in objectives.parameters() if p.requires_grad], lr=0.05)
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
    settings = dict(
        seed=3,
        method="wacse",
        max_length=16,
        lr=1e-3,
        batch_size=16,
        micro_batch_size=8,
        max_steps=6,
        eval_every=3,
        checkpoint_every=2,
        log_every=1,
        dev_max_pairs=50,
        device="cpu",
        language_embeddings=True,
    )
    return Trainer(
        TrainSettings(**{**settings, **overrides}),
        ModelSpec("scratch", small_tokenizer, shape=SHAPE),
        small_word_spans,
        {lang: p["dev"] for lang, p in small_subwords.items()},
        checkpoints,
    )


def test_wacse_run_logs_its_losses_and_resumes_exactly(
    small_word_spans, small_subwords, small_tokenizer, tmp_path
):
    torch.set_num_threads(1)
    straight = _wacse_trainer(small_word_spans, small_subwords, small_tokenizer, tmp_path / "a")
    straight.run()
    logged = [e for e in straight.history if "loss" in e]
    assert {"loss_tr", "loss_awp", "loss_wtr"} <= set(logged[0])

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
    assert not any(p.requires_grad for p in cls.encoder.pooler.parameters())
    mlp = _objectives(small_tokenizer, "tr", pooler="mlp")
    loss, _ = mlp(_batch(mlp, aligned))
    loss.backward()
    assert mlp.encoder.pooler.dense.weight.grad.abs().sum() > 0
    # The TR loss saw the pooled vectors, not raw CLS.
    mlp.eval()
    batch = _batch(mlp, aligned)
    with torch.no_grad():
        out = mlp.encoder(input_ids=batch.ids, attention_mask=batch.mask)
        n = batch.n_pairs
        pooled = translation_ranking_loss(out.pooler_output[:n], out.pooler_output[n:])
        raw = translation_ranking_loss(out.last_hidden_state[:n, 0], out.last_hidden_state[n:, 0])
        ours = mlp(batch)[1]["tr"].item()
        # An untrained encoder's losses are all near ln 16: compare closely.
        assert ours == pytest.approx(pooled.item(), rel=1e-7)
        assert ours != pytest.approx(raw.item(), rel=1e-7)


@pytest.mark.parametrize("method", ["wacse", "dap"])
def test_length_groups_give_the_losses_of_one_pass(small_tokenizer, aligned, method):
    one = _objectives(small_tokenizer, method, rtl_layers=1).eval()
    grouped = _objectives(small_tokenizer, method, rtl_layers=1, length_groups=3).eval()
    grouped.load_state_dict(one.state_dict())
    batch = _batch(one, aligned)
    with torch.no_grad():
        _, parts = one(batch)
        _, grouped_parts = grouped(batch)
    for name, value in parts.items():
        assert grouped_parts[name].item() == pytest.approx(value.item(), rel=1e-5), name


def test_an_mlp_pooler_is_freshly_initialised_and_trained_as_daps(small_tokenizer):
    """`pooler: mlp` trains TR through a new dense + tanh (DAP's code), not a checkpoint's
    pooler: the pooler of a "pretrained" encoder is re-drawn from the model's init and then
    trained; with `cls` it is frozen and left as it was."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(small_tokenizer)
    tokens = Tokens(tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.mask_token_id)
    for pooler, fresh in (("mlp", True), ("cls", False)):
        model = encoder.build("scratch", small_tokenizer, max_length=16, shape=SHAPE)
        torch.nn.init.constant_(model.pooler.dense.weight, 0.5)  # as if from a checkpoint
        Objectives(model, TrainSettings(seed=0, method="tr", pooler=pooler), tokens)
        weight = model.pooler.dense.weight
        assert weight.requires_grad == fresh
        if fresh:
            std = model.config.initializer_range
            assert abs(float(weight.detach().std()) - std) < 0.2 * std
        else:
            assert bool((weight == 0.5).all())
