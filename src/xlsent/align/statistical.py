"""eflomal: an offline statistical word aligner, seeded, symmetrised by our own heuristics.

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

The binary is eflomal 2.0.0's C aligner built with our seed patch
(`xlsent.align.eflomal_build`): the same pairs, seed and `n_samplers` give the same links
byte for byte, whatever the number of OpenMP threads. We write its input files ourselves (its
Python wrapper's format and iteration schedule), so eflomal's Python package is not
installed: only its source is fetched, to build the binary.
"""

from __future__ import annotations

import logging
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xlsent.align.eflomal_build import EflomalError, default_binary
from xlsent.align.links import Link, PairAlignment, ScoredLinks, SentencePair, parse_pharaoh
from xlsent.align.symmetrize import METHODS, symmetrize
from xlsent.defaults import schema_defaults

log = logging.getLogger(__name__)

MAX_WORDS = 1023  # eflomal's input format holds sentences of fewer than 0x400 words


@dataclass(frozen=True)
@schema_defaults("align.eflomal")
class EflomalConfig:
    """An alignment job's settings: the `align.eflomal` block (defaults are the schema's).

    `seed` is the config's; each shard's sampler gets its own seed hashed from it
    (`xlsent.align.job.shard_seed`). `min_estimation_pairs` is the job's: a smaller shard
    borrows its language's other pairs to estimate on."""

    symmetrize: str
    max_words: int
    seed: int
    min_estimation_pairs: int


def model_word(word: str) -> str:
    """The vocabulary entry of a word token for eflomal: lowercased.

    The model's statistics are counts over word types, and case variants would split those
    counts: "File" starting a sentence or in a Title Case menu label and "file" elsewhere
    would be two types, each with fewer observations, and a rare casing (an all-caps "FILE")
    would be nearly unknown. Casing carries no translation evidence the other side needs.
    """
    return word.lower()


def write_text(path: Path, sentences: Sequence[Sequence[str]]) -> None:
    """One side in eflomal's input format: `N V`, then per sentence its length and its word
    type ids (0-based, numbered by first occurrence), space-separated.

    Ids rather than words: a token holding whitespace (spaCy keeps a no-break space as one)
    stays one word.
    """
    types: dict[str, int] = {}
    lines = []
    for words in sentences:
        ids = [types.setdefault(model_word(word), len(types)) for word in words]
        lines.append(" ".join(map(str, [len(ids), *ids])) + "\n")
    path.write_text(f"{len(lines)} {len(types)}\n" + "".join(lines))


def iterations(model: int, n_pairs: int, rel_iterations: float) -> list[int]:
    """Sampling iterations of each model stage up to `model` (IBM1, HMM, fertility).

    eflomal's Python wrapper's schedule (2.0.0): 5000 / sqrt(pairs) at `rel_iterations` 1,
    so that a run's work (iterations × pairs) grows with the square root of the pairs.
    """
    full = max(2, round(rel_iterations * 5000 / math.sqrt(n_pairs)))
    quarter = max(1, full // 4)
    return [[full], [max(2, quarter), full], [max(2, quarter), quarter, full]][model - 1]


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
    `n_samplers`, `rel_iterations`, `null_prior`: passed to eflomal (its defaults);
    `seed`: seeds the samplers (0 to 2**64 - 1);
    `binary`: the eflomal build to run (None: `default_binary()`, compiled on first use).
    """

    def __init__(
        self,
        symmetrize: str = "grow_diag_final_and",
        model: int = 3,
        max_words: int = 128,
        n_samplers: int = 3,
        rel_iterations: float = 1.0,
        null_prior: float = 0.2,
        seed: int = 0,
        binary: str | os.PathLike[str] | None = None,
    ) -> None:
        if symmetrize not in METHODS:
            raise ValueError(
                f"unknown symmetrisation {symmetrize!r}; use one of {', '.join(METHODS)}"
            )
        if model not in (1, 2, 3):
            raise ValueError(f"eflomal model must be 1, 2 or 3, not {model!r}")
        if not 1 <= max_words <= MAX_WORDS:
            raise ValueError(f"max_words must be 1 to {MAX_WORDS}, not {max_words}")
        if not 0 <= seed < 2**64:  # the binary's seed is an unsigned 64-bit integer
            raise ValueError(f"eflomal's seed must be 0 to 2**64 - 1, not {seed}")
        self.symmetrize = symmetrize
        self.model = model
        self.max_words = max_words
        self.n_samplers = n_samplers
        self.rel_iterations = rel_iterations
        self.null_prior = null_prior
        self.seed = seed
        self.binary = binary

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
            self.write_links(pairs, fwd_path, rev_path)
            lengths = [(len(p.en_words), len(p.xx_words)) for p in pairs]
            return _read_links(fwd_path, lengths), _read_links(rev_path, lengths)

    def write_links(self, pairs: Sequence[SentencePair], fwd_path: Path, rev_path: Path) -> None:
        """Run eflomal on `pairs`, which must all align: its forward and reverse links, one
        Pharaoh line per pair as it writes them, go to `fwd_path` and `rev_path`."""
        with tempfile.TemporaryDirectory(prefix="xlsent-eflomal-") as tmp:
            en_path, xx_path = Path(tmp) / "en.txt", Path(tmp) / "xx.txt"
            write_text(en_path, [p.en_words for p in pairs])
            write_text(xx_path, [p.xx_words for p in pairs])
            args = [
                str(self.binary or default_binary()),
                *("-m", str(self.model), "-n", str(self.n_samplers), "-N", str(self.null_prior)),
                *("-x", str(self.seed), "-s", str(en_path), "-t", str(xx_path)),
                *("-f", str(fwd_path), "-r", str(rev_path), "-q"),
            ]
            for stage, n in enumerate(iterations(self.model, len(pairs), self.rel_iterations)):
                args += [f"-{stage + 1}", str(n)]
            started = time.perf_counter()
            proc = subprocess.run(args, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.splitlines()[-20:])
            raise EflomalError(f"eflomal failed (exit {proc.returncode}): {args[0]}\n{tail}")
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
