"""The sizes of a mining set's splits from its settings alone (`xlsent.evaluate.mining_sizes`):
the distractors' halves by hand, and the config check's bound on k against the sets that
`xlsent.evaluate.mining_set.build` makes."""

from __future__ import annotations

import pytest

from xlsent.evaluate import mining_set
from xlsent.evaluate.mining_sizes import MiningSetSettings, distractor_counts, fewest_sentences

HELDOUT = [(f"sentence {i}", f"Satz {i}") for i in range(40)]


def test_distractors_split_in_halves_the_odd_one_to_the_english_side():
    # 11 pairs at 0.5: round(5.5) = 6 distractors (banker's rounding), 3 keep only their
    # foreign sentence, 3 only their English one; 7 pairs at 0.5: round(3.5) = 4, 2 and 2;
    # 10 at 0.3: 3, 1 and 2.
    assert distractor_counts(11, 0.5) == (3, 3)
    assert distractor_counts(7, 0.5) == (2, 2)
    assert distractor_counts(10, 0.3) == (1, 2)
    assert distractor_counts(10, 0.0) == (0, 0)


@pytest.mark.parametrize(
    ("distractors", "share"), [(1.0, 0.5), (-0.1, 0.5), (0.5, 0.0), (0.5, 1.0)]
)
def test_shares_out_of_range_are_refused(distractors, share):
    with pytest.raises(ValueError, match="is a share in"):
        MiningSetSettings(distractors, share, 0)


@pytest.mark.parametrize("pairs", [7, 8, 10, 11, 40])
@pytest.mark.parametrize(("distractors", "share"), [(0.5, 0.5), (0.2, 0.5), (0.3, 0.3)])
def test_the_config_checks_bound_is_the_smallest_side_build_makes(pairs, distractors, share):
    """`fewest_sentences` (the config check's bound on k) against `build` on real pairs."""
    settings = MiningSetSettings(distractors, share, 0)
    _, stats = mining_set.build(HELDOUT[:pairs], "de", settings)
    sides = [n for split in stats["splits"].values() for key, n in split.items() if "sent" in key]
    assert fewest_sentences(pairs, settings) == min(sides)
