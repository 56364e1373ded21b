"""The BUCC layout and evaluation (`xlsent.evaluate.bucc`): reading, fetching, and mining a
worked example (the offline mining set: tests/unit/evaluate/test_mining_set.py; the table:
tests/unit/tables/test_bucc.py)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from xlsent.evaluate import bucc, bucc_files
from xlsent.evaluate.bucc import BuccError, BuccSplit, evaluate, read_split, write_split
from xlsent.evaluate.mining import MiningSettings, best_threshold
from xlsent.evaluate.results import write_results
from xlsent.tables.bucc import bucc_lowered, bucc_notes, bucc_table, write_bucc_table

K2 = MiningSettings(k=2)
# The worked example of test_mining.py (beside this file): cos(x_i, y_j) is COSINES[i, j]
# exactly (y the unit axes, x's fourth coordinate takes up the rest of its length).

COSINES = np.array([[0.8, 0.4, 0.1], [0.3, 0.7, 0.5], [0.2, 0.6, 0.45]])
X = np.hstack([COSINES, np.sqrt(1 - (COSINES**2).sum(axis=1, keepdims=True))]).astype(np.float32)
Y = np.eye(3, 4, dtype=np.float32)


def write_files(directory: Path, lang: str, split: str, xx: str, en: str, gold: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for side, text in ((lang, xx), ("en", en), ("gold", gold)):
        (directory / f"{lang}-en.{split}.{side}").write_text(text, encoding="utf-8")


# -- the layout ----------------------------------------------------------------------------------


def test_reads_a_split_in_the_bucc_layout(tmp_path):
    write_files(
        tmp_path,
        "de",
        "sample",
        "de-000000001\tDas Haus ist klein.\nde-000000002\tGuten Morgen\twelt\n",
        "en-000000001\tGood morning\nen-000000002\tThe house is small.\n",
        "de-000000001\ten-000000002\nde-000000002\ten-000000001\n",
    )
    split = read_split(tmp_path, "de", "sample")
    assert split.xx_ids == ["de-000000001", "de-000000002"]
    assert split.xx == ["Das Haus ist klein.", "Guten Morgen\twelt"]  # only the first tab splits
    assert split.en == ["Good morning", "The house is small."]
    assert split.gold == [("de-000000001", "en-000000002"), ("de-000000002", "en-000000001")]
    # Written back, the files are the same bytes.
    out = tmp_path / "copy"
    for written in write_split(split, out):
        assert written.read_bytes() == (tmp_path / written.name).read_bytes()


def test_finds_the_files_in_the_folder_the_tarballs_unpack_to(tmp_path):
    write_files(
        tmp_path / "fr-en", "fr", "training", "fr-1\tBonjour\n", "en-1\tHello\n", "fr-1\ten-1\n"
    )
    assert (
        bucc_files.bucc_path(tmp_path, "fr", "training", "gold")
        == tmp_path / "fr-en/fr-en.training.gold"
    )
    assert read_split(tmp_path, "fr", "training").gold == [("fr-1", "en-1")]
    # Missing everywhere: the flat path, which the error names.
    with pytest.raises(BuccError, match=r"ru-en\.training\.ru not found.*evaluate\.bucc"):
        read_split(tmp_path, "ru", "training")


@pytest.mark.parametrize(
    ("xx", "gold", "message"),
    [
        ("de-1 no tab\n", "", r"de-en\.sample\.de:1 is not `id<TAB>sentence`"),
        ("de-1\ta\nde-1\tb\n", "de-1\ten-1\n", r"de-en\.sample\.de:2: id 'de-1' appears twice"),
        ("de-1\ta\n", "de-1\ten-9\n", r"de-en\.sample\.gold:1: 'en-9' is not a sentence id"),
        ("de-1\ta\n", "de-1 en-1\n", r"de-en\.sample\.gold:1 is not `xx_id<TAB>en_id`"),
        ("de-1\ta\n", "", r"de-en\.sample\.gold holds no gold pair"),
    ],
)
def test_a_bad_file_is_named_with_its_line(tmp_path, xx, gold, message):
    write_files(tmp_path, "de", "sample", xx, "en-1\tb\n", gold)
    with pytest.raises(BuccError, match=message):
        read_split(tmp_path, "de", "sample")


def test_invalid_utf8_names_file_and_line(tmp_path):
    write_files(tmp_path, "de", "sample", "", "en-1\tb\n", "de-1\ten-1\n")
    (tmp_path / "de-en.sample.de").write_bytes(b"de-1\tgut\nde-2\t\xff\n")
    with pytest.raises(BuccError, match=r"de-en\.sample\.de:2 is not valid UTF-8"):
        read_split(tmp_path, "de", "sample")


def _tarball(path: Path, lang: str, split: str, files: dict[str, str]) -> None:
    """A tarball laid out as BUCC 2018's: bucc2018/{lang}-en/{lang}-en.{split}.{side}."""
    with tarfile.open(path, "w:bz2") as tar:
        for side, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(f"bucc2018/{lang}-en/{lang}-en.{split}.{side}")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))


