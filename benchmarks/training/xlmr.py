"""The xlm-roberta-base shape: each method's real `Objectives` on synthetic full-length batches.

No download: the model is built from its config with random weights (a step's time does not
depend on them). A step is what `Trainer.train_step` does for its micro-batches: build each
on the CPU through the method's collator, copy it over, forward/backward (bf16 autocast on
CUDA), clip, AdamW.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch
from torch import nn
from transformers import XLMRobertaConfig, XLMRobertaModel

from training.record import Recorder, summary
from training.runs import PAPER_CONFIG, described, load_config, run_settings
from xlsent.models.rtl_head import english_vocabulary
from xlsent.ragged import Ragged
from xlsent.train import step
from xlsent.train.collate import Batch, Tokens
from xlsent.train.data import Pairs, WordAligned
from xlsent.train.objectives import Objectives

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


def synthetic_batch(n: int, seq: int, vocab: int, english: np.ndarray, rng: np.random.Generator):
    """N full-length pairs as the training data structures: (Pairs, WordAligned).

    Each sentence holds `seq` - 2 subwords (room for CLS and SEP), words of 2 subwords, 2/3 of
    them linked to the same word of the translation (one link each); the non-English ids
    are drawn from the whole vocabulary, the English ones from `english`."""
    length = seq - 2
    xx = rng.integers(5, vocab - 1, size=(n, length), dtype=np.int32)  # no specials, no mask
    en = rng.choice(english, size=(n, length)).astype(np.int32)
    offsets = np.arange(n + 1, dtype=np.int64) * length
    pairs = Pairs(
        Ragged(xx.reshape(-1), offsets),
        Ragged(en.reshape(-1), offsets),
        np.zeros(n, dtype=np.int16),
        ("xx",),
    )
    n_words = length // 2
    starts = np.tile(np.arange(n_words, dtype=np.int32) * 2, n)
    ends = starts + 2
    word_offsets = np.arange(n + 1, dtype=np.int64) * n_words
    linked = np.flatnonzero(np.arange(n_words) % 3 != 2).astype(np.int32)  # 2/3 of the words
    links = np.tile(np.stack([linked, linked], axis=1), (n, 1))
    words = WordAligned(
        Ragged(starts, word_offsets),
        Ragged(ends, word_offsets),
        Ragged(starts.copy(), word_offsets),
        Ragged(ends.copy(), word_offsets),
        Ragged(links, np.arange(n + 1, dtype=np.int64) * len(linked)),
    )
    return pairs, words


def optimizer_step(
    objectives: Objectives, optimizer: torch.optim.Optimizer, batches: list[Batch], device: str
) -> int:
    """One step over its micro-batches as `Trainer.train_step` runs it (`xlsent.train.step`:
    cached TR when `negatives` is batch); its real tokens."""
    cuda = device.startswith("cuda")
    record = step.accumulate(
        objectives, batches, len(batches), device=torch.device(device), autocast=cuda
    )
    nn.utils.clip_grad_norm_(objectives.parameters(), objectives.settings.max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return record["tokens"]


def bench(
    runs: list[str],
    shape: str,
    steps: int,
    warmup: int,
    batch: int,
    micro_batch: int,
    seq: int,
    device: str,
    threads: int,
    peak_tflops: float | None,
    build_batch: int,
    english_vocab: int,
) -> dict:
    """Each run's steps, one run after the other on one model, with the paper config's
    settings; `english_vocab` distinct English ids (dap's RTL vocabulary); the batch building
    is also timed alone at `build_batch` pairs."""
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
    pairs, words = synthetic_batch(batch, seq, config.vocab_size, english, rng)
    big_pairs, big_words = synthetic_batch(build_batch, seq, config.vocab_size, english, rng)
    torch.manual_seed(0)
    model = XLMRobertaModel(config).to(device)  # shared by the runs: speed needs no training
    results, settings_of = [], {}
    for run in runs:
        settings = run_settings(
            paper, run, batch_size=batch, micro_batch_size=micro_batch, device=device
        )
        settings_of[run] = described(settings)
        english_ids = vocabulary if settings.rtl_vocabulary == "english" else None
        objectives = Objectives(model, settings, tokens, rtl_vocabulary=english_ids).to(device)
        objectives.train()
        params = [p for p in objectives.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=settings.lr, weight_decay=settings.weight_decay)
        recorder = Recorder(objectives)
        step_s, n_tokens = [], 0
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        for i in range(-warmup, steps):  # warm-up steps first: allocator, first kernels
            if i == 0:
                recorder.reset()
            sync()
            start = time.perf_counter()
            order = rng.permutation(batch)
            built = [
                recorder(pairs, order[k : k + micro_batch], words, rng)
                for k in range(0, batch, micro_batch)
            ]
            tokens_in = optimizer_step(objectives, optimizer, built, device)
            sync()
            if i >= 0:
                step_s.append(time.perf_counter() - start)
                n_tokens += tokens_in
        result = summary(run, step_s, n_tokens, batch, recorder, peak_tflops)
        if cuda:
            result["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20
        # The CPU side alone, at the paper's micro-batch: what a GPU waits for per micro-batch.
        build_s = []
        for _ in range(10):
            start = time.perf_counter()
            objectives.collator(big_pairs, rng.permutation(build_batch), big_words, rng)
            build_s.append(time.perf_counter() - start)
        result["build_ms_at_build_batch"] = 1000 * statistics.median(build_s)
        results.append(result)
        del objectives, optimizer, params, recorder, built
        if cuda:
            torch.cuda.empty_cache()
    return {
        "shape": "xlmr-base" if shape == "base" else f"xlmr-{shape}",
        "device": torch.cuda.get_device_name() if cuda else f"cpu x{threads}",
        "model": {k: getattr(config, k) for k in SHAPES["tiny"]},
        "batch_pairs": batch,
        "micro_batch_pairs": micro_batch,
        "seq": seq,
        "english_vocab": english_vocab,
        "words_per_sentence": (seq - 2) // 2,
        "links_per_pair": len(words.links.row(0)),
        "build_batch_pairs": build_batch,
        "peak_tflops": peak_tflops,
        "settings": settings_of,
        "runs": results,
    }
