"""Symmetrisation: one link set from the two directions of a directional word aligner.

A directional aligner (IBM models, HMM, eflomal) lets every word of one side pick at most one
word of the other, so neither direction alone can express one-to-many links both ways. The
heuristics here (Och & Ney 2003; Koehn, Och & Marcu 2003, as Moses' `grow-diag-final(-and)`)
join the two. Both inputs are sets of `(en, xx)` word-index pairs — the reverse direction
already re-keyed English first — and so is the result.

- `intersection`: links both directions proposed (high precision).
- `union`: links either direction proposed (high recall).
- `grow_diag`: start from the intersection; then sweep the current links in sorted order
  (en index, then xx index) and, for each, try its eight grid neighbours in the fixed order
  of steps (Δen, Δxx) = (−1,0), (0,−1), (+1,0), (0,+1), then the diagonals (−1,−1),
  (−1,+1), (+1,−1), (+1,+1). A neighbour is added if it is in the union and at least one of
  its two words (its en word or its xx word) is not yet aligned. A link added during a sweep
  is visited later in the same sweep when it sorts after the link being visited (as in the
  published pseudo-code's row-by-row scan of the grid), otherwise in the next sweep. Sweeps
  repeat until one adds nothing.
- `grow_diag_final`: `grow_diag`, then a final pass over the forward direction's links (the
  first argument), then one over the reverse direction's, each in sorted order, that adds a
  link when its en word **or** its xx word is still unaligned.
- `grow_diag_final_and`: the same final passes, but a link is added only when its en word
  **and** its xx word are both still unaligned.

"Aligned" always means: has a link in the set being built, at the moment of the check.
Everything iterates in sorted order, so the result depends only on the two input sets (and,
for the final passes, on which one is forward: a link of either can block one of the other).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable

from xlsent.align.links import Link

# Grid steps (Δen, Δxx), in the order they are tried: direct neighbours, then diagonal ones.
DIRECT: tuple[Link, ...] = ((-1, 0), (0, -1), (1, 0), (0, 1))
DIAGONAL: tuple[Link, ...] = ((-1, -1), (-1, 1), (1, -1), (1, 1))
NEIGHBOURS = DIRECT + DIAGONAL


class _Growing:
    """A link set under construction, with the aligned words of each side."""

    def __init__(self, links: Iterable[Link]) -> None:
        self.links: set[Link] = set()
        self.en: set[int] = set()
        self.xx: set[int] = set()
        for link in links:
            self.add(link)

    def add(self, link: Link) -> None:
        self.links.add(link)
        self.en.add(link[0])
        self.xx.add(link[1])

    def covers_new_word(self, link: Link) -> bool:
        return link[0] not in self.en or link[1] not in self.xx

    def covers_two_new_words(self, link: Link) -> bool:
        return link[0] not in self.en and link[1] not in self.xx


def intersection(fwd: Iterable[Link], rev: Iterable[Link]) -> set[Link]:
    return set(fwd) & set(rev)


def union(fwd: Iterable[Link], rev: Iterable[Link]) -> set[Link]:
    return set(fwd) | set(rev)


def _grow(state: _Growing, candidates: set[Link]) -> None:
    """The grow-diag sweeps (module docstring) on `state`, adding links from `candidates`."""
    changed = True
    while changed:
        changed = False
        sweep = sorted(state.links)  # sorted, hence already a valid heap
        while sweep:
            current = heapq.heappop(sweep)
            en, xx = current
            for d_en, d_xx in NEIGHBOURS:
                new = (en + d_en, xx + d_xx)
                if new in candidates and new not in state.links and state.covers_new_word(new):
                    state.add(new)
                    changed = True
                    if new > current:  # the row-order scan has not reached it yet
                        heapq.heappush(sweep, new)


def _final(state: _Growing, direction: set[Link], both_words: bool) -> None:
    test = state.covers_two_new_words if both_words else state.covers_new_word
    for link in sorted(direction):
        if link not in state.links and test(link):
            state.add(link)


def grow_diag(fwd: Iterable[Link], rev: Iterable[Link]) -> set[Link]:
    fwd, rev = set(fwd), set(rev)
    state = _Growing(fwd & rev)
    _grow(state, fwd | rev)
    return state.links


def _grow_diag_final(fwd: Iterable[Link], rev: Iterable[Link], both_words: bool) -> set[Link]:
    fwd, rev = set(fwd), set(rev)
    state = _Growing(fwd & rev)
    _grow(state, fwd | rev)
    _final(state, fwd, both_words)
    _final(state, rev, both_words)
    return state.links


def grow_diag_final(fwd: Iterable[Link], rev: Iterable[Link]) -> set[Link]:
    return _grow_diag_final(fwd, rev, both_words=False)


def grow_diag_final_and(fwd: Iterable[Link], rev: Iterable[Link]) -> set[Link]:
    return _grow_diag_final(fwd, rev, both_words=True)


METHODS: dict[str, Callable[[Iterable[Link], Iterable[Link]], set[Link]]] = {
    "intersection": intersection,
    "union": union,
    "grow_diag": grow_diag,
    "grow_diag_final": grow_diag_final,
    "grow_diag_final_and": grow_diag_final_and,
}


def symmetrize(fwd: Iterable[Link], rev: Iterable[Link], method: str) -> set[Link]:
    """Join the forward and reverse links (both keyed `(en, xx)`) by the heuristic `method`."""
    try:
        function = METHODS[method]
    except KeyError:
        raise ValueError(
            f"unknown symmetrisation {method!r}; use one of {', '.join(METHODS)}"
        ) from None
    return function(fwd, rev)
