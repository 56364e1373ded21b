"""An offline mining set in the BUCC layout, built from held-out translation pairs.

BUCC plants translation pairs among sentences of comparable corpora whose translations are
not on the other side. Without its data, the same task is built from pairs no run trained
on (the sample stage's `mining` split, or a Tatoeba-style test set): of each language's
pairs, a share `distractors` loses one side, half of them the English, half the foreign
sentence, so that the sentence left has no translation to be found; the other pairs are the
gold. The pairs are split first, `threshold_share` of them into the split whose gold chooses
the threshold (`dev`), the rest into the one it is applied to (`test`), XTREME's names.

A mining set needs unambiguous gold, as the BUCC scorer does: pairs whose two sides are the
same text, and pairs repeating an English or a foreign sentence (ignoring case and spacing),
are dropped first. Each side is shuffled and numbered BUCC's way (`kk-000000001`), so the
line order says nothing about which sentences are pairs.
"""

from __future__ import annotations

import dataclasses
import logging
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from xlsent.evaluate.bucc import BuccSplit, write_split
from xlsent.evaluate.mining_sizes import SPLITS, MiningSetSettings, distractor_counts
from xlsent.failures.errors import XlsentError
from xlsent.failures.unreadable import reading

log = logging.getLogger(__name__)

_MIN_GOLD = 10  # fewer gold pairs than this make a threshold or an F1 noise


class MiningSetError(XlsentError):
    """Held-out pairs that cannot make a mining set; the message says what to change."""


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def unambiguous(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (en, xx) pairs with two different sides, each English and foreign sentence once
    (ignoring case and spacing): the first pair of a repeated sentence is kept."""
    seen_en: set[str] = set()
    seen_xx: set[str] = set()
    kept = []
    for en, xx in pairs:
        en_key, xx_key = _key(en), _key(xx)
        if not en_key or not xx_key or en_key == xx_key:
            continue
        if en_key in seen_en or xx_key in seen_xx:
            continue
        seen_en.add(en_key)
        seen_xx.add(xx_key)
        kept.append((en, xx))
    return kept


def _split(
    lang: str, name: str, pairs: list[tuple[str, str]], distractors: float, rng: np.random.Generator
) -> tuple[BuccSplit, dict[str, int]]:
    """One split of the set: the first `distractors` share of `pairs` lose a side (their
    first half the English, the rest the foreign sentence), the others are gold."""
    xx_only, en_only = distractor_counts(len(pairs), distractors)
    n_distractors = xx_only + en_only
    xx_rows = [(i, xx) for i, (_, xx) in enumerate(pairs) if i >= n_distractors or i < xx_only]
    en_rows = [(i, en) for i, (en, _) in enumerate(pairs) if i >= xx_only]
    xx_rows = [xx_rows[i] for i in rng.permutation(len(xx_rows))]
    en_rows = [en_rows[i] for i in rng.permutation(len(en_rows))]
    xx_ids = {pair: f"{lang}-{n:09d}" for n, (pair, _) in enumerate(xx_rows, start=1)}
    en_ids = {pair: f"en-{n:09d}" for n, (pair, _) in enumerate(en_rows, start=1)}
    gold = sorted((xx_ids[i], en_ids[i]) for i in range(n_distractors, len(pairs)))
    split = BuccSplit(
        lang=lang,
        split=name,
        xx_ids=list(xx_ids.values()),
        xx=[text for _, text in xx_rows],
        en_ids=list(en_ids.values()),
        en=[text for _, text in en_rows],
        gold=gold,
    )
    counts = {
        "gold": len(gold),
        "xx_only": xx_only,
        "en_only": en_only,
        "xx_sentences": len(xx_rows),
        "en_sentences": len(en_rows),
    }
    return split, counts


def build(
    pairs: Sequence[tuple[str, str]], lang: str, settings: MiningSetSettings
) -> tuple[dict[str, BuccSplit], dict]:
    """The `dev` and `test` splits of `lang` from its held-out (en, xx) `pairs`, and counts.

    Seeded by (settings.seed, language): the same pairs give the same set on every machine.
    """
    kept = unambiguous(pairs)
    rng = np.random.default_rng([settings.seed, zlib.crc32(lang.encode())])
    shuffled = [kept[i] for i in rng.permutation(len(kept))]
    cut = round(len(shuffled) * settings.threshold_share)
    splits, counts = {}, {}
    for name, part in zip(SPLITS, (shuffled[:cut], shuffled[cut:]), strict=True):
        splits[name], counts[name] = _split(lang, name, part, settings.distractors, rng)
    stats = {
        "lang": lang,
        "pairs": len(pairs),
        "ambiguous": len(pairs) - len(kept),
        **dataclasses.asdict(settings),
        "splits": counts,
    }
    short = [name for name in SPLITS if counts[name]["gold"] < _MIN_GOLD]
    if any(counts[name]["gold"] == 0 for name in SPLITS):
        golds = ", ".join(f"{name} {counts[name]['gold']}" for name in SPLITS)
        raise MiningSetError(
            f"{lang}: {len(kept)} usable held-out pairs leave a mining split without a gold pair "
            f"(gold pairs: {golds}): hold out more pairs "
            "(corpus.mining_pairs), lower evaluate.bucc.heldout.distractors, or leave "
            f"{lang} out of evaluate.bucc.languages"
        )
    if short:
        log.warning(
            "%s: only %s gold pairs in the mining split(s) %s (fewer than %d): its threshold and "
            "F1 are noise; hold out more pairs",
            lang,
            "/".join(str(counts[name]["gold"]) for name in short),
            ", ".join(short),
            _MIN_GOLD,
        )
    return splits, stats


def corpus_pairs(path: str | Path) -> list[tuple[str, str]]:
    """The (en, xx) pairs of a corpus-stage Parquet file (the sample stage's `mining` split)."""
    with reading(path):
        frame = pl.read_parquet(path, columns=["en", "xx"])
    return list(frame.iter_rows())


def write(splits: dict[str, BuccSplit], directory: str | Path) -> list[Path]:
    """Write the splits of `build` into `directory` in the BUCC layout."""
    return [path for split in splits.values() for path in write_split(split, directory)]
