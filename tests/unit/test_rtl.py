"""RTL (DAP eq. 4, 6): the head's input, what it predicts, and the loss by hand."""

import math

import pytest
import torch
from transformers import XLMRobertaConfig, XLMRobertaModel

from xlsent.losses.rtl import representation_translation_loss
from xlsent.models.rtl_head import RTLHead


def _encoder(layers: int = 3) -> XLMRobertaModel:
    torch.manual_seed(0)
    config = XLMRobertaConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=40,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return XLMRobertaModel(config).eval()


def test_loss_is_the_mean_over_the_batchs_english_tokens():
    """DAP's code takes Hugging Face's masked-LM loss: every target token of the batch counts
    once, whichever sentence it is in."""
    # Plain tensors: logits of three English tokens over a vocabulary of 2 (two of them from
    # one sentence, one from another: the sentences do not matter).
    logits = torch.tensor([[3.0, 0.0], [0.0, 0.0], [1.0, 2.0]], requires_grad=True)
    targets = torch.tensor([0, 1, 1])
    ce = [
        -math.log(math.exp(3) / (math.exp(3) + 1)),
        math.log(2),
        -math.log(math.exp(2) / (math.exp(1) + math.exp(2))),
    ]
    loss = representation_translation_loss(logits, targets)
    assert loss.ndim == 0
    assert loss.item() == pytest.approx(sum(ce) / 3, rel=1e-6)
    loss.backward()  # differentiable in the logits, which is all it reads from a model
    assert logits.grad.shape == logits.shape


def test_head_starts_from_the_encoders_last_layers_and_owns_its_copies():
    encoder = _encoder(layers=3)
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


def test_padding_is_neither_attended_nor_predicted():
    head = RTLHead(_encoder(), layers=2, mask_id=4).eval()
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