def test_fetch_downloads_the_tarballs_and_unpacks_their_files(tmp_path, static_server):
    base_url, served = static_server
    files = {"zh": "zh-1\t早上好\n", "en": "en-1\tGood morning\n", "gold": "zh-1\ten-1\n"}
    _tarball(served / "bucc2018-zh-en.sample-gold.tar.bz2", "zh", "sample", files)
    written = bucc.fetch(base_url, tmp_path / "bucc", ["zh"], ["sample"], tmp_path / "downloads")
    assert sorted(path.name for path in written) == [
        "zh-en.sample.en",
        "zh-en.sample.gold",
        "zh-en.sample.zh",
    ]
    assert (tmp_path / "downloads/bucc2018-zh-en.sample-gold.tar.bz2").is_file()
    assert read_split(tmp_path / "bucc", "zh", "sample").xx == ["早上好"]


def test_a_tarball_of_another_split_is_refused(tmp_path):
    archive = tmp_path / "bucc2018-de-en.sample-gold.tar.bz2"
    _tarball(
        archive, "de", "sample", {"de": "de-1\ta\n", "en": "en-1\tb\n", "gold": "de-1\ten-1\n"}
    )
    with pytest.raises(BuccError, match=r"lacks de-en\.training\.de, de-en\.training\.en"):
        bucc.extract_archive(archive, "de", "training", tmp_path / "out")


# -- evaluation ----------------------------------------------------------------------------------
# The sentences of the worked example of test_mining.py: de-1..3 are x0..x2, en-1..3 are
# y0..y2, so with k = 2 max retrieval proposes de-1–en-1 (1.391304) and de-2–en-2 (1.12).
VECTORS = {
    **{f"eins {i}": X[i] for i in range(3)},
    **{f"one {i}": Y[i] for i in range(3)},
}


def encode(texts: list[str], lang: str) -> np.ndarray:
    assert all(text.startswith("eins" if lang != "en" else "one") for text in texts)
    return np.stack([VECTORS[text] for text in texts])


def example_split(lang: str, split: str, gold: list[int], en_ids: list[str] | None = None):
    """The worked example as a split of `lang`, with the gold pairs x_i–y_i of `gold`."""
    en_ids = en_ids or [f"en-{i}" for i in range(3)]
    return BuccSplit(
        lang=lang,
        split=split,
        xx_ids=[f"{lang}-{i}" for i in range(3)],
        xx=[f"eins {i}" for i in range(3)],
        en_ids=en_ids,
        en=[f"one {i}" for i in range(3)],
        gold=[(f"{lang}-{i}", en_ids[i]) for i in gold],
    )


