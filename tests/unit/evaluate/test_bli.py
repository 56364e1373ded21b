"""Word translation (BLI, `xlsent.evaluate.bli`): the MUSE metrics on a worked example, and an
evaluation whose test words are in no vocabulary (the dictionaries:
tests/unit/test_dictionaries.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from xlsent.dictionaries import (
    DictionaryError,
    write_muse,
)
from xlsent.evaluate.bli import evaluate, gold_translations
from xlsent.search import retrieve


def at(degrees: float, length: float = 1.0) -> list[float]:
    return [length * math.cos(math.radians(degrees)), length * math.sin(math.radians(degrees))]


# Unit vectors at angles, so cosine = cos(angle difference); lengths vary to show they do not
# count. Sources s1 0°, s2 40°, s3 20°; targets t1 20° (a hub: near every source), t2 -10°,
# t3 65°. Gold: s1 -> t2, s2 -> t3, s3 -> t1.
SRC_WORDS = ["s1", "s2", "s3"]
SRC = np.array([at(0, 2.0), at(40, 0.5), at(20, 3.0)])
TGT_WORDS = ["t1", "t2", "t3"]
TGT = np.array([at(20, 1.5), at(-10), at(65, 4.0)])
GOLD = [("s1", "t2"), ("s2", "t3"), ("s3", "t1")]
C = {d: math.cos(math.radians(d)) for d in (0, 10, 20, 25, 30, 45, 50, 65)}


def test_worked_example_nearest_neighbour() -> None:
    # s1: cos to t1, t2, t3 = cos 20, cos 10, cos 65 -> t2 (right).
    # s2: cos 20 = 0.940 (t1) > cos 25 = 0.906 (t3) > cos 50 (t2) -> t1 (wrong), t3 second.
    # s3: t1 at the same angle -> right. P@1 = 2/3, P@2 = 3/3.
    top = retrieve(SRC, SRC, TGT, "nn", k=3)
    assert top.tolist() == [[1, 0, 2], [0, 2, 1], [0, 1, 2]]
    rows = evaluate(SRC_WORDS, SRC, TGT_WORDS, TGT, GOLD, ks=(1, 2), methods=("nn",))
    assert [(r["metric"], r["n"]) for r in rows] == [("p@1", 3), ("p@2", 3)]
    assert [r["value"] for r in rows] == pytest.approx([200 / 3, 100.0])


def test_worked_example_csls() -> None:
    # CSLS with k = 1: r_T(x) = best cosine of source x to any target, r_S(y) = best cosine
    # of target y to any source.
    #   r_T: s1 cos 10, s2 cos 20, s3 cos 0 = 1.
    #   r_S: t1 cos 0 = 1 (s3), t2 cos 10 (s1), t3 cos 25 (s2).
    # score(x, y) = 2 cos(x, y) - r_T(x) - r_S(y). For s2:
    #   t1: 2 cos 20 - cos 20 - 1 = -0.0603
    #   t3: 2 cos 25 - cos 20 - cos 25 = -0.0334   (best: the hub t1 is penalised)
    #   t2: 2 cos 50 - cos 20 - cos 10 = -0.6389
    # s1: t2 scores 2 cos 10 - cos 10 - cos 10 = 0, t1 2 cos 20 - cos 10 - 1 = -0.1054.
    # s3: t1 scores 2 - 1 - 1 = 0, t2 2 cos 30 - 1 - cos 10 = -0.2527,
    #     t3 2 cos 45 - 1 - cos 25 = -0.4921.  P@1 = 3/3.
    s2_scores = {
        "t1": 2 * C[20] - C[20] - 1,
        "t3": 2 * C[25] - C[20] - C[25],
        "t2": 2 * C[50] - C[20] - C[10],
    }
    assert s2_scores["t3"] == pytest.approx(-0.0334, abs=1e-4)
    assert s2_scores["t1"] == pytest.approx(-0.0603, abs=1e-4)
    top = retrieve(SRC, SRC, TGT, "csls", k=3, csls_k=1)
    assert top.tolist() == [[1, 0, 2], [2, 0, 1], [0, 1, 2]]
    rows = evaluate(SRC_WORDS, SRC, TGT_WORDS, TGT, GOLD, ks=(1,), csls_k=1)
    assert [(r["method"], r["value"]) for r in rows] == [
        ("nn", pytest.approx(200 / 3)),
        ("csls", 100.0),
    ]


def test_csls_default_k_is_clamped_to_the_vocabulary(caplog) -> None:
    # k = 10 with 3 words on a side: r averages all 3, and the retrieval still works; the log
    # says that P@k from k = 3 on is trivially 100.
    rows = evaluate(SRC_WORDS, SRC, TGT_WORDS, TGT, GOLD)
    assert "the target vocabulary has 3 words: P@k for k of 3 or more" in caplog.text
    assert {(r["method"], r["k"]) for r in rows} == {
        (m, k) for m in ("nn", "csls") for k in (1, 5, 10)
    }
    assert all(r["value"] == 100.0 for r in rows if r["k"] >= 3)


def test_queries_are_unique_in_vocabulary_source_words() -> None:
    pairs = [
        ("s1", "t2"),
        ("s1", "t1"),  # a second gold translation of s1
        ("s2", "zzz"),  # target not in the vocabulary: dropped
        ("s2", "t3"),
        ("oov", "t1"),  # source not in the vocabulary: dropped
    ]
    gold, coverage = gold_translations(SRC_WORDS, TGT_WORDS, pairs)
    assert gold == {"s1": {1, 0}, "s2": {2}}
    assert coverage == {"pairs": 5, "source_words": 3, "pairs_in_vocab": 3, "queries": 2}
    rows = evaluate(SRC_WORDS, SRC, TGT_WORDS, TGT, pairs, ks=(1,), methods=("nn",))
    # s1's nearest is t2, a gold translation; s2's is t1, not one: 1 of 2 queries.
    assert rows == [{"method": "nn", "k": 1, "metric": "p@1", "value": 50.0, "n": 2}]


def test_no_pair_in_vocabulary_is_an_error() -> None:
    with pytest.raises(DictionaryError, match="none of the 1 dictionary pairs"):
        evaluate(SRC_WORDS, SRC, TGT_WORDS, TGT, [("hund", "dog")])


def test_eval_bli_without_a_test_word_in_the_vocabularies_scores_nothing(tmp_path: Path) -> None:
    # A language of a few dozen pairs (l10n's sw: 36) keeps no test word: the job records
    # 0 test words and no score instead of failing the table of every other language.
    import polars as pl

    from xlsent.cli import main
    from xlsent.tables.bli import bli_table

    model = tmp_path / "model"
    model.mkdir()
    (model / "vectors.en.vec").write_text("2 2\nthe 1 0\nof 0 1\n")
    (model / "vectors.sw.vec").write_text("2 2\nya 1 0\nna 0 1\n")
    (model / "stats.json").write_text(json.dumps({"langs": ["en", "sw"]}))
    write_muse([("dog", "mbwa"), ("eye", "jicho")], tmp_path / "sw.en2xx.test.txt")
    out, stats = tmp_path / "sw.en2xx.parquet", tmp_path / "sw.en2xx.json"
    main(
        [
            *("eval-bli", "--model", str(model), "--lang", "sw", "--direction", "en2xx"),
            *("--dictionary", str(tmp_path / "sw.en2xx.test.txt"), "--run", "m", "--seed", "0"),
            *("--out", str(out), "--stats", str(stats)),
        ]
    )
    rows = pl.read_parquet(out)
    assert rows.height == 6 and rows["value"].is_null().all() and set(rows["n"]) == {0}
    assert json.loads(stats.read_text())["test_words"] == 0
    table, _ = bli_table([out])
    assert table["sw_en2xx_n"].to_list() == [0] and table["sw_en2xx_p@1_csls"].to_list() == [None]
