"""The splits of an offline mining set (`xlsent.evaluate.mining_set`): their names, and how
many sentences each holds.

The arithmetic of the set's settings alone, no data: the builder splits and plants its
distractors with it, and the config check (`xlsent.config.checks`) bounds the margin's k with
it before any job runs, in the Snakemake process, which need not import the builder's readers
(nor does the rule files' list of the set's files, `SPLITS`).
"""

from __future__ import annotations

from dataclasses import dataclass

SPLITS = ("dev", "test")  # threshold split, test split (XTREME's names for BUCC's)


@dataclass(frozen=True)
class MiningSetSettings:
    """`evaluate.bucc.heldout` less `from` (workflow/schemas/config.schema.yaml): the share
    of each split's sentences that are distractors, the share of the pairs in the threshold
    split, and the shuffle's seed."""

    distractors: float
    threshold_share: float
    seed: int

    def __post_init__(self) -> None:
        if not 0 <= self.distractors < 1:
            raise ValueError(f"distractors is a share in [0, 1), not {self.distractors}")
        if not 0 < self.threshold_share < 1:
            raise ValueError(f"threshold_share is a share in (0, 1), not {self.threshold_share}")


def distractor_counts(pairs: int, distractors: float) -> tuple[int, int]:
    """How many of a split's `pairs` keep only their foreign sentence, and how many only
    their English one: the `distractors` share of them, half each way."""
    n_distractors = round(pairs * distractors)
    return n_distractors // 2, n_distractors - n_distractors // 2


def fewest_sentences(pairs: int, settings: MiningSetSettings) -> int:
    """The fewest sentences on a side of a split that `mining_set.build` makes of `pairs`
    unambiguous pairs: the most neighbours the margin can read there
    (`evaluate.bucc.mining.k`)."""
    cut = round(pairs * settings.threshold_share)
    sides = []
    for size in (cut, pairs - cut):
        xx_only, en_only = distractor_counts(size, settings.distractors)
        sides += [size - en_only, size - xx_only]  # foreign sentences, English sentences
    return min(sides)
