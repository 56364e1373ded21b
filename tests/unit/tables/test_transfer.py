"""The dual-pivot transfer table: the pivot apart from the other languages, by hand."""

from __future__ import annotations

import polars as pl
import pytest

from xlsent.languages import members
from xlsent.tables.transfer import transfer_table, write_transfer_table


def _rows(run: str, seed: int, scores: dict[str, tuple[float, float]]) -> pl.DataFrame:
    """Tatoeba rows of `run`: per language its (xx2en, en2xx) accuracy and their mean."""
    rows = []
    for lang, (xx2en, en2xx) in scores.items():
        for direction, value in (("xx2en", xx2en), ("en2xx", en2xx), ("mean", (xx2en + en2xx) / 2)):
            rows.append(
                dict(task="tatoeba", run=run, seed=seed, lang=lang, direction=direction,
                     metric="accuracy", value=value, n=100)
            )  # fmt: skip
    return pl.DataFrame(rows)


def test_transfer_table_by_hand(tmp_path):
    # sup (pivot de), two seeds: de 80/60 and 90/70 → mean 75; kk 20 and 30 → 25;
    # te 10 and 20 → 15; fr only evaluated for the frozen-layer run.
    sup = [
        _rows("sup", 42, {"de": (80, 60), "kk": (20, 20), "te": (10, 10)}),
        _rows("sup", 0, {"de": (90, 70), "kk": (30, 30), "te": (20, 20)}),
    ]
    layer = _rows("layer", 42, {"de": (50, 50), "kk": (10, 0), "te": (4, 6), "fr": (40, 40)})
    pivots = {"layer": "de", "sup": "de"}
    table = transfer_table([*sup, layer], pivots, ["de", "kk", "te"], members(["low4"]))
    assert table["run"].to_list() == ["layer", "sup"]  # the order asked for
    assert table.row(1, named=True) == {
        "run": "sup",
        "seeds": 2,
        "pivot": "de",
        "pivot_acc": 75.0,
        "trained": 20.0,  # (25 + 15) / 2: kk and te, the pivot left out
        "low4": None,  # low4 is kk te ka jv: ka and jv were not evaluated
        # Data frames record no devices (files do: tests/unit/tables/test_devices.py).
        **dict.fromkeys(("train_device", "train_precision", "eval_device", "eval_precision")),
    }
    assert table.row(0, named=True)["trained"] == pytest.approx((5 + 5) / 2)
    write_transfer_table(table, tmp_path / "transfer.csv")
    md = (tmp_path / "transfer.md").read_text()
    assert "| sup | 2 | de | 75.0 | 20.0 | – |" in md


def test_transfer_table_names_runs_without_results():
    with pytest.raises(ValueError, match=r"no Tatoeba results for the transfer runs \['unsup'\]"):
        transfer_table([_rows("sup", 42, {"de": (1, 1)})], {"unsup": "de"}, ["de"], {})
