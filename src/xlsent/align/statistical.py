"""eflomal: an offline statistical word aligner, symmetrised by our own heuristics.

eflomal (Östling & Tiedemann 2016) is an unsupervised Bayesian IBM-style model (IBM1, then
HMM, then HMM + fertility) estimated by Gibbs sampling **on the very pairs it aligns**: it
has no pretrained parameters, so the more pairs one call sees, the better its lexical
statistics. `EflomalAligner.align` therefore sends all pairs of a call at once (plus any
`extra` pairs, which are used for estimation only) and reads back both directions:

- forward: every xx word picks at most one English word (English generates xx);
- reverse: every English word picks at most one xx word.

eflomal writes both directions as `source-target` index pairs, and we give it English as the
source, so both arrive keyed `(en, xx)`. They are joined by `xlsent.align.symmetrize`, and
each kept link is scored by the share of directions that proposed it: **1.0** when both
did, **0.5** when only one did (the growing heuristics only ever add union links, so no
kept link has 0). The score is thus a two-level confidence, not a probability.

eflomal samples from a random state seeded from the operating system and has no seed
option: two runs on the same input can differ in a few links.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from xlsent.align.links import Link, PairAlignment, ScoredLinks, SentencePair, parse_pharaoh
from xlsent.align.symmetrize import METHODS, symmetrize

log = logging.getLogger(__name__)

SPACE_MARK = "\u2581"  # stands in for whitespace inside a token (eflomal splits on it)


def model_word(word: str) -> str:
    """The vocabulary entry of a word token for eflomal: lowercased, whitespace-free.

    Lowercased because the model's statistics are counts over word types, and case variants
    would split those counts: "File" starting a sentence or in a Title Case menu label and
    "file" elsewhere would be two types, each with fewer observations, and a rare casing
    (an all-caps "FILE") would be nearly unknown. Casing carries no translation evidence the
    other side needs. (eflomal's own reader lowercases too; doing it here keeps the
    behaviour ours rather than a detail of its wrapper.)

    Whitespace-free because eflomal splits lines on any Unicode whitespace, while spaCy keeps
    whitespace as tokens (a double space, a no-break space): such a token must stay one
    word, or every later index of the sentence would shift.
    """
    word = "".join(SPACE_MARK if ch.isspace() else ch for ch in word.lower())
    return word or SPACE_MARK


def score_links(kept: set[Link], fwd: set[Link], rev: set[Link]) -> ScoredLinks:
    """`{link: share of the two directions that proposed it}` (1.0 or 0.5), sorted."""
    return {link: ((link in fwd) + (link in rev)) / 2 for link in sorted(kept)}


def _read_links(path: Path, lengths: Sequence[tuple[int, int]]) -> list[set[Link]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) != len(lengths):
        raise RuntimeError(
            f"eflomal wrote {len(lines)} lines to {path.name} for {len(lengths)} sentence pairs"
        )
    out = []
    for number, (line, (n_en, n_xx)) in enumerate(zip(lines, lengths, strict=True)):
        links = parse_pharaoh(line)
        bad = [(en, xx) for en, xx in links if en >= n_en or xx >= n_xx]
        if bad:
            raise RuntimeError(
                f"eflomal link {bad[0]} out of range for pair {number} "
                f"({n_en} English, {n_xx} foreign words) in {path.name}"
            )
        out.append(links)
    return out


class EflomalAligner:
    """Align sentence pairs with eflomal, both directions, joined by `symmetrize`.

    `model`: 1 (IBM1), 2 (+HMM) or 3 (+fertility, eflomal's default and best);
    `max_words`: pairs with a longer side are returned with status "too_long";
    `n_samplers`, `rel_iterations`, `null_prior`: passed to eflomal (its defaults).
    """

    def __init__(
        self,
        symmetrize: str = "grow_diag_final_and",
        model: int = 3,
        max_words: int = 128,
        n_samplers: int = 3,
        rel_iterations: float = 1.0,
        null_prior: float = 0.2,
    ) -> None:
        if symmetrize not in METHODS:
            raise ValueError(
                f"unknown symmetrisation {symmetrize!r}; use one of {', '.join(METHODS)}"
            )
        if model not in (1, 2, 3):
            raise ValueError(f"eflomal model must be 1, 2 or 3, not {model!r}")
        if max_words < 1:
            raise ValueError(f"max_words must be at least 1, not {max_words}")
        self.symmetrize = symmetrize
        self.model = model
        self.max_words = max_words
        self.n_samplers = n_samplers
        self.rel_iterations = rel_iterations
        self.null_prior = null_prior

    def status(self, pair: SentencePair) -> str | None:
        """Why `pair` is not aligned ("empty", "too_long"), or None if it is."""
        if not pair.en_words or not pair.xx_words:
            return "empty"
        if max(len(pair.en_words), len(pair.xx_words)) > self.max_words:
            return "too_long"
        return None

    def directional(self, pairs: Sequence[SentencePair]) -> tuple[list[set[Link]], list[set[Link]]]:
        """eflomal's forward and reverse links, keyed `(en, xx)`, for pairs that all align.

        The links of `pairs[i]` are at index i; every pair is used for estimation.
        """
        with tempfile.TemporaryDirectory(prefix="xlsent-eflomal-") as tmp:
            fwd_path, rev_path = Path(tmp) / "fwd.links", Path(tmp) / "rev.links"
            self._run(pairs, fwd_path, rev_path)
            lengths = [(len(p.en_words), len(p.xx_words)) for p in pairs]
            return _read_links(fwd_path, lengths), _read_links(rev_path, lengths)

    def _run(self, pairs: Sequence[SentencePair], fwd_path: Path, rev_path: Path) -> None:
        import eflomal

        en_lines = [" ".join(map(model_word, p.en_words)) for p in pairs]
        xx_lines = [" ".join(map(model_word, p.xx_words)) for p in pairs]
        aligner = eflomal.Aligner(
            model=self.model,
            n_samplers=self.n_samplers,
            rel_iterations=self.rel_iterations,
            null_prior=self.null_prior,
        )
        started = time.perf_counter()
        aligner.align(
            en_lines,
            xx_lines,
            links_filename_fwd=str(fwd_path),
            links_filename_rev=str(rev_path),
            quiet=True,
        )
        log.info("eflomal: %d pairs in %.1f s", len(pairs), time.perf_counter() - started)

    def align(
        self, pairs: Sequence[SentencePair], extra: Sequence[SentencePair] = ()
    ) -> list[PairAlignment]:
        """One `PairAlignment` per pair, in order.

        Pairs with an empty side (status "empty") or a side longer than `max_words`
        ("too_long") get no links and are not sent to eflomal. `extra` pairs are sent
        (those that would align) for estimation only: they make the statistics of a small
        batch better and get no answer.
        """
        statuses = [self.status(p) for p in pairs]
        kept = [p for p, s in zip(pairs, statuses, strict=True) if s is None]
        out = [PairAlignment(status=s) for s in statuses]
        if not kept:
            return out
        context = [p for p in extra if self.status(p) is None]
        fwd, rev = self.directional([*kept, *context])
        answers = iter(zip(fwd, rev, strict=False))  # the first len(kept) are ours
        for result in out:
            if result.status is None:
                f, r = next(answers)
                result.links = score_links(symmetrize(f, r, self.symmetrize), f, r)
        return out
