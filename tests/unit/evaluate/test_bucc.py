"""The BUCC layout (xlsent.evaluate.bucc), the offline mining set built from held-out pairs
(xlsent.evaluate.mining_set, and the sample stage's mining split), and the mining table."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from support import SHARED

from xlsent.cli import main
from xlsent.corpus.clean_base import CORPUS_SCHEMA
from xlsent.corpus.sample import SampleConfig, sample
from xlsent.evaluate import bucc, mining_set
from xlsent.evaluate.bucc import BuccError, BuccSplit, evaluate, read_split, write_split
from xlsent.evaluate.mining import MiningSettings, best_threshold
from xlsent.evaluate.results import load_results, write_results
from xlsent.io import parquet_writer
from xlsent.tables.bucc import bucc_lowered, bucc_notes, bucc_table, write_bucc_table

L10N = SHARED / "l10n"
K2 = MiningSettings(k=2)
# The worked example of test_mining.py: cos(x_i, y_j) is COSINES[i, j] exactly (y the unit
# axes, x's fourth coordinate takes up the rest of its length).
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
        bucc.bucc_path(tmp_path, "fr", "training", "gold") == tmp_path / "fr-en/fr-en.training.gold"
    )
    assert read_split(tmp_path, "fr", "training").gold == [("fr-1", "en-1")]
    # Missing everywhere: the flat path, which the error names.
    with pytest.raises(BuccError, match=r"ru-en\.training\.ru not found.*evaluate\.bucc"):
        read_split(tmp_path, "ru", "training")


def test_the_rules_pass_the_directory_above_the_folders_the_tarballs_unpack_to():
    """`--dir` of the BUCC jobs from their files: flat (the mining set), or in `{xx}-en/`."""
    assert bucc.files_directory(["results/data/mining/de-en.dev.de"]) == "results/data/mining"
    unpacked = [str(p) for p in bucc.split_files("results/data/bucc2018", "de", "sample")]
    assert bucc.files_directory(unpacked) == "results/data/bucc2018"
    assert bucc.files_directory(["/data/bucc/de-en/de-en.sample.gold"]) == "/data/bucc"


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


# -- the offline mining set ----------------------------------------------------------------------
HELDOUT = [(f"sentence {i}", f"Satz {i}") for i in range(40)]


def _texts(split: BuccSplit) -> tuple[dict[str, str], dict[str, str]]:
    return dict(zip(split.xx_ids, split.xx, strict=True)), dict(
        zip(split.en_ids, split.en, strict=True)
    )


def _settings(distractors: float, threshold_share: float, seed: int):
    return mining_set.MiningSetSettings(distractors, threshold_share, seed)


def test_mining_set_plants_gold_pairs_among_distractors():
    # 40 pairs: 20 per split; 10 of each split lose a side (5 their English, 5 their German).
    splits, stats = mining_set.build(HELDOUT, "de", _settings(0.5, 0.5, 0))
    assert list(splits) == ["dev", "test"]
    translation = {xx: en for en, xx in HELDOUT}
    seen: set[str] = set()
    for name, split in splits.items():
        assert stats["splits"][name] == {
            "gold": 10,
            "xx_only": 5,
            "en_only": 5,
            "xx_sentences": 15,
            "en_sentences": 15,
        }
        xx, en = _texts(split)
        for xx_id, en_id in split.gold:  # every gold pair is a held-out pair
            assert translation[xx[xx_id]] == en[en_id]
        gold_xx = {xx_id for xx_id, _ in split.gold}
        gold_en = {en_id for _, en_id in split.gold}
        # A distractor's translation is on neither side of its split.
        for xx_id, text in xx.items():
            if xx_id not in gold_xx:
                assert translation[text] not in en.values()
        for en_id, text in en.items():
            if en_id not in gold_en:
                assert text not in {translation[t] for t in xx.values()}
        assert split.xx_ids[0] == "de-000000001" and split.en_ids[-1] == "en-000000015"
        assert not seen & set(xx.values())  # the two splits share no pair
        seen |= set(xx.values())
    assert len(seen) == 30
    # The same pairs and seed give the same set; another seed another one.
    assert mining_set.build(HELDOUT, "de", _settings(0.5, 0.5, 0))[0] == splits
    assert mining_set.build(HELDOUT, "de", _settings(0.5, 0.5, 1))[0] != splits


@pytest.mark.parametrize("pairs", [7, 8, 10, 11, 40])
@pytest.mark.parametrize(("distractors", "share"), [(0.5, 0.5), (0.2, 0.5), (0.3, 0.3)])
def test_the_config_checks_bound_is_the_smallest_side_build_makes(pairs, distractors, share):
    """`fewest_sentences` (the config check's bound on k) against `build` on real pairs."""
    settings = _settings(distractors, share, 0)
    _, stats = mining_set.build(HELDOUT[:pairs], "de", settings)
    sides = [n for split in stats["splits"].values() for key, n in split.items() if "sent" in key]
    assert mining_set.fewest_sentences(pairs, settings) == min(sides)


def test_ambiguous_pairs_are_dropped_before_the_split():
    pairs = [("Save", "Speichern"), ("save ", "Sichern"), ("Open", "Open"), ("Close", "speichern")]
    assert mining_set.unambiguous(pairs) == [("Save", "Speichern")]
    _, stats = mining_set.build(HELDOUT + pairs, "de", _settings(0.5, 0.5, 0))
    assert (stats["pairs"], stats["ambiguous"]) == (44, 3)


def test_too_few_pairs_for_a_gold_pair_is_an_error():
    # 4 pairs, 2 per split, 90 % distractors: round(1.8) = 2 of each split lose a side.
    message = r"without a gold pair.*corpus\.mining_pairs"
    with pytest.raises(mining_set.MiningSetError, match=message):
        mining_set.build(HELDOUT[:4], "kk", _settings(0.9, 0.5, 0))


def test_mining_set_command_from_a_tatoeba_folder(tmp_path):
    tatoeba = tmp_path / "tatoeba"
    tatoeba.mkdir()
    (tatoeba / "tatoeba.kaz-eng.kaz").write_text("".join(f"{xx}\n" for _, xx in HELDOUT))
    (tatoeba / "tatoeba.kaz-eng.eng").write_text("".join(f"{en}\n" for en, _ in HELDOUT))
    out = tmp_path / "mining"
    main(
        [
            *("mining-set", "--from", "tatoeba", "--pairs", f"kk={tatoeba}"),
            *("--tatoeba-text", "laser"),
            "--settings",
            json.dumps({"distractors": 0.25, "threshold_share": 0.25, "seed": 0}),
            *("--out-dir", str(out), "--stats", str(tmp_path / "stats.json")),
        ]
    )
    dev, test = read_split(out, "kk", "dev"), read_split(out, "kk", "test")
    # 10 pairs for dev (0.25 of 40), 30 for test; a quarter of each loses a side.
    assert (len(dev.gold), len(test.gold)) == (8, 22)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["kk"]["splits"]["test"]["gold"] == 22


# -- the sample stage's mining split -------------------------------------------------------------


def _clean(path: Path, n: int) -> None:
    rows = pl.DataFrame(
        {
            "id": list(range(n)),
            "en": [f"english {i}" for i in range(n)],
            "xx": [f"foreign {i}" for i in range(n)],
            "source": ["l10n"] * n,
        }
    )
    with parquet_writer(path, CORPUS_SCHEMA) as writer:
        writer.write_table(rows.to_arrow().cast(CORPUS_SCHEMA))


def test_no_mining_pairs_leave_train_and_dev_byte_for_byte_the_same(tmp_path):
    clean = tmp_path / "clean.parquet"
    _clean(clean, 1000)
    cfg = SampleConfig(max_pairs=600, dev_pairs=50, mining_pairs=0)
    before = sample(clean, "kk", tmp_path / "a.train", tmp_path / "a.dev", cfg)
    after = sample(clean, "kk", tmp_path / "b.train", tmp_path / "b.dev", cfg, tmp_path / "b.mine")
    for split in ("train", "dev"):
        assert (tmp_path / f"a.{split}").read_bytes() == (tmp_path / f"b.{split}").read_bytes()
    assert pl.read_parquet(tmp_path / "b.mine").height == 0
    assert after == before


def test_mining_pairs_are_held_out_before_train_and_dev(tmp_path):
    clean = tmp_path / "clean.parquet"
    _clean(clean, 1000)
    cfg = SampleConfig(max_pairs=1_000_000, dev_pairs=50, dev_fraction=0.1, mining_pairs=80)
    paths = {split: tmp_path / f"{split}.parquet" for split in ("train", "dev", "mining")}
    stats = sample(clean, "kk", paths["train"], paths["dev"], cfg, paths["mining"])
    ids = {split: set(pl.read_parquet(path)["id"]) for split, path in paths.items()}
    # 80 held out; dev: min(10% of the 920 left, 50) = 50; train: the other 870.
    assert {split: len(found) for split, found in ids.items()} == {
        "train": 870,
        "dev": 50,
        "mining": 80,
    }
    assert not ids["mining"] & (ids["train"] | ids["dev"])
    assert (stats["train"], stats["dev"], stats["mining"]) == (870, 50, 80)
    assert stats["sources"]["l10n"] == {
        "available": 1000,
        "eligible": 1000,
        "train": 870,
        "dev": 50,
        "mining": 80,
    }
    # At most dev_fraction of the pool: a small language keeps its training pairs.
    small = tmp_path / "small.parquet"
    _clean(small, 100)
    small_cfg = SampleConfig(dev_pairs=50, min_train_pairs=10, min_dev_pairs=5, mining_pairs=80)
    few = sample(small, "kk", tmp_path / "s.tr", tmp_path / "s.dev", small_cfg, tmp_path / "s.m")
    assert few["mining"] == 10


@pytest.mark.shared
@pytest.mark.skipif(not L10N.is_dir(), reason=f"the l10n corpus is not at {L10N}")
def test_real_held_out_pairs_mined_with_character_ngrams(tmp_path):
    """600 real en-de interface strings as a mining set, mined with a character n-gram tf-idf
    encoder (names and cognates match across the two languages): far above chance."""
    with gzip.open(L10N / "l10n.de-en.de.gz", "rt") as f:
        de = f.read().splitlines()[:600]
    with gzip.open(L10N / "l10n.de-en.en.gz", "rt") as f:
        en = f.read().splitlines()[:600]
    splits, stats = mining_set.build(list(zip(en, de, strict=True)), "de", _settings(0.5, 0.5, 0))
    mining_set.write(splits, tmp_path)
    hashing = HashingVectorizer(analyzer="char_wb", ngram_range=(2, 4), n_features=4096)
    tfidf = TfidfTransformer().fit(hashing.transform(de + en))

    def ngrams(texts, lang):
        return tfidf.transform(hashing.transform(texts)).toarray().astype(np.float32)

    rows = evaluate(ngrams, tmp_path, ["de"], "dev", "test", MiningSettings())
    f1 = {r["direction"]: r["value"] for r in rows if r["metric"] == "f1"}
    print(stats["splits"], f1)
    # Chance: extracting n of ~220 candidates at random, about 1 in 225 is right.
    assert 20 < f1["test"] <= f1["test_oracle"] < 100


# -- the table -----------------------------------------------------------------------------------


def test_mining_table_averages_seeds_and_languages(tmp_path):
    def results(run, seed, f1s):
        rows = []
        for lang, (p, r, f1, oracle) in f1s.items():
            for d, m, v in (
                ("test", "precision", p),
                ("test", "recall", r),
                ("test", "f1", f1),
                ("test", "threshold", 1.1),
                ("test_oracle", "f1", oracle),
                ("test_pivot", "f1", f1 - 1),
                ("dev", "f1", 99.0),
            ):
                rows.append({"lang": lang, "direction": d, "metric": m, "value": v, "n": 10})
        path = tmp_path / f"{run}.{seed}.parquet"
        write_results(rows, "bucc", run, seed, path)
        return path

    frames = [
        results("tr", 42, {"ru": (80, 60, 70, 72), "de": (90, 70, 80, 82)}),
        results("tr", 0, {"ru": (70, 50, 60, 64), "de": (90, 90, 90, 90)}),
        results("dap", 42, {"de": (95, 85, 90, 91)}),
    ]
    table = bucc_table(frames)
    assert table.columns == [
        "run",
        "seeds",
        "de_p",
        "de_r",
        "de_f1",
        "de_f1_oracle",
        "de_f1_pivot",
        "ru_p",
        "ru_r",
        "ru_f1",
        "ru_f1_oracle",
        "ru_f1_pivot",
        "avg_f1",
        "avg_f1_oracle",
        "avg_f1_pivot",
        *("train_device", "train_precision", "eval_device", "eval_precision"),
    ]
    tr = table.row(0, named=True)
    # tr: de F1 (80 + 90) / 2 = 85, ru (70 + 60) / 2 = 65, average 75.
    assert (tr["run"], tr["seeds"], tr["de_f1"], tr["ru_f1"], tr["avg_f1"]) == ("tr", 2, 85, 65, 75)
    assert (tr["ru_p"], tr["ru_r"], tr["avg_f1_oracle"], tr["avg_f1_pivot"]) == (75, 55, 77, 74)
    dap = table.row(1, named=True)
    assert (dap["de_f1"], dap["ru_f1"], dap["avg_f1"]) == (90, None, None)  # no partial average
    write_bucc_table(table, tmp_path / "bucc.csv")
    assert pl.read_csv(tmp_path / "bucc.csv").equals(table)
    assert "| tr | 2 | 90.0 | 80.0 | 85.0 |" in (tmp_path / "bucc.md").read_text()
    with pytest.raises(ValueError, match="task 'bucc'"):
        bucc_table([load_results(frames).with_columns(task=pl.lit("tatoeba"))])
