"""Word translation's dictionaries (`xlsent.dictionaries`): MUSE files, FreeDict, the seed and
test split, and every FreeDict dictionary the configs name.

The FreeDict tests read the real Debian dictionary (`dict-freedict-eng-deu`; install it with
tests/data/install_system_deps.sh) and skip with that message where it is absent.
"""

from __future__ import annotations

import gzip
import json
import re
import unicodedata
from pathlib import Path

import pytest
from support import ROOT

from xlsent.dictionaries import (
    DictionaryError,
    freedict_languages,
    freedict_package,
    freedict_pairs,
    is_word,
    load_dictionary,
    normalise_word,
    read_muse,
    split_dictionary,
    write_muse,
)

FREEDICT = Path("/usr/share/dictd/freedict-eng-deu.dict.dz")
needs_freedict = pytest.mark.skipif(
    not FREEDICT.is_file(),
    reason=f"{FREEDICT} is absent: run tests/data/install_system_deps.sh as root "
    "(apt-get install dict-freedict-eng-deu)",
)


def test_muse_round_trip_and_both_separators(tmp_path: Path) -> None:
    path = tmp_path / "en-de.txt"
    assert write_muse([("dog", "hund"), ("file", "datei")], path) == 2
    assert read_muse(path) == [("dog", "hund"), ("file", "datei")]
    spaced = tmp_path / "spaced.txt"
    spaced.write_text("dog hund\n\nhouse haus\n")  # MUSE's own files use a space
    assert read_muse(spaced) == [("dog", "hund"), ("house", "haus")]


def test_malformed_dictionary_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("dog hund\nopen a file\n")
    with pytest.raises(DictionaryError, match=rf"{path}:2: expected `source target`"):
        read_muse(path)


def test_dictionary_from_a_url(static_server, tmp_path: Path) -> None:
    base, root = static_server
    (root / "en-de.txt").write_text("dog hund\nhouse haus\n")
    cache = tmp_path / "cache"
    assert load_dictionary(f"{base}/en-de.txt", cache) == [("dog", "hund"), ("house", "haus")]
    assert (cache / "en-de.txt").is_file() and (cache / "en-de.txt.json").is_file()
    with pytest.raises(DictionaryError, match="cache directory"):
        load_dictionary(f"{base}/en-de.txt")
    with pytest.raises(FileNotFoundError, match="bli-dictionary"):
        load_dictionary(tmp_path / "missing.txt")


