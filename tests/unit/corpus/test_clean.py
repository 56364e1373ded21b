"""Cleaning: each filter on a pair that hits exactly it, the order of the filters, the output.

Most pairs are real German-English lines of the shared l10n corpus, copied here so that the
tests need nothing beside the checkout; hand-written lines are the precise cases (a URL, a
control character, invalid UTF-8 bytes).
"""

from __future__ import annotations

import gzip
import hashlib
import logging
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from support import SHARED

from xlsent.corpus.bitext import Bitext, CorpusError, moses_files
from xlsent.corpus.clean import clean
from xlsent.corpus.clean_base import CORPUS_SCHEMA, FILTERS, CleanConfig
from xlsent.corpus.readers import local

L10N = SHARED / "l10n"

# l10n.de-en lines 11, 13, 16, 23, 59, 62, 65, 73, 87, 99, 106, 131: 5-8 words a side,
# xx/en character ratios 0.94-1.43, so none is near a filter.
BASE = [
    ("You need to log into this network", "Sie müssen sich in diesem Netzwerk anmelden"),
    ("Could not free deserialized data", "Konnte entserialisierte Daten nicht freigeben"),
    ("Visit Little CMS project website", "Webseite von Little CMS besuchen"),
    ("Copy from Preferences to DB", "Kopiere von den Einstellungen in die DB"),
    ("shell command to move files", "Shellbefehl, um Dateien zu verschieben"),
    ("The background color for the applet", "Die Hintergrundfarbe für das Applet"),
    ("Unable to read container pty", "Kann container pty nicht lesen"),
    ("Do you want to close the tab?", "Möchten Sie den Reiter schließen?"),
    (
        "Show the column with the expenses per customer.",
        "Die Spalte mit den Kosten pro Kunde anzeigen",
    ),
    ("Select the images you want to save:", "Die Bilder auswählen, die Sie speichern möchten:"),
    (
        "Horizontal alignment of the content inside the box",
        "Horizontale Ausrichtung des Inhalts innerhalb der Box",
    ),
    ("wrong type argument to abs", "Argument falschen Typs für abs"),
]

Pair = tuple[str | bytes, str | bytes]


def _bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode()


def _moses(directory: Path, corpus: str, pairs: list[Pair], lang: str = "de") -> Bitext:
    """`pairs` as the two Moses files of `corpus` in `directory` (bytes are written as is)."""
    directory.mkdir(parents=True, exist_ok=True)
    pair = local.pair_name(lang)
    paths = [directory / f"{corpus}.{pair}.{side}" for side in ("en", lang)]
    for path, side in zip(paths, zip(*pairs, strict=True) if pairs else ((), ()), strict=True):
        path.write_bytes(b"".join(_bytes(line) + b"\n" for line in side))
    return moses_files(corpus, *paths)


def _run(
    tmp_path: Path, pairs: list[Pair], lang: str = "de", **cfg: float
) -> tuple[dict, list[tuple[str, str]]]:
    """Clean `pairs` (one corpus); return the statistics and the kept (en, xx) pairs."""
    out = tmp_path / "results" / lang / "clean.parquet"  # a directory that does not exist yet
    stats = clean([_moses(tmp_path / "raw", "c", pairs, lang)], lang, out, CleanConfig(**cfg))
    table = pl.read_parquet(out)
    assert table["id"].to_list() == list(range(table.height))
    return stats, list(table.select("en", "xx").iter_rows())


def _dropped(stats: dict, style: str = "words") -> dict[str, int]:
    """The filters that dropped something (all the style's are always reported)."""
    assert list(stats["dropped"]) == list(FILTERS[style])
    assert sum(stats["dropped"].values()) + stats["kept"] == stats["read"]
    return {name: n for name, n in stats["dropped"].items() if n}


