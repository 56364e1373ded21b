"""One alignment job: a shard of a language's training pairs through the configured aligner
(a neural one block by block, resuming after a kill: `xlsent.align.blocks`)."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Union

import pyarrow as pa

from xlsent.align.blocks import BLOCK_CHUNKS, Blocks, fingerprint
from xlsent.align.estimation import BeyondCap, estimation_pairs
from xlsent.align.links import SentencePair
from xlsent.align.shards import read_pairs, shard_rows, write_shard
from xlsent.align.statistical import EflomalAligner, EflomalConfig
from xlsent.arguments import settings_object
from xlsent.failures.kill_points import kill_point

if TYPE_CHECKING:  # the neural aligners' modules import torch: only when they run
    from xlsent.align.simalign import SimAlignConfig
    from xlsent.align.wspalign import WSPAlignConfig

log = logging.getLogger(__name__)


def shard_seed(seed: int, index: int) -> int:
    """eflomal's seed for shard `index` under `align.eflomal.seed`: a 64-bit hash of both, so
    that a language's shards (which estimate on each other's pairs when small) sample their
    own streams, and seed 1's shard 0 is not seed 0's shard 1. Shard i of two languages
    shares a seed; their words differ, and so do their samples."""
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


AlignerConfig = Union["EflomalConfig", "WSPAlignConfig", "SimAlignConfig"]


def aligner_config(method: str, settings: dict) -> AlignerConfig:
    """The settings object of aligner `method` from its job's `--settings` JSON (the
    schema's `align.<method>` block less `NOT_PROGRAM_SETTINGS`): an unknown or missing key
    fails naming it."""
    if method == "wspalign":
        from xlsent.align.wspalign import WSPAlignConfig as cls
    elif method == "simalign":
        from xlsent.align.simalign import SimAlignConfig as cls
    else:
        cls = EflomalConfig
    return settings_object(cls, settings, f"align.{method}")


def run(
    method: str,
    settings: dict,
    corpus: Path,
    words: Path,
    index: int,
    shard_size: int,
    total: int,
    out: Path,
    model_dir: Path | None = None,
    binary: Path | None = None,
    beyond: BeyondCap | None = None,
) -> dict:
    """Align shard `index` of a language with `total` training pairs; write it; return stats.

    `model_dir` is WSPAlign's checkpoint or SimAlign's encoder, `binary` eflomal's build
    (None: the checkout's, compiled on first use); `beyond` the language's cleaned pairs and
    sample splits, where a small shard's eflomal borrows pairs beyond the cap to estimate
    on once its other shards are too few (`xlsent.align.estimation`; None: other shards
    only). The stats count the borrowed pairs (`estimation_pairs`) and those of them from
    beyond the cap (`estimation_pairs_beyond_cap`)."""
    cfg = aligner_config(method, settings)
    ids, pairs = read_pairs(corpus, words, index, shard_size)
    extra: list[SentencePair] = []
    beyond_cap = 0
    if isinstance(cfg, EflomalConfig):
        if len(pairs) < cfg.min_estimation_pairs:
            wanted = cfg.min_estimation_pairs - len(pairs)
            extra, beyond_cap = estimation_pairs(
                corpus, words, index, shard_size, total, wanted, beyond, cfg.seed
            )
        log.info(
            "shard %d: %d pairs (+%d for estimation, %d of them beyond the cap)",
            index,
            len(pairs),
            len(extra),
            beyond_cap,
        )
        aligner = EflomalAligner(
            symmetrize=cfg.symmetrize,
            max_words=cfg.max_words,
            seed=shard_seed(cfg.seed, index),
            binary=binary,
        )
        aligned = aligner.align(pairs, extra=extra) if pairs else []
        stats = write_shard(out, [shard_rows(ids, pairs, aligned)])
    else:
        inputs = {"corpus": corpus, "words": words, "model": model_dir}
        stamp = fingerprint(method, dataclasses.asdict(cfg), index, shard_size, inputs)
        blocks = Blocks(out, stamp)
        stats = write_shard(out, _in_blocks(method, cfg, ids, pairs, index, model_dir, blocks))
        blocks.remove()
    return {
        "shard": index,
        "estimation_pairs": len(extra),
        "estimation_pairs_beyond_cap": beyond_cap,
        **stats,
    }


def _in_blocks(
    method: str,
    cfg: WSPAlignConfig | SimAlignConfig,
    ids: list[int],
    pairs: list[SentencePair],
    index: int,
    model_dir: Path | None,
    blocks: Blocks,
) -> list[tuple[pa.Table, dict]]:
    """The shard's rows and counts block by block: those `blocks` holds from an earlier job,
    the others aligned (the model loaded on the first of them) and kept there."""
    size = BLOCK_CHUNKS * cfg.chunk_pairs
    parts, aligner, resumed = [], None, 0
    for block, start in enumerate(range(0, len(pairs), size)):
        part = blocks.read(block)
        if part is None:
            if aligner is None:
                aligner = _neural_aligner(method, cfg, model_dir)
            run_ids, run_pairs = ids[start : start + size], pairs[start : start + size]
            part = shard_rows(run_ids, run_pairs, aligner.align(run_pairs))
            blocks.write(block, *part)
            kill_point("align_shard.block")
        else:
            resumed += part[0].num_rows
        parts.append(part)
    log.info(
        "shard %d: %d pairs in blocks of %d, %d of them aligned by an earlier job",
        index,
        len(pairs),
        size,
        resumed,
    )
    return parts or [shard_rows([], [], [])]


def _neural_aligner(method: str, cfg: WSPAlignConfig | SimAlignConfig, model_dir: Path | None):
    """WSPAlign from its checkpoint, or SimAlign over its encoder, in `model_dir`."""
    if method == "wspalign":
        from xlsent.align.wspalign import WSPAligner

        return WSPAligner.load(model_dir, cfg)
    from xlsent.align.simalign import SimAligner

    return SimAligner.load(model_dir, cfg)