def test_bli_dictionary_command_copies_downloads_and_reverses_muse(static_server, tmp_path):
    from xlsent.cli import main

    base, root = static_server
    (root / "en-de.txt").write_text("dog hund\nhouse haus\n")
    main(["bli-dictionary", "--muse", str(root / "en-de.txt"), "--out", str(tmp_path / "a.txt")])
    assert read_muse(tmp_path / "a.txt") == [("dog", "hund"), ("house", "haus")]
    main(
        [
            *("bli-dictionary", "--muse", f"{base}/en-de.txt", "--reverse"),
            *("--download-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "b.txt")),
        ]
    )
    assert read_muse(tmp_path / "b.txt") == [("hund", "dog"), ("haus", "house")]


def _b64(n: int) -> str:
    digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out = ""
    while True:
        out = digits[n % 64] + out
        n //= 64
        if n == 0:
            return out


def test_a_word_is_letters_then_letters_marks_digits_apostrophes_or_hyphens() -> None:
    words = ["Haus", "ǅemal", "e-mail", "rock'n'roll", "R2D2", "हिन्दी", "nai\u0308ve"]
    not_words = ["", "'tis", "x-", "ice cream", "3D", "\u0308a", "Ⅻ", "a.b"]
    assert [is_word(w) for w in words] == [True] * len(words)
    assert [is_word(w) for w in not_words] == [False] * len(not_words)
    # One character: a word exactly where Unicode calls it a letter (the fast path for words
    # of letters only, `str.isalpha`, agrees with `unicodedata` over the whole BMP).
    chars = [chr(i) for i in range(0x10000) if not 0xD800 <= i <= 0xDFFF]
    assert [c for c in chars if is_word(c) != unicodedata.category(c).startswith("L")] == []


def test_freedict_format(tmp_path: Path) -> None:
    # Entries shaped like the real ones: headword /pronunciation/ (inflections) <pos>, then one
    # line of comma-separated translations with <gender>, [domain] and (...) annotations.
    entries = [
        ("00-database-info", "00-database-info\nThis is the dictionary's own record.\n"),
        ("dog", 'dog /dˈɒɡ/\nHund <masc> [zool.]\n      "train a dog"  - einen Hund abrichten\n'),
        ("open", "open /ˈəʊpən/ <v>\nsich öffnen, aufgehen <v, refl> [ugs.]\n see: {opening}\n"),
        ("save as", "save as /sˈeɪv az/\nspeichern als/unter\n"),
        ("file", "file /fˈaɪl/\nAkte <fem>, Akt <masc> [Ös.]  [adm.] ; Datei (EDV)\n"),
    ]
    body, index = "", ""
    for headword, text in entries:
        offset = len(body.encode())
        body += text
        index += f"{headword}\t{_b64(offset)}\t{_b64(len(text.encode()))}\n"
    index += f"dog\t{_b64(len(entries[0][1].encode()))}\t{_b64(len(entries[1][1].encode()))}\n"
    with gzip.open(tmp_path / "freedict-eng-deu.dict.dz", "wt", encoding="utf-8") as f:
        f.write(body)
    (tmp_path / "freedict-eng-deu.index").write_text(index, encoding="utf-8")
    pairs = freedict_pairs(tmp_path / "freedict-eng-deu.dict.dz")
    assert pairs == [
        ("dog", "hund"),
        ("open", "aufgehen"),  # "sich öffnen" has two words
        ("file", "akte"),
        ("file", "akt"),
        ("file", "datei"),
    ]
    cased = freedict_pairs(tmp_path / "freedict-eng-deu.dict.dz", lowercase=False)
    assert ("dog", "Hund") in cased


def test_freedict_missing_file_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="apt-get install dict-freedict-eng-deu"):
        freedict_pairs(tmp_path / "freedict-eng-deu.dict.dz")


@pytest.mark.slow  # converts the whole FreeDict dictionary
@needs_freedict
def test_freedict_real_english_german() -> None:
    pairs = freedict_pairs(FREEDICT)
    assert len(pairs) > 200_000
    assert len(pairs) == len(set(pairs))
    translations: dict[str, set[str]] = {}
    for src, tgt in pairs:
        translations.setdefault(src, set()).add(tgt)
    assert {"hund"} <= translations["dog"]
    assert {"haus"} <= translations["house"]
    assert {"datei", "akte", "feile"} <= translations["file"]
    assert {"fenster"} <= translations["window"]
    assert {"öffnen", "offen"} <= translations["open"]
    # Single lowercase words only: no annotation, phrase or capital survives.
    words = "\n".join(w for pair in pairs for w in pair)
    assert words == words.lower()
    assert not set(words) & set(" <>[]{}()/,;")


