"""The xlm-roberta-base shape: each method's real `Objectives` on synthetic batches of real
sentence lengths.

No download: the model is built from its config with random weights (a step's time does not
depend on them). Each pair's two lengths are drawn from a real corpus (`training.lengths`;
truncated to `seq` tokens as training truncates), its ids at random: what a step computes
depends on the lengths, not on the ids. A step is what `Trainer.train_step` does for its
micro-batches: draw their pairs in epochs (`xlsent.train.data.EpochSampler`), build each on
the CPU through the method's collator, copy it over, forward/backward (in the settings'
precision: bf16 autocast on CUDA by default), clip, the trainer's AdamW
(`xlsent.train.optim`); at a batch above the micro-batch, TR over the whole batch by gradient
caching (`xlsent.train.cached_tr`). Each speed option (`OPTIONS`) is a row of its own.
"""

from __future__ import annotations

import itertools
import statistics
import time

import numpy as np
import torch
from torch import nn
from transformers import XLMRobertaConfig, XLMRobertaModel

from training.record import Recorder, summary
from training.runs import PAPER_CONFIG, described, load_config, run_settings
from xlsent.models.rtl_head import english_vocabulary
from xlsent.ragged import Ragged, offsets_of, within
from xlsent.train import optim, step
from xlsent.train.collate import Batch, Tokens
from xlsent.train.data import EpochSampler, Pairs, WordAligned, pair_lengths
from xlsent.train.objectives import Objectives
from xlsent.train.speed import peak_tflops

# The speed options a row can take (`--options`): the settings each changes from the paper
# config's (`default`), and `foreach-adamw` PyTorch's default AdamW on CUDA (foreach), which
# the fused kernel replaced (`xlsent.train.optim.fused`). `length-window`'s pool holds two
# windows of micro-batches at least.
OPTIONS = {
    "default": {},
    "foreach-adamw": {},
    "tf32": {"precision": "tf32"},
    "fp32": {"precision": "fp32"},
    "compile": {"compile": True},
    "length-window": {"length_window": 64},
}

# XLM-R's <s> </s> <pad>, and <mask>: its last id.
CLS, SEP, PAD = 0, 2, 1
SHAPES = {
    "base": {"vocab_size": 250_002},  # XLMRobertaConfig's defaults are the base shape's
    # The same architecture at a size that runs in seconds: `--smoke`.
    "tiny": {
        "vocab_size": 1000,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
    },
}