def test_worked_example_threshold_chosen_on_one_split_and_applied_to_the_other(tmp_path):
    # sample: gold x_i–y_i for all three. Both proposals are right; keeping both is best:
    #   threshold 1.12, P 100, R 2/3, F1 80.
    # training: the same sentences, but only x0–y0 is gold. At 1.12 both are extracted:
    #   P 1/2, R 1/1, F1 66.7; its own best threshold keeps x0–y0 alone: (1.3913 + 1.12) / 2,
    #   F1 100 (the oracle XTREME reports).
    write_split(example_split("de", "sample", [0, 1, 2]), tmp_path)
    write_split(example_split("de", "training", [0]), tmp_path)
    rows = evaluate(encode, tmp_path, ["de"], "sample", "training", K2)
    got = {(r["direction"], r["metric"]): (round(r["value"], 4), r["n"]) for r in rows}
    assert got == {
        ("dev", "precision"): (100.0, 3),
        ("dev", "recall"): (66.6667, 3),
        ("dev", "f1"): (80.0, 3),
        ("dev", "threshold"): (1.12, 3),
        ("test", "precision"): (50.0, 1),
        ("test", "recall"): (100.0, 1),
        ("test", "f1"): (66.6667, 1),
        ("test", "threshold"): (1.12, 1),
        ("test_oracle", "precision"): (100.0, 1),
        ("test_oracle", "recall"): (100.0, 1),
        ("test_oracle", "f1"): (100.0, 1),
        ("test_oracle", "threshold"): (round((0.8 / 0.575 + 1.12) / 2, 4), 1),
    }
    assert {r["lang"] for r in rows} == {"de"}


def test_a_k_above_a_splits_size_is_warned_recorded_and_footnoted(tmp_path, caplog):
    # Three sentences a side and k = 4: each is searched against all three (k = 3 used), the
    # job says so, its rows record k, and the mining table's footnote names the splits.
    write_split(example_split("de", "sample", [0, 1, 2]), tmp_path)
    write_split(example_split("de", "training", [0]), tmp_path)
    rows = evaluate(encode, tmp_path, ["de"], "sample", "training", MiningSettings(k=4))
    assert "k = 4 neighbours asked of 3 sentences" in caplog.text
    k_rows = [(r["direction"], r["value"]) for r in rows if r["metric"] == "k"]
    assert k_rows == [("dev", 3), ("test", 3)]
    path = tmp_path / "tr.parquet"
    write_results(rows, "bucc", "tr", 42, path)
    assert bucc_notes([path]) == [
        "† Fewer sentences than the margin's k on a side, so every sentence was a neighbour: "
        "tr de dev k = 3, tr de test k = 3. Lower evaluate.bucc.mining.k or mine larger sets."
    ]
    table = bucc_table([path])
    assert "de_f1" in table.columns  # the recorded k leaves the table's numbers as they were
    # ... and the Markdown marks the language and the averages over it, as the note says.
    write_bucc_table(
        table, tmp_path / "bucc.csv", notes=bucc_notes([path]), lowered=bucc_lowered([path])
    )
    markdown = (tmp_path / "bucc.md").read_text()
    assert "| run | seeds | de_p† | de_r† | de_f1† | de_f1_oracle† | avg_f1† |" in markdown
    assert markdown.rstrip().endswith("Lower evaluate.bucc.mining.k or mine larger sets.")
    # At k = 2 nothing is lowered: no row, no footnote.
    rows = evaluate(encode, tmp_path, ["de"], "sample", "training", K2)
    write_results(rows, "bucc", "tr", 42, path)
    assert bucc_notes([path]) == []


def test_the_pivots_threshold_is_applied_to_every_language(tmp_path):
    # fr's own sample split has only x0–y0 gold: its threshold keeps x0–y0 alone (1.2557), so
    # its training split (all three gold) gets P 100, R 1/3. de's threshold (1.12) keeps both
    # proposals there: P 100, R 2/3, F1 80, the dual-pivot row.
    for lang, sample_gold in (("de", [0, 1, 2]), ("fr", [0])):
        write_split(example_split(lang, "sample", sample_gold), tmp_path)
        write_split(example_split(lang, "training", [0, 1, 2]), tmp_path)
    rows = evaluate(encode, tmp_path, ["de", "fr"], "sample", "training", K2, pivot="de")
    f1 = {(r["lang"], r["direction"]): r["value"] for r in rows if r["metric"] == "f1"}
    assert f1[("fr", "test")] == pytest.approx(50.0)
    assert f1[("fr", "test_pivot")] == pytest.approx(80.0)
    assert f1[("de", "test_pivot")] == f1[("de", "test")] == pytest.approx(80.0)
    with pytest.raises(ValueError, match="pivot 'ru'"):
        evaluate(encode, tmp_path, ["de"], "sample", "training", K2, pivot="ru")