# -- one test per filter, in the documented order ------------------------------------------------
def test_invalid_utf8_is_counted_located_and_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pairs: list[Pair] = [
        BASE[0],
        (b"Open the \xff file in the editor", BASE[1][1]),  # a byte that is never UTF-8
        BASE[2],
        (BASE[3][0], b"Die Datei caf\xc3"),  # a sequence cut short
        (b"\xed\xa0\x80 surrogate", b""),  # an encoded surrogate; also empty, counted once
        BASE[4],
    ]
    with caplog.at_level(logging.WARNING, logger="xlsent.corpus.clean"):
        stats, kept = _run(tmp_path, pairs)
    assert _dropped(stats) == {"invalid_utf8": 3}
    # Each line named by the file with the bad bytes (the report: both files of the pair).
    en, de = (str(tmp_path / "raw" / f"c.de-en.{side}") for side in ("en", "de"))
    assert stats["examples"] == {"invalid_utf8": [f"{en}:2", f"{de}:4", f"{en}:5"]}
    assert kept == [BASE[0], BASE[2], BASE[4]]
    assert f"{en} line 2 is not valid UTF-8; skipped" in caplog.messages
    assert f"{de} line 4 is not valid UTF-8; skipped" in caplog.messages


def test_empty_after_control_characters_are_replaced(tmp_path: Path) -> None:
    pairs: list[Pair] = [
        BASE[0],
        ("", BASE[1][1]),
        (BASE[2][0], "\x00\x07 \t"),  # only control characters and spaces
        ("\ufeff", BASE[3][1]),  # only a byte-order mark
        ("", "Siehe https://example.org für weitere Hinweise"),  # empty before url_or_email
        BASE[4],
    ]
    stats, kept = _run(tmp_path, pairs)
    assert _dropped(stats) == {"empty": 4}
    assert kept == [BASE[0], BASE[4]]


def test_urls_and_email_addresses(tmp_path: Path) -> None:
    server = (  # l10n.de-en line 184: `name@host` without a domain is not an address
        "Supported formats • server • server[:port] • username@server[:port] (SSH protocol only)",
        "Unterstützte Formate • server • server:[port] • benutzername@server[:port] "
        "(nur SSH Protokoll)",
    )
    pairs: list[Pair] = [
        ("See https://example.org/help for more details", "Siehe die Hilfe für weitere Details"),
        ("Download it from www.example.com today", "Laden Sie es heute von der Webseite"),
        ("Visit the project website for more", "Besuchen Sie ftp://example.org für mehr"),
        ("Report bugs to the mailing list", "Fehler bitte an bugs@lists.example.org melden"),
        ("Visit http://example.org", "Besuche http://example.org"),  # also too short
        BASE[0],
        server,
    ]
    stats, kept = _run(tmp_path, pairs)
    assert _dropped(stats) == {"url_or_email": 5}
    assert kept == [BASE[0], server]


def test_too_short_counts_words(tmp_path: Path) -> None:
    pairs: list[Pair] = [
        ("Open the file", "Die Datei jetzt öffnen"),  # 3 English words
        ("Open the file now", "Datei jetzt öffnen"),  # 3 German words
        ("OK, OK", "ok ok"),  # also identical: counted as too short, the earlier filter
        ("Open the file now", "Die Datei jetzt öffnen"),  # exactly min_tokens: kept
        BASE[0],
    ]
    stats, kept = _run(tmp_path, pairs)
    assert _dropped(stats) == {"too_short": 3}
    assert kept == pairs[3:]
    stats, _ = _run(tmp_path / "loose", pairs, min_tokens=2)
    assert _dropped(stats) == {"identical": 1}


def test_too_short_counts_characters_in_unspaced_scripts(tmp_path: Path) -> None:
    # l10n.en-zh lines 4 and 109: one whitespace token, but six characters each.
    zh = [
        ("New top level account", "新建顶级科目"),
        ("Displays the Tip of the Day", "显示每日提醒"),
    ]
    short = ("Open the file now", "打开")
    stats, kept = _run(tmp_path / "zh", [*zh, short], lang="zh")
    assert _dropped(stats) == {"too_short": 1}
    assert kept == zh
    # The same text counted as a spaced language is one word a side: all too short, which
    # the message says to loosen.
    with pytest.raises(CorpusError, match=r"no pair survived .* Lower corpus.clean.min_tokens"):
        _run(tmp_path / "de", [*zh, short], lang="de")


