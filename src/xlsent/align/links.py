"""Word links and the types every aligner shares.

A link is a pair of word indices `(en, xx)` into the tokenize stage's word lists; aligners
return scored links `{(en, xx): score}`. Pharaoh text (`0-0 1-2 …`) writes them English
index first, as the gold files do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Link = tuple[int, int]
ScoredLinks = dict[Link, float]

COMBINATIONS = ("sum", "mean", "intersection", "union")


@dataclass(frozen=True)
class SentencePair:
    """One training pair as the aligners see it: the texts and their word tokens."""

    en: str
    xx: str
    en_words: list[str]
    xx_words: list[str]


@dataclass
class PairAlignment:
    """An aligner's answer for one pair: its links, or why it was skipped (`status`)."""

    links: ScoredLinks = field(default_factory=dict)
    status: str | None = None  # None: aligned; else a stats key such as "too_long"


def to_pharaoh(links: ScoredLinks | set[Link]) -> str:
    return " ".join(f"{en}-{xx}" for en, xx in sorted(links))


def parse_pharaoh(text: str) -> set[Link]:
    """`"0-0 1-2"` → {(0, 0), (1, 2)}; a malformed item raises ValueError naming it."""
    links = set()
    for item in text.split():
        en, sep, xx = item.partition("-")
        if not (sep and en.isdigit() and xx.isdigit()):
            raise ValueError(f"{item!r} is not a Pharaoh link (expected i-j)")
        links.add((int(en), int(xx)))
    return links


def combine(en2xx: ScoredLinks, xx2en: ScoredLinks, method: str, threshold: float) -> ScoredLinks:
    """Merge the links of the two directions of a span-prediction aligner.

    Both inputs are keyed (en, xx). With f and r a pair's credit in each direction (0 where a
    direction did not find it):
    - `sum` (WSPAlign's released code, WACSE's setting): pairs the en→xx direction found,
      scored f + r, kept if the score exceeds `threshold`;
    - `intersection`: pairs both directions found, scored f + r, kept above `threshold`;
    - `union`: pairs either direction found, scored f + r, kept above `threshold`;
    - `mean`: pairs either direction found, scored (f + r) / 2, kept above `threshold`.
    """
    if method == "sum":
        keys = set(en2xx)
    elif method == "intersection":
        keys = set(en2xx) & set(xx2en)
    elif method in ("union", "mean"):
        keys = set(en2xx) | set(xx2en)
    else:
        raise ValueError(f"unknown combination {method!r}; use one of {', '.join(COMBINATIONS)}")
    divisor = 2.0 if method == "mean" else 1.0
    scored = {k: (en2xx.get(k, 0.0) + xx2en.get(k, 0.0)) / divisor for k in keys}
    return {k: v for k, v in sorted(scored.items()) if v > threshold}
