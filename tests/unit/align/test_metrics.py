"""Alignment metrics: AER by hand, the gold files, and eflomal against the diagonal baseline."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import pytest
from support import SHARED

from xlsent.align.links import SentencePair
from xlsent.align.metrics import GoldPair, aer, diagonal_baseline, diagonal_link, read_gold

GOLD = SHARED / "gold-align"
HEADER = "line\ten_tokens\txx_tokens\tsure\tpossible\n"


def _gold(n_en: int, n_xx: int, sure: set, possible_only: set = frozenset()) -> GoldPair:
    return GoldPair(0, ["e"] * n_en, ["x"] * n_xx, set(sure), set(sure) | set(possible_only))


def _needs(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"needs the shared data at {path} (../shared beside the checkout)")


def test_aer_worked_example() -> None:
    gold = [
        _gold(3, 3, {(0, 0), (1, 1)}, {(2, 2), (2, 1)}),  # |S| = 2, |P| = 4
        _gold(2, 2, {(0, 1), (1, 0)}, {(1, 1)}),  # |S| = 2, |P| = 3
    ]
    predicted = [{(0, 0), (1, 2), (2, 2)}, {(0, 1), (1, 1)}]
    # Pair 1: A ∩ S = {(0,0)} (1), A ∩ P = {(0,0), (2,2)} (2); (1,2) is wrong.
    # Pair 2: A ∩ S = {(0,1)} (1), A ∩ P = {(0,1), (1,1)} (2).
    # Sums: |A| = 5, |S| = 4, |P| = 7, |A ∩ S| = 2, |A ∩ P| = 4.
    # precision = 4/5 = 0.8; recall = 2/4 = 0.5; AER = 1 − (2 + 4)/(5 + 4) = 1/3.
    # (Averaging per-pair AERs would give (0.4 + 0.25)/2 = 0.325: the metric is corpus-level.)
    result = aer(predicted, gold)
    assert result["precision"] == pytest.approx(0.8)
    assert result["recall"] == pytest.approx(0.5)
    assert result["aer"] == pytest.approx(1 / 3)
    assert result | {"precision": 0, "recall": 0, "aer": 0} == {
        "precision": 0,
        "recall": 0,
        "aer": 0,
        "pairs": 2,
        "predicted": 5,
        "sure": 4,
        "possible": 7,
        "predicted_in_sure": 2,
        "predicted_in_possible": 4,
    }
    # Scored-link dicts count by their keys.
    assert aer([dict.fromkeys(p, 1.0) for p in predicted], gold) == result


def test_perfect_and_empty_predictions() -> None:
    gold = [_gold(3, 3, {(0, 0), (1, 1)}, {(2, 2)}), _gold(2, 1, {(0, 0)})]
    sure = aer([g.sure for g in gold], gold)
    assert (sure["aer"], sure["precision"], sure["recall"]) == (0.0, 1.0, 1.0)
    # Predicting all of P is not penalised either: A ∩ P = A, A ∩ S = S.
    assert aer([g.possible for g in gold], gold)["aer"] == 0.0
    # Nothing predicted: AER = 1 − 0/|S| = 1, precision 0 by convention.
    empty = aer([set(), set()], gold)
    assert (empty["aer"], empty["precision"], empty["recall"]) == (1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="1 predictions for 2 gold pairs"):
        aer([set()], gold)


def test_diagonal_rule() -> None:
    # round(i · n_xx / n_en), halves up: 4 English words onto 2 foreign words:
    # i = 0 → 0; i = 1 → 0.5 → 1; i = 2 → 1; i = 3 → 1.5 → 2, capped at 1.
    assert [diagonal_link(i, 4, 2) for i in range(4)] == [0, 1, 1, 1]
    # 3 onto 6: 0, 2, 4; 10 onto 3: 0, .3, .6, .9, 1.2, 1.5, 1.8, 2.1, 2.4, 2.7 → … 3 → 2.
    assert [diagonal_link(i, 3, 6) for i in range(3)] == [0, 2, 4]
    assert [diagonal_link(i, 10, 3) for i in range(10)] == [0, 0, 1, 1, 1, 2, 2, 2, 2, 2]
    gold = [_gold(4, 2, {(0, 0)}), _gold(2, 2, {(0, 0)}), GoldPair(1, ["a"], [], set(), set())]
    assert diagonal_baseline(gold) == [{(0, 0), (1, 1), (2, 1), (3, 1)}, {(0, 0), (1, 1)}, set()]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gold.tsv"
    path.write_text(text, encoding="utf-8")
    return path


def test_read_gold_small_file(tmp_path: Path) -> None:
    path = _write(
        tmp_path, HEADER + "7\tI see .\tJe vois .\t0-0 1-1 2-2\t\n3\tHi\tSalut\t0-0\t0-0x\n"
    )
    with pytest.raises(ValueError, match=r"gold\.tsv:3: '0-0x' is not a Pharaoh link"):
        read_gold(path)
    path = _write(tmp_path, HEADER + "7\tI see .\tJe vois .\t0-0 2-2\t1-1\n\n")
    [pair] = read_gold(path)
    assert pair == GoldPair(
        7, ["I", "see", "."], ["Je", "vois", "."], {(0, 0), (2, 2)}, {(0, 0), (1, 1), (2, 2)}
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("line\ten\txx\tsure\tpossible\n", r"gold\.tsv:1: header must be"),
        (HEADER + "0\ta b\tc d\t0-0\n", r"gold\.tsv:2: expected 5 tab-separated fields, got 4"),
        (HEADER + "0\ta b\tc\t0-0\t\nx\ta\tb\t0-0\t\n", r"gold\.tsv:3: line number 'x'"),
        (HEADER + "0\ta b\tc\t0-0 2-0\t\n", r"gold\.tsv:2: sure link 2-0 out of range \(2 Eng"),
        (HEADER + "0\ta b\tc\t0-0\t1-1\n", r"gold\.tsv:2: possible link 1-1 out of range"),
        (HEADER + "0\ta b\tc\t0-0\t0-0\n", r"gold\.tsv:2: links in both sure and possible: 0-0"),
        (HEADER + "0\ta  b\tc\t0-0\t\n", r"gold\.tsv:2: empty token"),
    ],
)
def test_read_gold_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_gold(_write(tmp_path, text))


@pytest.mark.shared
@pytest.mark.parametrize(
    ("name", "pairs", "sure", "possible_only", "en_tokens", "xx_tokens"),
    [("deen.tsv", 60, 460, 135, 546, 526), ("fren.tsv", 40, 325, 82, 344, 369)],
)
def test_real_gold_files(name, pairs, sure, possible_only, en_tokens, xx_tokens) -> None:
    _needs(GOLD / name)
    gold = read_gold(GOLD / name)
    # The README's table.
    assert len(gold) == pairs
    assert sum(len(g.sure) for g in gold) == sure
    assert sum(len(g.possible - g.sure) for g in gold) == possible_only
    assert sum(len(g.en_tokens) for g in gold) == en_tokens
    assert sum(len(g.xx_tokens) for g in gold) == xx_tokens
    assert all(g.sure <= g.possible for g in gold)


@pytest.mark.shared
@pytest.mark.parametrize(("lang", "l3"), [("de", "deu"), ("fr", "fra")])
def test_gold_tokens_are_word_tokenizer_tokens(lang: str, l3: str) -> None:
    """The gold files' tokens are our `word_tokenizer`'s, so aligners can be scored directly."""
    from xlsent.tokenize import word_tokenizer

    _needs(GOLD / f"{lang}en.tsv")
    gold = read_gold(GOLD / f"{lang}en.tsv")
    tatoeba = SHARED / "tatoeba" / "v1"
    en = (tatoeba / f"tatoeba.{l3}-eng.eng").read_text(encoding="utf-8").splitlines()
    xx = (tatoeba / f"tatoeba.{l3}-eng.{l3}").read_text(encoding="utf-8").splitlines()
    en_words = word_tokenizer("en")(en[g.line] for g in gold)
    xx_words = word_tokenizer(lang)(xx[g.line] for g in gold)
    for g, ew, xw in zip(gold, en_words, xx_words, strict=True):
        assert (g.en_tokens, g.xx_tokens) == (ew, xw), g.line


# --- quality: eflomal against the diagonal baseline ------------------------------------

L10N_EXTRA = 5000


def _estimation_pairs(lang: str, l3: str, gold_lines: set[int]) -> list[SentencePair]:
    """Real pairs of the language pair beside the gold ones, for eflomal to estimate on:
    the other Tatoeba lines of the gold's file (~940, same style as the gold sentences) and
    the first `L10N_EXTRA` l10n pairs (software strings)."""
    from xlsent.tokenize import word_tokenizer

    tatoeba = SHARED / "tatoeba" / "v1"
    en = (tatoeba / f"tatoeba.{l3}-eng.eng").read_text(encoding="utf-8").splitlines()
    xx = (tatoeba / f"tatoeba.{l3}-eng.{l3}").read_text(encoding="utf-8").splitlines()
    rows = [(e, x) for i, (e, x) in enumerate(zip(en, xx, strict=True)) if i not in gold_lines]
    code = "-".join(sorted(("en", lang)))
    l10n = [SHARED / "l10n" / f"l10n.{code}.{side}.gz" for side in ("en", lang)]
    with (
        gzip.open(l10n[0], "rt", encoding="utf-8") as fe,
        gzip.open(l10n[1], "rt", encoding="utf-8") as fx,
    ):
        rows += [
            (e.rstrip("\n"), x.rstrip("\n"))
            for e, x in itertools.islice(zip(fe, fx, strict=True), L10N_EXTRA)
        ]
    en_words = word_tokenizer("en")(e for e, _ in rows)
    xx_words = word_tokenizer(lang)(x for _, x in rows)
    return [
        SentencePair(e, x, ew, xw) for (e, x), ew, xw in zip(rows, en_words, xx_words, strict=True)
    ]


@pytest.fixture(scope="module", params=[("de", "deu"), ("fr", "fra")], ids=["de-en", "fr-en"])
def eflomal_on_gold(request) -> tuple[str, list[GoldPair], list[set], list[set]]:
    """(lang, gold, forward links, reverse links) of one eflomal run on gold + extra pairs."""
    from xlsent.align.statistical import EflomalAligner

    lang, l3 = request.param
    for path in (GOLD, SHARED / "tatoeba" / "v1", SHARED / "l10n"):
        _needs(path)
    gold = read_gold(GOLD / f"{lang}en.tsv")
    pairs = [
        SentencePair(" ".join(g.en_tokens), " ".join(g.xx_tokens), g.en_tokens, g.xx_tokens)
        for g in gold
    ]
    extra = _estimation_pairs(lang, l3, {g.line for g in gold})
    fwd, rev = EflomalAligner().directional([*pairs, *extra])
    return lang, gold, fwd[: len(gold)], rev[: len(gold)]


@pytest.mark.shared
@pytest.mark.slow  # estimates eflomal on the gold pairs
@pytest.mark.parametrize(
    "method", ["intersection", "union", "grow_diag", "grow_diag_final", "grow_diag_final_and"]
)
def test_eflomal_beats_the_diagonal_baseline(eflomal_on_gold, method: str) -> None:
    from xlsent.align.symmetrize import symmetrize

    lang, gold, fwd, rev = eflomal_on_gold
    diagonal = aer(diagonal_baseline(gold), gold)
    result = aer([symmetrize(f, r, method) for f, r in zip(fwd, rev, strict=True)], gold)
    # Observed (gold + ~940 other Tatoeba lines + 5000 l10n pairs): diagonal AER 0.478
    # (de-en) and 0.398 (fr-en); eflomal AER 0.12–0.155 (de-en) and 0.105–0.146 (fr-en) for
    # every symmetrisation over ~10 runs from /dev/urandom before eflomal had a seed,
    # precision ≥ 0.85, recall ≥ 0.77; with seed 0, the aligner's default and so this test's
    # every run, 0.131–0.139 (de-en) and 0.130–0.142 (fr-en). The floor — at least 0.20
    # below the diagonal and at most 0.22 absolute — keeps a margin of ≥ 0.05 over the worst
    # run seen, so another seed passes too, yet fails an aligner that learned little
    # (eflomal on the 60 gold pairs alone scores ~0.33 on de-en).
    assert result["aer"] <= min(diagonal["aer"] - 0.20, 0.22), (lang, method, result, diagonal)
    assert result["precision"] >= diagonal["precision"] + 0.15, (lang, method, result)
    assert result["recall"] >= diagonal["recall"] + 0.15, (lang, method, result)
