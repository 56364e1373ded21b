"""Word-alignment quality against hand-made gold alignments (precision, recall, AER).

The gold format is `shared/data/gold-align/` (see its README): a UTF-8 TSV with the header
`line en_tokens xx_tokens sure possible`, tokens joined by single spaces, links in Pharaoh
`i-j` form with i the English index, and `possible` holding only the Possible links that are
not Sure. With A the predicted links, S the Sure links and P = S ∪ possible (Och & Ney 2003):

    precision = |A ∩ P| / |A|     recall = |A ∩ S| / |S|
    AER = 1 − (|A ∩ S| + |A ∩ P|) / (|A| + |S|)

all summed over the pairs of the test set before dividing (corpus level).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from xlsent.align.links import Link, parse_pharaoh

GOLD_HEADER = ["line", "en_tokens", "xx_tokens", "sure", "possible"]


@dataclass(frozen=True)
class GoldPair:
    """One gold pair. `possible` is the full P = S ∪ (the file's possible-only links)."""

    line: int
    en_tokens: list[str]
    xx_tokens: list[str]
    sure: set[Link]
    possible: set[Link]


def read_gold(path: str | Path) -> list[GoldPair]:
    """The pairs of a gold TSV; a malformed row raises ValueError naming file and line."""
    path = Path(path)
    rows = path.read_text(encoding="utf-8").split("\n")
    if rows[0].rstrip("\r").split("\t") != GOLD_HEADER:
        raise ValueError(f"{path}:1: header must be {' '.join(GOLD_HEADER)} (tab-separated)")
    pairs = []
    for number, row in enumerate(rows[1:], start=2):
        row = row.rstrip("\r")
        if not row.strip():
            continue
        try:
            pairs.append(_gold_pair(row))
        except ValueError as err:
            raise ValueError(f"{path}:{number}: {err}") from None
    return pairs


def _gold_pair(row: str) -> GoldPair:
    fields = row.split("\t")
    if len(fields) != len(GOLD_HEADER):
        raise ValueError(f"expected {len(GOLD_HEADER)} tab-separated fields, got {len(fields)}")
    line, en_text, xx_text, sure_text, possible_text = fields
    if not line.isdigit():
        raise ValueError(f"line number {line!r} is not a non-negative integer")
    en_tokens, xx_tokens = en_text.split(" "), xx_text.split(" ")
    if "" in en_tokens or "" in xx_tokens:
        raise ValueError("empty token (tokens are joined by single spaces)")
    sure, possible_only = parse_pharaoh(sure_text), parse_pharaoh(possible_text)
    for name, links in (("sure", sure), ("possible", possible_only)):
        for en, xx in sorted(links):
            if en >= len(en_tokens) or xx >= len(xx_tokens):
                raise ValueError(
                    f"{name} link {en}-{xx} out of range ({len(en_tokens)} English tokens, "
                    f"{len(xx_tokens)} foreign tokens)"
                )
    both = sure & possible_only
    if both:
        raise ValueError(
            f"links in both sure and possible: {' '.join(map(_pharaoh, sorted(both)))}"
        )
    return GoldPair(int(line), en_tokens, xx_tokens, sure, sure | possible_only)


def _pharaoh(link: Link) -> str:
    return f"{link[0]}-{link[1]}"


def aer(predicted: Sequence[Collection[Link]], gold: Sequence[GoldPair]) -> dict:
    """Corpus-level precision, recall and AER of `predicted[i]` against `gold[i]`, and counts.

    Link sets or scored-link dicts (their keys count) both work. An empty prediction has
    precision 0 by convention here (and the AER formula still holds).
    """
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} gold pairs")
    n_a = n_s = n_p = a_s = a_p = 0
    for links, pair in zip(predicted, gold, strict=True):
        a = set(links)
        n_a += len(a)
        n_s += len(pair.sure)
        n_p += len(pair.possible)
        a_s += len(a & pair.sure)
        a_p += len(a & pair.possible)
    return {
        "precision": a_p / n_a if n_a else 0.0,
        "recall": a_s / n_s if n_s else 0.0,
        "aer": 1.0 - (a_s + a_p) / (n_a + n_s) if n_a + n_s else 0.0,
        "pairs": len(gold),
        "predicted": n_a,
        "sure": n_s,
        "possible": n_p,
        "predicted_in_sure": a_s,
        "predicted_in_possible": a_p,
    }


def diagonal_link(i: int, n_en: int, n_xx: int) -> int:
    """The foreign index the diagonal baseline gives English word `i`.

    round(i · n_xx / n_en) with halves rounded up, computed exactly in integers as
    ⌊(2·i·n_xx + n_en) / (2·n_en)⌋, then capped at n_xx − 1 (only reached when the foreign
    side is less than half as long, e.g. i = 9, n_en = 10, n_xx = 3 gives 2.7 → 3 → 2).
    """
    return min((2 * i * n_xx + n_en) // (2 * n_en), n_xx - 1)


def diagonal_baseline(gold: Sequence[GoldPair]) -> list[set[Link]]:
    """A reference point for AER: every English word i linked to `diagonal_link(i, …)`.

    Exactly one link per English word (none for a pair with an empty side); a monotone,
    length-proportional guess with no lexical knowledge.
    """
    out = []
    for pair in gold:
        n_en, n_xx = len(pair.en_tokens), len(pair.xx_tokens)
        if not n_xx:
            out.append(set())
            continue
        out.append({(i, diagonal_link(i, n_en, n_xx)) for i in range(n_en)})
    return out