# -- the seed / test split ---------------------------------------------------------------------
def test_split_shares_no_pair_and_no_source_word_between_seed_and_test() -> None:
    # Polysemy across both directions: "bank" and "bench" share "bank" in German, and the
    # xx2en dictionary has pairs the en2xx one lacks.
    en2xx = [
        ("bank", "bank"),
        ("bank", "ufer"),
        ("bench", "bank"),
        ("shore", "ufer"),
        ("dog", "hund"),
        ("cat", "katze"),
        ("house", "haus"),
        ("home", "haus"),
        ("home", "heim"),
        ("tree", "baum"),
    ]
    xx2en = [("hund", "dog"), ("haus", "building"), ("baum", "tree"), ("maus", "mouse")]
    for seed in range(20):
        seed_pairs, tests = split_dictionary({"en2xx": en2xx, "xx2en": xx2en}, 0.5, seed)
        seed_en = {en for en, _ in seed_pairs}
        seed_xx = {xx for _, xx in seed_pairs}
        test_en2xx, test_xx2en = tests["en2xx"], tests["xx2en"]
        # No test pair is a seed pair, in either direction.
        assert not set(test_en2xx) & set(seed_pairs)
        assert not {(en, xx) for xx, en in test_xx2en} & set(seed_pairs)
        # No test source word is a seed source word (nor any seed word at all).
        assert not {en for en, _ in test_en2xx} & seed_en
        assert not {xx for xx, _ in test_xx2en} & seed_xx
        assert not {xx for _, xx in test_en2xx} & seed_xx
        assert not {en for _, en in test_xx2en} & seed_en
        # The seed holds every pair of its English words, from both directions.
        english = {en for en, _ in en2xx} | {en for _, en in xx2en}
        assert len(seed_en) == round(0.5 * len(english))
        assert seed_pairs == sorted(
            {p for p in en2xx if p[0] in seed_en} | {(en, xx) for xx, en in xx2en if en in seed_en}
        )
        # A test part keeps its dictionary's order and every pair that shares no seed word.
        assert test_en2xx == [p for p in en2xx if p[0] not in seed_en and p[1] not in seed_xx]
    # A fixed seed gives the same split; another seed another one.
    split = split_dictionary({"en2xx": en2xx, "xx2en": xx2en}, 0.5, 0)
    assert split == split_dictionary({"en2xx": en2xx, "xx2en": xx2en}, 0.5, 0)
    assert any(
        split_dictionary({"en2xx": en2xx, "xx2en": xx2en}, 0.5, s)[0] != split[0]
        for s in range(1, 5)
    )
    # Share 0: no seed, every pair a test pair.
    assert split_dictionary({"en2xx": en2xx}, 0.0, 0) == ([], {"en2xx": en2xx})
    with pytest.raises(ValueError, match="seed_share"):
        split_dictionary({"en2xx": en2xx}, 1.0, 0)


def test_bli_split_command_writes_seed_and_test_parts(tmp_path: Path) -> None:
    from xlsent.cli import main

    en2xx = [("dog", "hund"), ("cat", "katze"), ("house", "haus"), ("tree", "baum")]
    write_muse(en2xx, tmp_path / "de.en2xx.txt")
    write_muse([(b, a) for a, b in en2xx], tmp_path / "de.xx2en.txt")
    common = [
        *("bli-split", "--dictionaries", f"en2xx={tmp_path / 'de.en2xx.txt'}"),
        f"xx2en={tmp_path / 'de.xx2en.txt'}",
        *("--settings", json.dumps({"seed_share": 0.5, "seed": 3})),
    ]
    main([*common, "--seed-out", str(tmp_path / "seed.txt"), "--stats", str(tmp_path / "s.json")])
    for d in ("en2xx", "xx2en"):
        out = tmp_path / f"de.{d}.test.txt"
        main([*common, "--test", d, "--out", str(out), "--stats", str(tmp_path / f"{d}.json")])
    seed = read_muse(tmp_path / "seed.txt")
    test = read_muse(tmp_path / "de.en2xx.test.txt")
    assert len(seed) == len(test) == 2 and not set(seed) & set(test)
    assert sorted(seed + test) == sorted(en2xx)
    assert read_muse(tmp_path / "de.xx2en.test.txt") == [(b, a) for a, b in test]
    stats = json.loads((tmp_path / "en2xx.json").read_text())
    assert stats["seed_pairs"] == 2 and stats["en2xx"]["test_source_words"] == 2


# -- every FreeDict dictionary the configs name ------------------------------------------------
def configured_freedict() -> list[Path]:
    """The FreeDict files the shipped configs name (as tests/data/install_system_deps.sh
    finds them, which installs their packages)."""
    configs = [ROOT / "config.yaml", *sorted((ROOT / "resources").glob("*/config.yaml"))]
    names = {
        m
        for c in configs
        for m in re.findall(r"freedict-[a-z]{3}-[a-z]{3}\.dict\.dz", c.read_text())
    }
    return [Path("/usr/share/dictd") / name for name in sorted(names)]


# A translation every dictionary must give (English word first), checked after the parse.
KNOWN = {
    "afr": ("name", "naam"),
    "ara": ("book", "الكتاب"),
    "bul": ("book", "книга"),  # the dictionary's stress accent (кни́га) removed
    "deu": ("house", "haus"),
    "ell": ("dog", "σκύλος"),
    "fin": ("dog", "koira"),
    "fra": ("dog", "chien"),
    "hin": ("dog", "कुत्ता"),  # Devanagari's vowel signs are combining marks
    "hun": ("dog", "kutya"),
    "ind": ("dog", "anjing"),
    "ita": ("dog", "cane"),
    "jpn": ("water", "水"),
    "nld": ("house", "huis"),
    "por": ("dog", "cão"),
    "rus": ("dog", "собака"),
    "spa": ("dog", "perro"),
    "swh": ("eye", "jicho"),
    "tur": ("dog", "köpek"),
}


