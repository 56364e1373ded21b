"""The embedded demo source, on the real CLDR and Django data of the installed demo extra."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xlsent import languages
from xlsent.corpus.bitext import CorpusError
from xlsent.corpus.readers import demo

pytest.importorskip("babel", reason="the demo source needs the 'demo' extra")

ALL = languages.GROUPS["xtreme36"]


@pytest.fixture(scope="module")
def pairs() -> dict[str, list[tuple[str, str, str]]]:
    return {lang: demo.demo_pairs(lang) for lang in ALL}


def test_german_has_cldr_names_and_django_sentences(pairs):
    german = pairs["de"]
    assert ("cldr", "Germany", "Deutschland") in german  # territory
    assert ("cldr", "January", "Januar") in german  # stand-alone wide month
    assert ("cldr", "Central European Summer Time", "Mitteleuropäische Sommerzeit") in german
    assert (
        "django",
        "Enter only digits separated by commas.",
        "Bitte nur durch Komma getrennte Ziffern eingeben.",
    ) in german
    sentences = [en for corpus, en, _ in german if corpus == "django" and len(en.split()) >= 4]
    # Django 5.2 has 144 such German messages (forms validation, admin); 100 leaves room for
    # catalog churn between releases while still proving whole sentences come through.
    assert len(sentences) >= 100


def test_django_takes_the_singular_form_of_plural_messages(pairs):
    # Arabic plural form 0 is the "zero" form ("there are no errors to correct"); the pair
    # must use the form a count of one selects.
    assert ("django", "Please correct the error below.", "الرجاء تصحيح الخطأ أدناه.") in pairs["ar"]
    assert all(xx != "لا توجد أخطاء لتصحيحها." for _, _, xx in pairs["ar"])


def test_tagalog_reads_the_filipino_locale(pairs):
    assert ("cldr", "Philippines", "Pilipinas") in pairs["tl"]


# Floors for the low-resource languages. With Babel 2.18 (CLDR 47) every one of them has
# 1372-1687 CLDR pairs (about 290 territory names and 440-570 language names each), so 1000
# catches a lost locale mapping or a broken category while surviving CLDR revisions. Django
# 5.2 has 326 (te) to 497 (ka) usable messages for four of them and no catalog for jv and tl.
LOW_RESOURCE_FLOORS = {
    "kk": (1000, 200),
    "te": (1000, 200),
    "ka": (1000, 200),
    "jv": (1000, 0),
    "sw": (1000, 200),
    "tl": (1000, 0),
}


@pytest.mark.parametrize("lang", sorted(LOW_RESOURCE_FLOORS))
def test_low_resource_languages_have_pairs(pairs, lang):
    cldr_floor, django_floor = LOW_RESOURCE_FLOORS[lang]
    corpora = [corpus for corpus, _, _ in pairs[lang]]
    assert corpora.count("cldr") >= cldr_floor
    assert corpora.count("django") >= django_floor
    if django_floor == 0:
        assert "django" not in corpora  # Django ships no catalog for this language


def test_every_language_has_pairs(pairs):
    assert all(len(pairs[lang]) >= 1000 for lang in ALL)


def test_segments_are_clean_single_lines(pairs):
    for lang in ALL:
        for corpus, en, xx in pairs[lang]:
            assert corpus in demo.CORPORA
            for text in (en, xx):
                assert text and text == " ".join(text.split()), (lang, text)
                assert len(text.splitlines()) == 1, (lang, text)
                for template in ("{0}", "{1}", "%s", "%d", "%(", "<a", "</"):
                    assert template not in text, (lang, text)


def test_pairs_are_deterministic_and_grouped_by_corpus(pairs):
    again = demo.demo_pairs("ka")
    assert again == pairs["ka"]
    corpora = [corpus for corpus, _, _ in again]
    assert corpora == sorted(corpora)  # all CLDR pairs, then all Django pairs


def test_identical_sides_are_kept_for_the_cleaning_stage(pairs):
    # Filipino CLDR writes most country names as English does; cleaning counts and drops these.
    assert ("cldr", "Argentina", "Argentina") in pairs["tl"]


def test_english_and_unknown_codes_are_rejected():
    with pytest.raises(languages.UnknownLanguageError):
        demo.demo_pairs("en")
    with pytest.raises(languages.UnknownLanguageError):
        demo.demo_pairs("xx")


def test_missing_babel_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "babel", None)  # makes `import babel` fail
    with pytest.raises(CorpusError, match=r"babel.*pip install 'xlsent\[demo\]'"):
        demo.demo_pairs("de")


def test_missing_django_leaves_only_cldr_pairs(monkeypatch, caplog):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "django" else find_spec(name, *a),
    )
    with caplog.at_level(logging.WARNING, logger="xlsent.corpus.readers.demo"):
        german = demo.demo_pairs("de")
    assert german and {corpus for corpus, _, _ in german} == {"cldr"}
    assert "Django is not installed" in caplog.text


def test_provenance_records_package_versions():
    import babel

    info = demo.provenance()
    assert info["babel"] == babel.__version__
    assert re.fullmatch(r"\d+(\.\d+)*", str(info["cldr"]))
    assert info["django"] == importlib.metadata.version("django")


# --- held-out split ---------------------------------------------------------------------------


def test_heldout_ignores_case_and_spacing():
    for fraction in (0.1, 0.5):
        assert demo.is_heldout("Next  month", fraction) == demo.is_heldout("next month", fraction)


def test_heldout_fraction_bounds():
    assert not demo.is_heldout("Germany", 0.0)
    assert demo.is_heldout("Germany", 1.0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        demo.is_heldout("Germany", 1.5)


def test_heldout_size_is_about_the_fraction(pairs):
    english = {en for lang in ("de", "ja", "sw") for _, en, _ in pairs[lang]}
    for fraction in (0.1, 0.3):
        share = sum(demo.is_heldout(en, fraction) for en in english) / len(english)
        # ~3000 distinct strings: the binomial standard deviation is under 0.01.
        assert abs(share - fraction) < 0.03, (fraction, share)


def test_heldout_is_independent_of_the_hash_seed(pairs):
    english = sorted({en for _, en, _ in pairs["de"]})[:500]
    expected = [demo.is_heldout(en, 0.2) for en in english]
    assert expected == [demo.is_heldout(en, 0.2) for en in english]
    script = (
        "import json, sys; from xlsent.corpus.readers.demo import is_heldout; "
        "print(json.dumps([is_heldout(en, 0.2) for en in json.load(sys.stdin)]))"
    )
    for seed in ("1", "987654"):
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(english),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert json.loads(done.stdout) == expected


def _bitext_pairs(bitext) -> list[tuple[str, str]]:
    return [(en.decode(), xx.decode()) for _, en, xx in bitext.lines()]


def test_bitexts_hold_the_training_part_only(pairs):
    fraction = 0.2
    bitexts = demo.bitexts("de", fraction)
    assert [b.corpus for b in bitexts] == ["cldr", "django"]
    training = {b.corpus: _bitext_pairs(b) for b in bitexts}
    train_en = {en for part in training.values() for en, _ in part}
    heldout_en = {en for _, en, _ in pairs["de"] if demo.is_heldout(en, fraction)}
    assert heldout_en and train_en.isdisjoint(heldout_en)
    assert sum(map(len, training.values())) + sum(
        demo.is_heldout(en, fraction) for _, en, _ in pairs["de"]
    ) == len(pairs["de"])


def test_bitexts_skip_corpora_without_pairs():
    assert [b.corpus for b in demo.bitexts("jv", 0.1)] == ["cldr"]


def _read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_write_heldout_writes_aligned_laser_files(tmp_path, pairs):
    counts = demo.write_heldout(["de", "jv", "kk"], tmp_path, 0.1, max_pairs=100)
    assert set(counts) == {"de", "jv", "kk"}
    assert counts["de"]["written"] == 100 and counts["de"]["capped"] > 0
    for lang, iso3 in (("de", "deu"), ("jv", "jav"), ("kk", "kaz")):
        xx = _read_lines(tmp_path / f"tatoeba.{iso3}-eng.{iso3}")
        en = _read_lines(tmp_path / f"tatoeba.{iso3}-eng.eng")
        assert len(en) == len(xx) == counts[lang]["written"] > 0
        for side in (en, xx):
            assert len({text.casefold() for text in side}) == len(side)  # no repeated query/target
        real = {(e, x) for _, e, x in pairs[lang]}
        for e, x in zip(en, xx, strict=True):
            assert (e, x) in real  # line i translates line i
            assert demo.is_heldout(e, 0.1) and e.casefold() != x.casefold()
        c = counts[lang]
        assert c["heldout"] - c["identical"] - c["duplicate"] - c["capped"] == c["written"]
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


def test_write_heldout_is_deterministic_and_seeded(tmp_path):
    first, second, reseeded = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    demo.write_heldout(["ka"], first, 0.2, max_pairs=50)
    demo.write_heldout(["ka"], second, 0.2, max_pairs=50)
    demo.write_heldout(["ka"], reseeded, 0.2, max_pairs=50, seed=7)
    name = "tatoeba.kat-eng.eng"
    assert (first / name).read_bytes() == (second / name).read_bytes()
    assert (first / name).read_bytes() != (reseeded / name).read_bytes()


def test_write_heldout_reports_small_sets(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="xlsent.corpus.readers.demo"):
        counts = demo.write_heldout(["tl"], tmp_path, 0.002)
    assert counts["tl"]["too_small"] and counts["tl"]["written"] < 10
    assert len(_read_lines(tmp_path / "tatoeba.tgl-eng.tgl")) == counts["tl"]["written"]
    assert "tl has only" in caplog.text
