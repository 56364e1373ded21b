"""The retrieval table (`xlsent.tables.retrieval`): encoders and word vectors side by side."""

from __future__ import annotations

import polars as pl
import pytest

from xlsent.tables.retrieval import retrieval_table, write_retrieval_table


def results(run: str, seed: int, values: dict[str, tuple[float, float]], n: int = 50):
    return pl.DataFrame(
        [
            {
                "task": "retrieval",
                "run": run,
                "seed": seed,
                "lang": lang,
                "direction": direction,
                "metric": "accuracy",
                "value": value,
                "n": n,
            }
            for lang, (xx2en, en2xx) in values.items()
            for direction, value in (
                ("xx2en", xx2en),
                ("en2xx", en2xx),
                ("mean", (xx2en + en2xx) / 2),
            )
        ]
    )


def test_the_retrieval_table_sets_encoders_and_word_vectors_side_by_side(tmp_path):
    frames = [
        # An encoder run, two seeds: kk xx→en (60 + 80) / 2 = 70, en→xx (50 + 70) / 2 = 60.
        results("tr", 42, {"kk": (60.0, 50.0), "de": (90.0, 80.0)}),
        results("tr", 0, {"kk": (80.0, 70.0), "de": (70.0, 60.0)}),
        # A word-vector run without kk's result.
        results("bisent2vec-uni", 42, {"de": (40.0, 20.0)}),
    ]
    groups = {"pair": ("de", "kk")}
    table, pairs = retrieval_table(frames, groups, {"kk": "train 32 < 500"})
    assert table.columns == [
        "run",
        "seeds",
        "pair",
        "all",
        "pair_xx2en",
        "all_xx2en",
        "pair_en2xx",
        "all_en2xx",
        *("de", "de_xx2en", "de_en2xx", "kk", "kk_xx2en", "kk_en2xx"),
        "missing",
        "scarce",
        *("train_device", "train_precision", "eval_device", "eval_precision"),
    ]
    tr, b2v = table.to_dicts()
    # tr: de (80 + 70) / 2 = 75 mean, kk (70 + 60) / 2 = 65; the group and all: 70.
    assert (tr["run"], tr["seeds"], tr["de"], tr["kk"]) == ("tr", 2, 75.0, 65.0)
    assert (tr["pair"], tr["all"], tr["kk_xx2en"], tr["de_en2xx"]) == (70.0, 70.0, 70.0, 70.0)
    assert (tr["missing"], tr["scarce"]) == (None, "kk")
    # bisent2vec-uni: no kk, so its group is blank; `all` is its one language.
    assert (b2v["de"], b2v["pair"], b2v["all"], b2v["kk"]) == (30.0, None, 30.0, None)
    assert (b2v["missing"], b2v["scarce"]) == ("kk", None)
    assert list(pairs.items()) == [("de", 50), ("kk", 50)]  # language-table order

    write_retrieval_table(table, pairs, tmp_path / "retrieval.csv", groups, scarce={"kk": "x"})
    assert pl.read_csv(tmp_path / "retrieval.csv").columns == table.columns
    md = (tmp_path / "retrieval.md").read_text()
    assert "| run | seeds | pair* | all* | all_xx2en* | all_en2xx* | de | kk* |" in md
    assert "| tr | 2 | 70.0 | 70.0 |" in md and "| bisent2vec-uni | 1 | – | 30.0 |" in md
    assert "a query among the other side's n): de 50, kk 50." in md
    assert "Run `bisent2vec-uni` has no result for kk." in md


def test_the_retrieval_table_refuses_other_tasks():
    frame = results("tr", 42, {"de": (1.0, 1.0)}).with_columns(task=pl.lit("tatoeba"))
    with pytest.raises(ValueError, match="task 'retrieval'"):
        retrieval_table([frame], {})
