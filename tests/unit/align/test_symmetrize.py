"""Symmetrisation heuristics on grids worked out by hand, and against a literal grid scan.

Grids: rows are English words, columns foreign words; `B` a link both directions proposed,
`F` forward only, `R` reverse only, `.` none. Links are (en, xx).
"""

from __future__ import annotations

import random

import pytest

from xlsent.align.links import Link
from xlsent.align.symmetrize import (
    METHODS,
    NEIGHBOURS,
    grow_diag,
    grow_diag_final,
    grow_diag_final_and,
    intersection,
    symmetrize,
    union,
)

# The main worked example (5 × 5):
#
#          xx 0  1  2  3  4
#   en 0      B  R  .  .  .
#   en 1      .  B  F  .  .
#   en 2      .  .  .  R  .
#   en 3      F  .  .  .  .
#   en 4      .  .  .  .  F
FWD = {(0, 0), (1, 1), (1, 2), (3, 0), (4, 4)}
REV = {(0, 0), (0, 1), (1, 1), (2, 3)}

# grow_diag, by hand. Start: the intersection {(0,0), (1,1)}; en 0, 1 and xx 0, 1 aligned.
# Sweep 1, in sorted order:
#   (0,0): neighbour (0,1) is in the union but en 0 and xx 1 are both aligned: skipped;
#          (1,1) is already in.
#   (1,1): (0,1) skipped again; (1,2) is in the union and xx 2 is unaligned: added. It sorts
#          after (1,1), so this sweep visits it.
#   (1,2): its direct neighbours (0,2), (2,2), (1,3) are not in the union; its diagonal
#          neighbour (2,3) is, and en 2 is unaligned: added (reachable only diagonally).
#   (2,3): no neighbour in the union that is not in already.
# Sweep 2 adds nothing. (3,0) and (4,4) touch no grown link, so growing never reaches them.
GROW_DIAG = {(0, 0), (1, 1), (1, 2), (2, 3)}
# Final passes, forward links first, in sorted order (aligned: en 0, 1, 2; xx 0, 1, 2, 3):
#   (3,0): en 3 unaligned, xx 0 aligned     → final adds it; final-and does not.
#   (4,4): en 4 and xx 4 both unaligned     → both add it.
#   then the reverse links: (0,1) has both words aligned → neither adds it.
GROW_DIAG_FINAL = GROW_DIAG | {(3, 0), (4, 4)}
GROW_DIAG_FINAL_AND = GROW_DIAG | {(4, 4)}


def test_intersection_and_union() -> None:
    assert intersection(FWD, REV) == {(0, 0), (1, 1)}
    assert union(FWD, REV) == FWD | REV
    assert len(union(FWD, REV)) == 7


def test_grow_diag_differs_from_intersection_and_union() -> None:
    assert grow_diag(FWD, REV) == GROW_DIAG
    assert grow_diag(FWD, REV) != intersection(FWD, REV)
    assert grow_diag(FWD, REV) != union(FWD, REV)


def test_final_and_final_and_differ() -> None:
    assert grow_diag_final(FWD, REV) == GROW_DIAG_FINAL
    assert grow_diag_final_and(FWD, REV) == GROW_DIAG_FINAL_AND
    # (0,1) is in the union but never added: both its words are aligned throughout.
    assert (0, 1) not in grow_diag_final(FWD, REV)


def test_diagonal_step_is_needed() -> None:
    #          xx 0  1
    #   en 0      B  .
    #   en 1      .  F
    # (1,1) touches (0,0) only diagonally; both its words are unaligned, so it is grown.
    assert grow_diag({(0, 0), (1, 1)}, {(0, 0)}) == {(0, 0), (1, 1)}