def test_the_configs_name_freedict_dictionaries() -> None:
    names = {path.name for path in configured_freedict()}
    assert "freedict-eng-deu.dict.dz" in names and "freedict-deu-eng.dict.dz" in names
    assert len(names) >= 30  # resources/l10n: 18 languages, 13 of them both ways


@pytest.mark.slow  # converts every dictionary the configs name (about 30 s)
@pytest.mark.parametrize("path", configured_freedict(), ids=lambda p: p.name.split(".")[0])
def test_freedict_parse_of_each_configured_dictionary(path: Path) -> None:
    if not path.is_file():
        pytest.skip(
            f"{path} is absent: run tests/data/install_system_deps.sh as root "
            f"(apt-get install {freedict_package(path)})"
        )
    src_lang, tgt_lang = freedict_languages(path)
    pairs = freedict_pairs(path)
    assert len(pairs) > 1000 and len(pairs) == len(set(pairs))
    words = [w for pair in pairs for w in pair]
    assert all(is_word(w) and w == w.lower() and w == normalise_word(w) for w in words)
    foreign = tgt_lang if src_lang == "eng" else src_lang
    en, xx = KNOWN[foreign]
    assert ((en, xx) if src_lang == "eng" else (xx, en)) in set(pairs)
    if foreign == "hun":  # eng-hun's ô and û are Hungarian's ő and ű
        assert not {ch for w in words for ch in w} & set("ôû")


def test_freedict_layouts(tmp_path: Path) -> None:
    # The three layouts of FreeDict's dictd files, as the real ones hold them: a blank line
    # before the translations (eng-ell, eng-swh); a definition in the source language after
    # them (eng-bul, eng-fin), not a translation; numbered senses with examples (eng-hin,
    # ara-eng); several spellings with priority tags and a part-of-speech line (jpn-eng).
    entries = [
        ("confirm", "confirm /kənfˈɜːm/\n\nεπιβεβαιώνω, διαβεβαιώνω\n"),
        ("sumptuous", "sumptuous //ˈsʌmpt͡ʃuəs// <adj>\nлуксозен, пищен\nmagnificent, luxurious\n"),
        ("crude", 'crude /kɹˈuːd/ <Adj>\n1. अशोधित\n      "the crude form"\n2. अपरिष्कृत\n'),
        ("tear", "يمزّق /jmzzq/\n1. Lacerates\n2. Rends.\n"),
        (
            "じゅうおく",
            " [news1]  [nf06]  十億 /(en)tʃ(ja)l/,  [news1] じゅうおく /dʑo̞kɯᵝ/\n"
            "(numeric)\n1,000,000,000, billion\n",
        ),
        ("go", "go /ɡˈəʊ/ (went /wˈɛnt/, gone /ɡˈɒn/) <v>\ngehen\n"),
    ]
    body, index = "", ""
    for headword, text in entries:
        offset = len(body.encode())
        body += text
        index += f"{headword}\t{_b64(offset)}\t{_b64(len(text.encode()))}\n"
    with gzip.open(tmp_path / "freedict-eng-xxx.dict.dz", "wt", encoding="utf-8") as f:
        f.write(body)
    (tmp_path / "freedict-eng-xxx.index").write_text(index, encoding="utf-8")
    assert freedict_pairs(tmp_path / "freedict-eng-xxx.dict.dz") == [
        ("confirm", "επιβεβαιώνω"),
        ("confirm", "διαβεβαιώνω"),
        ("sumptuous", "луксозен"),
        ("sumptuous", "пищен"),  # not "magnificent": the definition line
        ("crude", "अशोधित"),
        ("crude", "अपरिष्कृत"),
        ("يمزق", "lacerates"),  # shadda removed; the full stop too
        ("يمزق", "rends"),
        ("十億", "billion"),
        ("じゅうおく", "billion"),
        ("go", "gehen"),  # not "gone": an inflection in parentheses
    ]