def test_identical_ignores_case_punctuation_digits_and_spaces(tmp_path: Path) -> None:
    copy = ("Open the File Manager now!", "open the file-manager now")
    pairs: list[Pair] = [
        copy,
        ("Page 1 of 10 is shown", "Page 2 of 20, is shown."),
        BASE[0],
        copy,  # a repeat of an identical pair stays counted as identical, not as a duplicate
        ("Unable to read container pty", "Kann container pty nicht lesen"),  # shares words only
    ]
    stats, kept = _run(tmp_path, pairs)
    assert _dropped(stats) == {"identical": 3}
    assert kept == [BASE[0], pairs[4]]


def test_length_ratio_is_measured_against_the_median(tmp_path: Path) -> None:
    en, de = BASE[0]  # ratio 1.29; eight copies of the German side make it about 10
    long_xx = (en, " ".join([de] * 8))
    long_en = (" ".join([en] * 8), de)  # and the other way round, about 0.16
    pairs: list[Pair] = [*BASE, long_xx, long_en, long_xx]  # the repeat: length_ratio first
    stats, kept = _run(tmp_path, pairs)
    assert _dropped(stats) == {"length_ratio": 3}
    assert kept == BASE
    assert 1.0 < stats["median_length_ratio"] < 1.4


def test_length_ratio_band_moves_with_the_median(tmp_path: Path) -> None:
    # Every German side five times over: the median ratio is about 5.7, so a pair with the
    # natural ratio (1.35) is the outlier (4x off), and one of ten copies (12, 2x off) is not.
    # An absolute band around 1 would do the opposite.
    wide = [(en, " ".join([de] * 5)) for en, de in BASE]
    natural = ("Copy the selected text", "Den ausgewählten Text kopieren")
    tenfold = ("Paste the copied text here", " ".join(["Den kopierten Text hier einfügen"] * 10))
    stats, kept = _run(tmp_path, [*wide, natural, tenfold])
    assert _dropped(stats) == {"length_ratio": 1}
    assert kept == [*wide, tenfold]
    assert 5.0 < stats["median_length_ratio"] < 6.5


def test_duplicates_keep_the_first_occurrence(tmp_path: Path) -> None:
    en, de = BASE[0]
    pairs: list[Pair] = [
        *BASE[:5],
        BASE[1],  # an exact repeat, in a later batch
        (en.replace(" ", "  "), "\ufeff" + de),  # the same pair once whitespace is normalised
        (en, BASE[1][1]),  # the same English, another translation: not a repeat
        # Same concatenated text as the next, split differently between the sides.
        ("Open the file now x", "yz Datei jetzt öffnen bitte"),
        ("Open the file now xy", "z Datei jetzt öffnen bitte"),
    ]
    stats, kept = _run(tmp_path, pairs, batch_size=3)
    assert _dropped(stats) == {"duplicate": 2}
    assert kept == [*BASE[:5], *pairs[7:]]