def test_a_sentence_with_several_ids_is_left_out_as_laser_does(tmp_path):
    # en-2 repeats en-0's text "one 0": that text maps to no single id, so the candidate
    # de-0–"one 0" is dropped, and its gold pair de-0–en-0 counts as missed. The sentences
    # are encoded once per distinct text.
    split = example_split("de", "sample", [0, 1])
    split = BuccSplit(**{**split.__dict__, "en": ["one 0", "one 1", "one 0"]})
    calls = []

    def counting(texts, lang):
        calls.append(len(texts))
        return encode(texts, lang)

    mined = bucc.mine_split(counting, split, K2)
    assert calls == [3, 2]
    assert mined.correct.tolist() == [True]  # only de-1–en-1 (1.12) is left
    assert mined.gold == 2


def test_a_repeated_sentence_is_mined_on_every_line_with_keep_as_dap_does():
    # de-2 repeats de-0's text "eins 0" (x0); en-0..2 are y0..y2; gold de-0–en-0 and
    # de-1–en-1; k = 2. Cosines of the lines (x0, x1, x0) with (y0, y1, y2):
    #   de-0 .8 .4 .1 | de-1 .3 .7 .5 | de-2 .8 .4 .1
    # keep (DAP's eval_bucc.py, mSimCSE's): neighbourhood means, foreign .6, .6, .6; English
    # y0 (.8 + .8) / 2 = .8 (x0 twice among its two nearest), y1 (.7 + .4) / 2 = .55, y2 .3.
    # de-1–en-1: .7 / ((.6 + .55) / 2) = 1.217391, de-0–en-0: .8 / ((.6 + .8) / 2) = 1.142857
    # (de-2–en-0 ties with it and comes second: en-0 is taken); de-1–en-2 (1.111111) loses
    # de-1 to en-1. Both gold pairs are found: F1 100.
    # drop (LASER's, XTREME's): x0 once among the neighbours (y0's mean .55, so x0–y0 scores
    # 1.391304), then left out as "eins 0" has two ids: de-1–en-1 alone, F1 2·1 / (1 + 2).
    split = example_split("de", "sample", [0, 1])
    split = BuccSplit(**{**split.__dict__, "xx": ["eins 0", "eins 1", "eins 0"]})
    kept = bucc.mine_split(encode, split, MiningSettings(k=2, repeated="keep"))
    assert kept.scores.round(6).tolist() == [1.217391, 1.142857]
    assert kept.correct.tolist() == [True, True]
    dropped = bucc.mine_split(encode, split, K2)
    assert dropped.scores.round(6).tolist() == [1.217391]
    assert dropped.correct.tolist() == [True]
    assert kept.gold == dropped.gold == 2
    f1 = {
        name: best_threshold(mined.scores, mined.correct, mined.gold).f1
        for name, mined in (("keep", kept), ("drop", dropped))
    }
    assert f1 == {"keep": pytest.approx(100.0), "drop": pytest.approx(200 / 3)}


def test_every_split_is_read_before_anything_is_encoded(tmp_path):
    write_split(example_split("de", "sample", [0, 1, 2]), tmp_path)

    def refuse(texts, lang):
        raise AssertionError("encoded before every file was read")

    with pytest.raises(BuccError, match=r"de-en\.training\.de not found"):
        evaluate(refuse, tmp_path, ["de"], "sample", "training", K2)