def synthetic_pairs(
    lengths: np.ndarray, vocab: int, english: np.ndarray, rng: np.random.Generator
) -> tuple[Pairs, WordAligned]:
    """Pairs of the given subwords (`lengths`, P×2: foreign, English; no special tokens) as
    the training data structures: (Pairs, WordAligned).

    Words of 2 subwords (the last of 1 in a sentence of odd length), 2/3 of the words that
    both sides have linked to the same word of the translation (one link each); the
    non-English ids are drawn from the whole vocabulary, the English ones from `english`."""
    n = len(lengths)
    xx = rng.integers(5, vocab - 1, size=int(lengths[:, 0].sum()), dtype=np.int32)  # no specials
    en = rng.choice(english, size=int(lengths[:, 1].sum())).astype(np.int32)
    pairs = Pairs(
        Ragged(xx, offsets_of(lengths[:, 0])),
        Ragged(en, offsets_of(lengths[:, 1])),
        np.zeros(n, dtype=np.int16),
        ("xx",),
    )
    spans = [_word_spans(lengths[:, side]) for side in (0, 1)]
    shared = np.minimum(*(-(-lengths.T // 2)))  # words both sides have
    linked = [np.flatnonzero(np.arange(k) % 3 != 2).astype(np.int32) for k in shared]
    links = np.concatenate([np.stack([k, k], axis=1) for k in linked])
    words = WordAligned(
        *spans[0], *spans[1], Ragged(links, offsets_of(np.array([len(k) for k in linked])))
    )
    return pairs, words


def _word_spans(lengths: np.ndarray) -> tuple[Ragged, Ragged]:
    """(starts, ends) of words of 2 subwords in sentences of `lengths` subwords."""
    words = -(-lengths // 2)
    offsets = offsets_of(words)
    starts = (2 * within(words)).astype(np.int32)
    ends = np.minimum(starts + 2, np.repeat(lengths, words)).astype(np.int32)
    return Ragged(starts, offsets), Ragged(ends, offsets.copy())


def optimizer_step(
    objectives: Objectives, optimizer: torch.optim.Optimizer, batches: list[Batch], device: str
) -> dict:
    """One step over its micro-batches as `Trainer.train_step` runs it (`xlsent.train.step`:
    cached TR when `negatives` is batch, in the settings' precision); its record (real
    tokens, model FLOPs)."""
    record = step.accumulate(objectives, batches, len(batches), device=torch.device(device))
    nn.utils.clip_grad_norm_(objectives.parameters(), objectives.settings.max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return record


def bench(
    runs: list[str],
    shape: str,
    steps: int,
    warmup: int,
    batches: list[int],
    micro_batch: int,
    seq: int,
    lengths: np.ndarray,
    device: str,
    threads: int,
    peak: float | None,
    build_batch: int,
    english_vocab: int,
    options: list[str],
) -> dict:
    """Each run's steps at each batch of `batches` pairs (micro-batches of at most
    `micro_batch`) under each of `options` (`OPTIONS`), one after the other on one model,
    with the paper config's settings, on pairs of `lengths` (P×2 subwords,
    `training.lengths`) cut to `seq` tokens; `english_vocab` distinct English ids (dap's RTL
    vocabulary); `peak`: the device's peak TFLOP/s for MFU (default the known GPU's at each
    row's precision); the batch building is also timed alone at `build_batch` pairs."""
    torch.set_num_threads(threads)
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else lambda: None
    config = XLMRobertaConfig(max_position_embeddings=514, **SHAPES[shape])
    tokens = Tokens(cls=CLS, sep=SEP, pad=PAD, mask=config.vocab_size - 1)
    paper = load_config(PAPER_CONFIG)
    rng = np.random.default_rng(0)
    # The English side's distinct ids (a real corpus's: see docs/results.md), which the
    # trainer would derive from it (with </s>) as the RTL vocabulary of `rtl_vocabulary:
    # english`.
    english = np.sort(rng.choice(np.arange(5, config.vocab_size - 1), english_vocab, False))
    vocabulary = english_vocabulary(english, tokens.sep)
    cut = np.minimum(lengths, seq - 2)  # as training reads them (`load_pairs`)

    def drawn(n: int) -> tuple[Pairs, WordAligned]:
        return synthetic_pairs(cut[rng.integers(len(cut), size=n)], config.vocab_size, english, rng)

    # Each step draws its pairs from a pool of 4 batches of them (2 windows at least), in
    # epochs as training draws them (`EpochSampler`).
    window = max(OPTIONS[option].get("length_window", 0) for option in options)
    pools = {
        batch: drawn(max(4 * batch, 2 * window * min(micro_batch, batch))) for batch in batches
    }
    big_pairs, big_words = drawn(build_batch)
    torch.manual_seed(0)
    model = XLMRobertaModel(config).to(device)  # shared by the runs: speed needs no training
    results, settings_of = [], {}
    for batch, option, run in itertools.product(batches, options, runs):
        micro = min(micro_batch, batch)
        pairs, words = pools[batch]
        settings = run_settings(
            paper, run, batch_size=batch, micro_batch_size=micro, device=device, **OPTIONS[option]
        )
        settings_of[run] = described(settings)
        english_ids = vocabulary if settings.rtl_vocabulary == "english" else None
        objectives = Objectives(model, settings, tokens, rtl_vocabulary=english_ids)
        objectives.to(device).train()
        optimizer, _ = optim.adamw(objectives, settings)
        if option == "foreach-adamw":
            for group in optimizer.param_groups:
                group["fused"] = None  # read at each step: PyTorch's default (foreach on CUDA)
        sampler = EpochSampler(
            len(pairs),
            0,
            lengths=pair_lengths(pairs),
            batch=micro,
            window=settings.length_window,
        )
        recorder = Recorder(objectives)
        step_s, n_tokens, flops = [], 0, []
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        for i in range(-warmup, steps):  # warm-up steps first: allocator, first kernels, compile
            if i == 0:
                recorder.reset()
            sync()
            start = time.perf_counter()
            built = [
                recorder(pairs, sampler.take(micro), words, rng) for _ in range(batch // micro)
            ]
            record = optimizer_step(objectives, optimizer, built, device)
            sync()
            if i >= 0:
                step_s.append(time.perf_counter() - start)
                n_tokens += record["tokens"]
                flops.append(record["flops"])
        computes = settings.precision if cuda else "fp32"
        row_peak = peak_tflops(torch.device(device), computes, peak)
        result = summary(run, step_s, n_tokens, batch, recorder, flops, row_peak)
        result |= {"options": option, "precision": computes, "micro_batch_pairs": micro}
        if cuda:
            result["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20
        # The CPU side alone, at the paper's micro-batch: what a GPU waits for per
        # micro-batch.
        build_s = []
        for _ in range(10):
            start = time.perf_counter()
            objectives.collator(big_pairs, rng.permutation(build_batch), big_words, rng)
            build_s.append(time.perf_counter() - start)
        result["build_ms_at_build_batch"] = 1000 * statistics.median(build_s)
        results.append(result)
        del objectives, optimizer, recorder, built
        if cuda:
            torch.cuda.empty_cache()
    return {
        "shape": "xlmr-base" if shape == "base" else f"xlmr-{shape}",
        "device": torch.cuda.get_device_name() if cuda else f"cpu x{threads}",
        "model": {k: getattr(config, k) for k in SHAPES["tiny"]},
        "batch_pairs": batches,
        "micro_batch_pairs": micro_batch,
        "seq": seq,
        "english_vocab": english_vocab,
        "links_per_pair": len(big_words.links.values) / build_batch,
        "build_batch_pairs": build_batch,
        "peak_tflops": peak,
        "options": {option: OPTIONS[option] for option in options},
        "settings": settings_of,
        "runs": results,
    }
