"""Moses bitexts (plain and gzip) and the local source that finds them in a directory."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from support import SHARED

from xlsent.corpus.bitext import CorpusError, moses_files
from xlsent.corpus.readers import local

L10N = SHARED / "l10n"

# Real en-kk pairs (the first lines of the shared l10n corpus), so these tests need no ../shared.
EN = [
    b"Blue chroma balance.",
    b"Show CPU chart as stacked area chart",
    b"Teletext: additional information",
]
KK = [
    "Көк түстіліктің теңгерімі.".encode(),
    "Процессор графигін қабатты аймақтар ретінде көрсету".encode(),
    "Телемәтін: қосымша ақпарат".encode(),
]


def _write(path: Path, lines: list[bytes], ending: bytes = b"\n", last: bool = True) -> Path:
    """A Moses file (gzip if the name ends in .gz); `last=False` leaves off the final ending."""
    data = ending.join(lines) + (ending if last else b"")
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def _touch(directory: Path, *names: str) -> None:
    for name in names:
        _write(directory / name, EN)


def _l10n() -> Path:
    if not L10N.is_dir():
        pytest.skip(f"needs the shared l10n corpus at {L10N} (../shared beside the checkout)")
    return L10N


# -- reading -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("en_name", "xx_name"), [("c.en", "c.kk"), ("c.en.gz", "c.kk.gz")])
def test_lines_are_numbered_from_one_without_line_endings(
    tmp_path: Path, en_name: str, xx_name: str
) -> None:
    en = _write(tmp_path / en_name, EN, ending=b"\r\n")  # Windows endings on one side only
    xx = _write(tmp_path / xx_name, KK, last=False)  # and no newline after the last line
    assert list(moses_files("c", en, xx).lines()) == [(i + 1, EN[i], KK[i]) for i in range(3)]


def test_plain_and_gzip_sides_mix(tmp_path: Path) -> None:
    bitext = moses_files("c", _write(tmp_path / "c.en", EN), _write(tmp_path / "c.kk.gz", KK))
    assert [a for _, a, _ in bitext.lines()] == EN
    assert [b for _, _, b in bitext.lines()] == KK  # and it can be read again


def test_empty_lines_and_inner_carriage_returns_are_kept(tmp_path: Path) -> None:
    # An empty line keeps the alignment (cleaning drops it, counted); a lone \r is not an ending.
    en = _write(tmp_path / "c.en", [b"", b"a\rb", b"last\r"])
    xx = _write(tmp_path / "c.kk", [b"x", b"", b"y"])
    assert list(moses_files("c", en, xx).lines()) == [
        (1, b"", b"x"),
        (2, b"a\rb", b""),
        (3, b"last", b"y"),
    ]


@pytest.mark.parametrize("shorter", ["en", "kk"])
def test_mismatched_line_counts_name_both_files(tmp_path: Path, shorter: str) -> None:
    sides = {"en": EN, "kk": KK}
    sides[shorter] = sides[shorter][:2]
    en = _write(tmp_path / "c.en.gz", sides["en"])
    xx = _write(tmp_path / "c.kk", sides["kk"])
    short, long = (en, xx) if shorter == "en" else (xx, en)
    with pytest.raises(CorpusError) as err:
        list(moses_files("c", en, xx).lines())
    message = str(err.value)
    assert f"{short} ends after 2 lines but {long} goes on" in message


# -- discovery -----------------------------------------------------------------------------------
def test_discover_finds_corpora_sorted_plain_or_gzip(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "Tanzil.en-kk.en",
        "Tanzil.en-kk.kk.gz",
        "Bible.v1.en-kk.en.gz",  # corpus names may hold dots (versions)
        "Bible.v1.en-kk.kk",
        "Tanzil.en-kk.ids",  # what else an OPUS Moses zip holds: not a side
        "Tanzil.en-kk.xml",
        "README",
        "LICENSE",
        "Tanzil.de-en.de",  # another language's files
        "Tanzil.de-en.en",
    )
    bitexts = local.discover(tmp_path, "kk")
    assert [b.corpus for b in bitexts] == ["Bible.v1", "Tanzil"]
    assert [(b.en_origin, b.xx_origin) for b in bitexts] == [
        (str(tmp_path / "Bible.v1.en-kk.en.gz"), str(tmp_path / "Bible.v1.en-kk.kk")),
        (str(tmp_path / "Tanzil.en-kk.en"), str(tmp_path / "Tanzil.en-kk.kk.gz")),
    ]
    assert [a for _, a, _ in bitexts[0].lines()] == EN


def test_discover_names_the_pair_in_alphabetical_order(tmp_path: Path) -> None:
    _touch(tmp_path, "Europarl.de-en.de", "Europarl.de-en.en", "Europarl.en-kk.kk")
    _touch(tmp_path, "Europarl.en-kk.en")
    assert [b.xx_origin for b in local.discover(tmp_path, "de")] == [
        str(tmp_path / "Europarl.de-en.de")
    ]
    assert local.pair_name("de") == "de-en" and local.pair_name("kk") == "en-kk"
    # `en-de` is not how OPUS names the pair: such files are not German files.
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    _touch(wrong, "Europarl.en-de.de", "Europarl.en-de.en")
    with pytest.raises(CorpusError, match=r"no corpus for de: expected files named"):
        local.discover(wrong, "de")


def test_discover_keeps_only_the_requested_corpora(tmp_path: Path) -> None:
    _touch(tmp_path, "Tanzil.en-kk.en", "Tanzil.en-kk.kk", "Bible.en-kk.en", "Bible.en-kk.kk")
    assert [b.corpus for b in local.discover(tmp_path, "kk", ["Tanzil"])] == ["Tanzil"]


def test_a_requested_corpus_that_is_absent_is_an_error(tmp_path: Path) -> None:
    _touch(tmp_path, "Tanzil.en-kk.en", "Tanzil.en-kk.kk")
    with pytest.raises(CorpusError, match=r"QED\.en-kk\.en\[\.gz\] is missing"):
        local.discover(tmp_path, "kk", ["Tanzil", "QED"])


@pytest.mark.parametrize(
    ("present", "missing"),
    [("Tanzil.en-kk.en.gz", "Tanzil.en-kk.kk[.gz]"), ("Tanzil.en-kk.kk", "Tanzil.en-kk.en[.gz]")],
)
def test_a_missing_side_names_the_missing_file(tmp_path: Path, present: str, missing: str) -> None:
    _touch(tmp_path, present)
    with pytest.raises(CorpusError) as err:
        local.discover(tmp_path, "kk")
    assert f"{tmp_path}: {missing} is missing" in str(err.value)


def test_an_absent_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="is not a directory"):
        local.discover(tmp_path / "nowhere", "kk")
    _touch(tmp_path, "a-file")
    with pytest.raises(CorpusError, match="is not a directory"):
        local.discover(tmp_path / "a-file", "kk")


def test_an_empty_directory_or_a_language_without_files_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"has no corpus for kk: .*Tanzil\.en-kk\.kk"):
        local.discover(tmp_path, "kk")
    _touch(tmp_path, "Tanzil.en-kk.en", "Tanzil.en-kk.kk")
    with pytest.raises(CorpusError, match=r"has no corpus for ka: .*remove 'ka' from `languages`"):
        local.discover(tmp_path, "ka")


# -- the real corpus -----------------------------------------------------------------------------
@pytest.mark.shared
@pytest.mark.parametrize(("lang", "pair"), [("kk", "en-kk"), ("de", "de-en"), ("sw", "en-sw")])
def test_discover_the_shared_l10n_corpus(lang: str, pair: str) -> None:
    directory = _l10n()
    (bitext,) = local.discover(directory, lang)
    assert bitext.corpus == "l10n"
    assert bitext.en_origin == str(directory / f"l10n.{pair}.en.gz")
    assert bitext.xx_origin == str(directory / f"l10n.{pair}.{lang}.gz")
    with gzip.open(directory / f"l10n.{pair}.{lang}.gz", "rb") as f:
        expected = f.read().removesuffix(b"\n").split(b"\n")
    lines = list(bitext.lines())
    assert [b for _, _, b in lines] == expected
    assert lines[-1][0] == len(expected) and all(a for _, a, _ in lines)
