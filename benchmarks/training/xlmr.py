"""The xlm-roberta-base shape: each method's real `Objectives` on synthetic batches of real
sentence lengths.

No download: the model is built from its config with random weights (a step's time does not
depend on them). Each pair's two lengths are drawn from a real corpus (`training.lengths`;
truncated to `seq` tokens as training truncates), its ids at random: what a step computes
depends on the lengths, not on the ids. A step is what `Trainer.train_step` does for its
micro-batches: build each on the CPU through the method's collator, copy it over,
forward/backward (bf16 autocast on CUDA), clip, AdamW; at a batch above the micro-batch, TR
over the whole batch by gradient caching (`xlsent.train.cached_tr`).
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
from xlsent.ragged import Ragged, offsets_of, within
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
    cached TR when `negatives` is batch); its record (real tokens, model FLOPs)."""
    cuda = device.startswith("cuda")
    record = step.accumulate(
        objectives, batches, len(batches), device=torch.device(device), autocast=cuda
    )
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
    peak_tflops: float | None,
    build_batch: int,
    english_vocab: int,
) -> dict:
    """Each run's steps at each batch of `batches` pairs (micro-batches of at most
    `micro_batch`), one after the other on one model, with the paper config's settings, on
    pairs of `lengths` (P×2 subwords, `training.lengths`) cut to `seq` tokens;
    `english_vocab` distinct English ids (dap's RTL vocabulary); the batch building is also
    timed alone at `build_batch` pairs."""
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

    # Each step draws its pairs from a pool of 4 batches of them.
    pools = {batch: drawn(4 * batch) for batch in batches}
    big_pairs, big_words = drawn(build_batch)
    torch.manual_seed(0)
    model = XLMRobertaModel(config).to(device)  # shared by the runs: speed needs no training
    results, settings_of = [], {}
    for batch in batches:
        micro = min(micro_batch, batch)
        pairs, words = pools[batch]
        for run in runs:
            settings = run_settings(
                paper, run, batch_size=batch, micro_batch_size=micro, device=device
            )
            settings_of[run] = described(settings)
            english_ids = vocabulary if settings.rtl_vocabulary == "english" else None
            objectives = Objectives(model, settings, tokens, rtl_vocabulary=english_ids)
            objectives.to(device).train()
            params = [p for p in objectives.parameters() if p.requires_grad]
            optimizer = torch.optim.AdamW(
                params, lr=settings.lr, weight_decay=settings.weight_decay
            )
            recorder = Recorder(objectives)
            step_s, n_tokens, flops = [], 0, []
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            for i in range(-warmup, steps):  # warm-up steps first: allocator, first kernels
                if i == 0:
                    recorder.reset()
                sync()
                start = time.perf_counter()
                order = rng.choice(len(pairs), batch, replace=False)
                built = [
                    recorder(pairs, order[k : k + micro], words, rng)
                    for k in range(0, batch, micro)
                ]
                record = optimizer_step(objectives, optimizer, built, device)
                sync()
                if i >= 0:
                    step_s.append(time.perf_counter() - start)
                    n_tokens += record["tokens"]
                    flops.append(record["flops"])
            result = summary(run, step_s, n_tokens, batch, recorder, flops, peak_tflops)
            result["micro_batch_pairs"] = micro
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
            del objectives, optimizer, params, recorder, built
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
        "peak_tflops": peak_tflops,
        "settings": settings_of,
        "runs": results,
    }
