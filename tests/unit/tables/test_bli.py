"""The word translation table (`xlsent.tables.bli`): one row per run, its seeds averaged."""

import polars as pl
import pytest
from support import tatoeba_results

from xlsent.tables.bli import bli_table, write_bli_table


def bli_results(run: str, seed: int, values: dict[tuple[str, str], float], n: int = 50):
    """One seed's BLI file: every P@k of both retrievals per (language, direction), the value
    plus k (so that each metric differs)."""
    rows = [
        ("bli", run, seed, lang, direction, f"p@{k}_{method}", value + k, n)
        for (lang, direction), value in values.items()
        for method in ("nn", "csls")
        for k in (1, 5, 10)
    ]
    return pl.DataFrame(rows, schema=list(tatoeba_results("x", 0, {}).schema.items()), orient="row")


def test_bli_table_one_row_per_run_seeds_averaged(tmp_path):
    frames = [
        bli_results("b2v", 42, {("de", "en2xx"): 20, ("de", "xx2en"): 30, ("kk", "en2xx"): 5}),
        bli_results("b2v", 0, {("de", "en2xx"): 30, ("de", "xx2en"): 40, ("kk", "en2xx"): 7}),
        bli_results("cbow", 42, {("de", "en2xx"): 10, ("de", "xx2en"): 11}, n=48),
    ]
    table, queries = bli_table(frames)
    assert table["run"].to_list() == ["b2v", "cbow"]
    assert table["seeds"].to_list() == [2, 1]
    # Language-table order (de before kk), directions en2xx then xx2en, nn then csls.
    assert table.columns[2:8] == [
        "de_en2xx_p@1_nn", "de_en2xx_p@5_nn", "de_en2xx_p@10_nn",
        "de_en2xx_p@1_csls", "de_en2xx_p@5_csls", "de_en2xx_p@10_csls",
    ]  # fmt: skip
    assert next(c for c in table.columns if c.startswith("kk")) == "kk_en2xx_p@1_nn"
    assert not any(c.startswith("kk_xx2en") for c in table.columns)  # never evaluated
    rows = {row["run"]: row for row in table.to_dicts()}
    assert rows["b2v"]["de_en2xx_p@1_nn"] == pytest.approx(26)  # (21 + 31) / 2
    assert rows["b2v"]["de_xx2en_p@10_csls"] == pytest.approx(45)
    assert rows["cbow"]["kk_en2xx_p@1_nn"] is None  # cbow has no kk: blank, not zero
    assert queries[("cbow", "de", "xx2en")] == 48
    # The test words kept after the vocabulary filter follow each language and direction.
    assert table.columns[8] == "de_en2xx_n"
    assert (rows["b2v"]["de_en2xx_n"], rows["cbow"]["de_xx2en_n"]) == (50, 48)
    assert rows["cbow"]["kk_en2xx_n"] is None

    write_bli_table(table, queries, tmp_path / "bli.csv")
    assert pl.read_csv(tmp_path / "bli.csv").equals(table)
    md = (tmp_path / "bli.md").read_text()
    assert "| b2v | 2 | 26.0 | 30.0 | 35.0 |" in md
    assert "cbow de en2xx 48" in md


def test_bli_table_refuses_partial_seeds_and_other_tasks():
    partial = [
        bli_results("b2v", 42, {("de", "en2xx"): 20, ("kk", "en2xx"): 5}),
        bli_results("b2v", 0, {("de", "en2xx"): 30}),
    ]
    with pytest.raises(ValueError, match="only some of its 2 seeds"):
        bli_table(partial)
    with pytest.raises(ValueError, match="passed twice"):
        bli_table([bli_results("b2v", 42, {("de", "en2xx"): 20})] * 2)
    with pytest.raises(ValueError, match="expected BLI results"):
        bli_table([tatoeba_results("A", 0, {"de": (1, 2)})])