def test_grow_blocks_a_link_whose_words_are_both_aligned() -> None:
    #          xx 0  1  2
    #   en 0      B  F  .
    #   en 1      R  .  B
    # Start: {(0,0), (1,2)}, so en 0, 1 and xx 0, 2 are aligned. From (0,0), step (+1,0)
    # reaches (1,0): in the union, but en 1 (by (1,2)) and xx 0 (by (0,0)) are aligned →
    # skipped, now and in every later visit; step (0,+1) reaches (0,1): xx 1 is unaligned →
    # added. Nothing else is in the union.
    fwd, rev = {(0, 0), (0, 1), (1, 2)}, {(0, 0), (1, 0), (1, 2)}
    assert grow_diag(fwd, rev) == {(0, 0), (0, 1), (1, 2)}


def test_final_passes_take_the_forward_direction_first() -> None:
    #          xx 0  1
    #   en 0      F  R
    # Nothing to grow from. Final-and: forward (0,0) first (both words unaligned), then
    # (0,1) has en 0 aligned → skipped. Swapping the arguments swaps the winner.
    assert grow_diag_final_and({(0, 0)}, {(0, 1)}) == {(0, 0)}
    assert grow_diag_final_and({(0, 1)}, {(0, 0)}) == {(0, 1)}
    # Final (or): (0,1) still has an unaligned xx word, so both are kept either way.
    assert grow_diag_final({(0, 0)}, {(0, 1)}) == {(0, 0), (0, 1)}


def test_empty_and_identical_inputs() -> None:
    for method in METHODS:
        assert symmetrize(set(), set(), method) == set()
        assert symmetrize(FWD, FWD, method) == FWD


def test_unknown_method() -> None:
    with pytest.raises(ValueError, match="unknown symmetrisation 'grow'"):
        symmetrize(FWD, REV, "grow")


# A literal transcription of the published pseudo-code (a full scan of the grid, row by
# row, repeated until nothing changes), to check the sorted-heap implementation against.
def _aligned(links: set[Link], en: int | None = None, xx: int | None = None) -> bool:
    return any((en is None or e == en) and (xx is None or x == xx) for e, x in links)


def _reference(fwd: set[Link], rev: set[Link], n_en: int, n_xx: int, final: str | None):
    links = fwd & rev
    both = fwd | rev
    changed = True
    while changed:
        changed = False
        for en in range(n_en):
            for xx in range(n_xx):
                if (en, xx) not in links:
                    continue
                for d_en, d_xx in NEIGHBOURS:
                    new = (en + d_en, xx + d_xx)
                    free = not _aligned(links, en=new[0]) or not _aligned(links, xx=new[1])
                    if free and new in both:
                        links.add(new)
                        changed = True
    if final:
        for direction in (fwd, rev):
            for en in range(n_en):
                for xx in range(n_xx):
                    free_en, free_xx = not _aligned(links, en=en), not _aligned(links, xx=xx)
                    free = (free_en and free_xx) if final == "and" else (free_en or free_xx)
                    if free and (en, xx) in direction:
                        links.add((en, xx))
    return links


def test_matches_a_literal_grid_scan_on_random_grids() -> None:
    rng = random.Random(0)
    for _ in range(400):
        n_en, n_xx = rng.randint(1, 7), rng.randint(1, 7)
        cells = [(e, x) for e in range(n_en) for x in range(n_xx)]
        fwd = {c for c in cells if rng.random() < 0.3}
        rev = {c for c in cells if rng.random() < 0.3}
        assert grow_diag(fwd, rev) == _reference(fwd, rev, n_en, n_xx, None)
        assert grow_diag_final(fwd, rev) == _reference(fwd, rev, n_en, n_xx, "or")
        assert grow_diag_final_and(fwd, rev) == _reference(fwd, rev, n_en, n_xx, "and")
        # Growing only ever adds union links to the intersection.
        assert intersection(fwd, rev) <= grow_diag(fwd, rev) <= union(fwd, rev)
        for final in (grow_diag_final, grow_diag_final_and):
            assert grow_diag(fwd, rev) <= final(fwd, rev) <= union(fwd, rev)
        # grow_diag depends on the intersection and union only: symmetric in its arguments.
        assert grow_diag(fwd, rev) == grow_diag(rev, fwd)