def test_a_pair_in_two_corpora_is_kept_in_the_first(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    bitexts = [_moses(raw, "Alpha", BASE[:3]), _moses(raw, "Beta", [BASE[2], BASE[3]])]
    stats = clean(bitexts, "de", tmp_path / "clean.parquet")
    assert _dropped(stats) == {"duplicate": 1}
    assert {name: s["kept"] for name, s in stats["sources"].items()} == {"Alpha": 3, "Beta": 1}
    table = pl.read_parquet(tmp_path / "clean.parquet")
    assert list(table.select("en", "source").iter_rows()) == [
        *((en, "Alpha") for en, _ in BASE[:3]),
        (BASE[3][0], "Beta"),
    ]


# -- what cleaning keeps as it is, or changes ------------------------------------------------
def test_control_characters_become_spaces_and_the_pair_is_kept(tmp_path: Path) -> None:
    pairs: list[Pair] = [
        # l10n.de-en lines 4002 and 5115: real byte-order marks, at the start and inside.
        (
            "No IMAPx connection object provided",
            "\ufeffKein IMAPx-Verbindungsobjekt zur Verfügung gestellt",
        ),
        ("HTTP proxy connection not allowed", "Verbindung zum \ufeffHTTP-Proxy nicht zugelassen"),
        ("Open\tthe file in the editor", "Die Datei im Editor öffnen"),  # C0
        ("Close the file\x85 in the editor", "Die Datei im Editor schließen"),  # C1 (NEL)
        BASE[0],
    ]
    stats, kept = _run(tmp_path, pairs)
    assert _dropped(stats) == {}
    assert stats["control_chars_replaced"] == 4  # one character in each of four pairs
    assert kept == [
        (
            "No IMAPx connection object provided",
            "Kein IMAPx-Verbindungsobjekt zur Verfügung gestellt",
        ),
        ("HTTP proxy connection not allowed", "Verbindung zum HTTP-Proxy nicht zugelassen"),
        ("Open the file in the editor", "Die Datei im Editor öffnen"),
        ("Close the file in the editor", "Die Datei im Editor schließen"),
        BASE[0],
    ]


def test_zero_width_non_joiner_is_kept(tmp_path: Path) -> None:
    # l10n.en-fa lines 7, 13 and 18: ZWNJ (U+200C) is part of Persian spelling, not a control.
    fa = [
        ("Warning: cannot load codepages list", "اخطار: لیست صفحات کد را نمی‌توان بارگیری کرد"),
        (
            "The maximum solar distance for drawing comets.",
            "فاصله شمسی بیشینه برای ترسیم ستاره‌های دنباله‌دار.",
        ),
        ("Username can be left empty", "نام کاربری نمی‌تواند خالی رها شود"),
    ]
    assert all("\u200c" in xx for _, xx in fa)
    stats, kept = _run(tmp_path, fa, lang="fa")
    assert kept == fa
    assert stats["control_chars_replaced"] == 0


# -- output and statistics ---------------------------------------------------------------------
def test_output_schema_ids_and_per_source_counts(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    short = ("Open the file", "Datei öffnen")
    bitexts = [
        _moses(raw, "Alpha", [*BASE[:6], short]),
        _moses(raw, "Beta", [short, ("Close it", "Schließen")]),  # nothing survives here
        _moses(raw, "Gamma", BASE[6:]),
        _moses(raw, "Empty", []),
    ]
    out = tmp_path / "clean.parquet"
    stats = clean(bitexts, "de", out, CleanConfig(batch_size=4))  # ids run across batches
    assert pq.read_schema(out).equals(CORPUS_SCHEMA, check_metadata=False)
    table = pl.read_parquet(out)
    assert table["id"].to_list() == list(range(12))
    assert table["source"].to_list() == ["Alpha"] * 6 + ["Gamma"] * 6
    assert list(table.select("en", "xx").iter_rows()) == BASE
    assert {name: (s["read"], s["kept"]) for name, s in stats["sources"].items()} == {
        "Alpha": (7, 6),
        "Beta": (2, 0),
        "Gamma": (6, 6),
        "Empty": (0, 0),
    }
    assert stats["sources"]["Beta"]["origin"] == f"{bitexts[1].en_origin} + {bitexts[1].xx_origin}"
    assert (stats["lang"], stats["read"], stats["kept"]) == ("de", 15, 12)
    assert _dropped(stats) == {"too_short": 3}
    # Sentences are written plain and without min/max; the id and the source are not.
    columns = pq.ParquetFile(out).metadata.row_group(0)
    layout = {
        columns.column(i).path_in_schema: (
            columns.column(i).dictionary_page_offset is not None,
            columns.column(i).statistics is not None,
        )
        for i in range(columns.num_columns)
    }
    assert layout == {
        "id": (True, True),
        "en": (False, False),
        "xx": (False, False),
        "source": (True, True),
    }


def test_a_corpus_with_no_survivor_names_the_language_and_files(tmp_path: Path) -> None:
    raw, out = tmp_path / "raw", tmp_path / "out" / "clean.parquet"
    bitexts = [
        _moses(raw, "Tanzil", [("Open it", "Öffnen"), ("", "")], lang="kk"),
        _moses(raw, "Bible", [], lang="kk"),
    ]
    with pytest.raises(CorpusError) as err:
        clean(bitexts, "kk", out)
    message = str(err.value)
    assert message.startswith("kk: no pair survived cleaning (read 2 from")
    for bitext in bitexts:
        assert bitext.en_origin in message and bitext.xx_origin in message
    assert list(out.parent.iterdir()) == []  # neither the output nor the first pass


def test_a_corpus_without_a_line_is_not_told_to_loosen_the_filters(tmp_path: Path) -> None:
    """The report: two empty files, and the advice to loosen `min_tokens`."""
    with pytest.raises(CorpusError) as err:
        clean([_moses(tmp_path / "raw", "l10n", [], lang="fr")], "fr", tmp_path / "out.parquet")
    assert str(err.value).endswith(
        "The files hold no line: copy or download them again, or remove the language from "
        "`languages`."
    )


def test_the_first_pass_file_never_remains(tmp_path: Path) -> None:
    out = tmp_path / "out" / "clean.parquet"
    clean([_moses(tmp_path / "raw", "c", BASE)], "de", out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["clean.parquet"]
    # An error in the middle of the first pass (sides of different lengths) leaves nothing.
    broken = _moses(tmp_path / "broken", "c", BASE)
    Path(broken.xx_origin).write_bytes(b"".join(xx.encode() + b"\n" for _, xx in BASE[:-1]))
    out.unlink()
    with pytest.raises(CorpusError, match="must have the same number of lines"):
        clean([broken], "de", out, CleanConfig(batch_size=4))
    assert list(out.parent.iterdir()) == []


# -- the real corpus -----------------------------------------------------------------------------
@pytest.mark.shared
def test_cleaning_the_real_kazakh_corpus_accounts_for_every_pair_and_is_deterministic(
    tmp_path: Path,
) -> None:
    if not L10N.is_dir():
        pytest.skip(f"needs the shared l10n corpus at {L10N} (../shared beside the checkout)")
    with gzip.open(L10N / "l10n.en-kk.kk.gz", "rb") as f:
        lines = f.read().count(b"\n")
    runs = []
    for run in ("a", "b"):
        out = tmp_path / run / "clean.parquet"
        stats = clean(local.discover(L10N, "kk"), "kk", out)
        runs.append((stats, out.read_bytes()))
    stats = runs[0][0]
    assert stats["read"] == lines == stats["sources"]["l10n"]["read"]
    assert 0 < stats["kept"] == stats["sources"]["l10n"]["kept"] == pq.read_metadata(out).num_rows
    assert sum(stats["dropped"].values()) + stats["kept"] == stats["read"]
    assert runs[0] == runs[1]  # the same statistics and byte-identical Parquet


# -- every kind of line at once, against expectations written by hand ----------------------------
# (raw en, raw xx, what cleaning does with the pair: a filter's name, or the pair it keeps).
# The cleaner of commit 4dd2c7a, before reading in blocks, gave the same rows and statistics.
EVERY_KIND: list[tuple[bytes | str, bytes | str, str | tuple[str, str]]] = [
    (*BASE[0], BASE[0]),
    (b"Open the \xff file in the editor", BASE[1][1], "invalid_utf8"),
    (BASE[1][0], b"Die Datei caf\xc3", "invalid_utf8"),  # a sequence cut short at the line end
    (*BASE[1], BASE[1]),
    ("", BASE[2][1], "empty"),
    (BASE[2][0], "\x00\x07 \t", "empty"),  # only control characters and spaces
    ("See https://example.org/help for details", "Siehe die Hilfe für Details", "url_or_email"),
    ("Report bugs to the mailing list", "Fehler an BUGS@LISTS.EXAMPLE.ORG melden", "url_or_email"),
    ("Download it from WWW.example.com today", "Laden Sie es von der Webseite", "url_or_email"),
    ("Open the file", "Die Datei jetzt öffnen", "too_short"),
    ("OK, OK", "ok ok", "too_short"),  # also identical: the earlier filter counts it
    ("Open the File Manager now!", "open the file-manager now", "identical"),
    ("Page 1 of 10 is shown", "Page 2 of 20, is shown.", "identical"),
    (*BASE[2], BASE[2]),
    (BASE[3][0], " ".join([BASE[3][1]] * 8), "length_ratio"),  # ratio about 11, median 1.1
    (" ".join([BASE[4][0]] * 8), BASE[4][1], "length_ratio"),  # and about 0.17
    (*BASE[0], "duplicate"),
    # Control characters become spaces, whitespace collapses, the pair is kept.
    ("Open\tthe file in the\x00editor", "Die Datei im Editor\u0085 öffnen", None),
    ("\ufeffShow all the hidden files", "Alle versteckten  Dateien anzeigen ", None),
    ("Open  the file in the editor ", "Die Datei im Editor öffnen", "duplicate"),  # of the first
    (*BASE[3], BASE[3]),
    ("Show\rall the hidden files", "Alle versteckten Dateien anzeigen", "duplicate"),  # lone \r
    (*BASE[4], BASE[4]),
    (*BASE[5], BASE[5]),
]
# The kept pairs whose text cleaning changed, in order.
EVERY_KIND_NORMALISED = [
    ("Open the file in the editor", "Die Datei im Editor öffnen"),
    ("Show all the hidden files", "Alle versteckten Dateien anzeigen"),
]


@pytest.mark.parametrize("batch_size", [3, 100_000])
def test_every_kind_of_line_in_one_file(tmp_path: Path, batch_size: int) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    en_path, xx_path = raw / "every.de-en.en.gz", raw / "every.de-en.de"
    en_path.write_bytes(gzip.compress(b"".join(_bytes(en) + b"\n" for en, _, _ in EVERY_KIND)))
    # The German side with Windows line ends and no end after its last line.
    xx_path.write_bytes(b"\r\n".join(_bytes(xx) for _, xx, _ in EVERY_KIND))
    out = tmp_path / "clean.parquet"
    stats = clean(
        [moses_files("every", en_path, xx_path)], "de", out, CleanConfig(batch_size=batch_size)
    )

    normalised = iter(EVERY_KIND_NORMALISED)
    expected = [
        next(normalised) if fate is None else fate
        for _, _, fate in EVERY_KIND
        if not isinstance(fate, str)
    ]
    table = pl.read_parquet(out)
    assert list(table.select("en", "xx").iter_rows()) == expected
    assert table["id"].to_list() == list(range(len(expected)))
    assert set(table["source"]) == {"every"}
    assert _dropped(stats) == {
        "invalid_utf8": 2,
        "empty": 2,
        "url_or_email": 3,
        "too_short": 2,
        "identical": 2,
        "length_ratio": 2,
        "duplicate": 3,
    }
    origin = f"{en_path} + {xx_path}"
    assert stats["examples"] == {  # 1-based line numbers, filters in the order first met
        "invalid_utf8": [f"{en_path}:2", f"{xx_path}:3"],  # the file with the bad bytes
        "empty": [f"{origin}:5", f"{origin}:6"],
        "url_or_email": [f"{origin}:{n}" for n in (7, 8, 9)],
        "too_short": [f"{origin}:10", f"{origin}:11"],
        "identical": [f"{origin}:12", f"{origin}:13"],
    }
    # Pairs read, dropped or not, with a control character: lines 6, 18, 19 (BOM), 22 (\r).
    assert stats["control_chars_replaced"] == 4
    assert 1.0 < stats["median_length_ratio"] < 1.4
    assert (stats["read"], stats["kept"]) == (len(EVERY_KIND), len(expected))
    assert stats["sources"] == {"every": {"origin": origin, "read": 24, "kept": 8}}


@pytest.mark.parametrize(
    ("lang", "pairs", "kept"),
    [
        # l10n.en-zh lines 4 and 109, and shorter ones: characters, not spaces, are tokens.
        (
            "zh",
            [
                ("New top level account", "新建顶级科目"),
                ("Open the file now", "打开"),
                ("Open the new file now", "打开 文件"),  # 4 characters beside a space
                ("Open the old file now", "打开 文"),
            ],
            [0, 2],
        ),
        ("ja", [("Open the file now", "ファイルを開く"), ("Open it now please", "開く")], [0]),
        # Thai: เปิด is four code points (a vowel sign among them), ปิด three.
        ("th", [("Open the file now", "เปิดไฟล์"), ("Open it", "เปิด"), ("Close it", "ปิด")], [0]),
    ],
)
def test_unspaced_scripts_count_characters(
    tmp_path: Path, lang: str, pairs: list[Pair], kept: list[int]
) -> None:
    stats, table = _run(tmp_path, pairs, lang=lang, min_tokens=4)
    assert table == [pairs[i] for i in kept]
    assert _dropped(stats) == {"too_short": len(pairs) - len(kept)}


# -- the real corpus, against the cleaner before it read in blocks --------------------------------
# Recorded on 2026-11-25 from the cleaner of commit 4dd2c7a (line by line, one polars frame a
# batch; the same filters): its statistics and a SHA-256 of its output rows, each row written
# as "id<TAB>en<TAB>xx<TAB>source\n". The block-wise cleaner must give the same, row for row.
# All 36 languages of the corpus gave the same when this was written (de: identical pairs and
# control characters; fa: ZWNJ; ja, zh: no spaces; kk: a URL).
BEFORE = [
    # lang, read, kept, dropped (the filters that dropped any), median ratio, controls, rows
    (
        "de",
        50000,
        27652,
        {"url_or_email": 1, "too_short": 22331, "identical": 15, "length_ratio": 1},
        1.216,
        6,
        "290ec7119df2e5d4823da878f478f68091ddaf7412f24bb8e660751aa4889594",
    ),
    (
        "fa",
        48173,
        21328,
        {"too_short": 26841, "length_ratio": 4},
        0.9833,
        0,
        "ff5c5566d7d6ae781af205eb461ca1c0232c8c03f77005049d4475c6d88b38c3",
    ),
    (
        "ja",
        50000,
        26986,
        {"too_short": 22968, "length_ratio": 46},
        0.5455,
        0,
        "1b74153262bdba9fbefe07010b00d2db5e3e65af981e2848eed687fc6a1a595f",
    ),
    (
        "kk",
        50000,
        21118,
        {"url_or_email": 1, "too_short": 28868, "length_ratio": 13},
        1.0556,
        0,
        "117a3d6d589f8e7efaf265faceb60569158a77199eb54e42e10bb0fa12853b99",
    ),
    (
        "zh",
        50000,
        28366,
        {"url_or_email": 1, "too_short": 21598, "length_ratio": 35},
        0.3333,
        0,
        "2ef4c4de9cc44fce6884c2a51f2bdbe894ddf628f4e63679032ce9986458dae8",
    ),
]


@pytest.mark.slow  # cleans five real 50K-line corpora
@pytest.mark.shared
@pytest.mark.parametrize(
    ("lang", "read", "kept", "dropped", "median", "control", "rows"),
    BEFORE,
    ids=[row[0] for row in BEFORE],
)
def test_the_real_corpus_cleans_as_before(
    tmp_path: Path,
    lang: str,
    read: int,
    kept: int,
    dropped: dict[str, int],
    median: float,
    control: int,
    rows: str,
) -> None:
    if not L10N.is_dir():
        pytest.skip(f"needs the shared l10n corpus at {L10N} (../shared beside the checkout)")
    out = tmp_path / "clean.parquet"
    stats = clean(local.discover(L10N, lang), lang, out)
    assert (stats["read"], stats["kept"], _dropped(stats)) == (read, kept, dropped)
    assert (stats["median_length_ratio"], stats["control_chars_replaced"]) == (median, control)
    digest = hashlib.sha256()
    for row in pl.read_parquet(out).iter_rows():
        digest.update("\t".join(map(str, row)).encode() + b"\n")
    assert digest.hexdigest() == rows
