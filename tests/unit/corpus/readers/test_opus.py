"""The OPUS source: manifest, URLs, archive selection, Moses zips and a served download."""

from __future__ import annotations

import gzip
import logging
import zipfile
from itertools import islice
from pathlib import Path

import pytest
from support import ROOT, SHARED

from xlsent.corpus.bitext import CorpusError
from xlsent.corpus.readers.opus import (
    Manifest,
    ManifestError,
    archives,
    bitext_from_zip,
    download_archive,
    load_manifest,
    url,
)
from xlsent.download import DownloadError, sidecar_path
from xlsent.languages import GROUPS

MANIFEST = ROOT / "resources" / "opus.yaml"
L10N = SHARED / "l10n"

README = b"This is a Moses-format download from OPUS.\n"
LICENSE = b"Check the licence of the original corpus.\n"


def _l10n_lines(n: int) -> tuple[list[bytes], list[bytes]]:
    """The first `n` lines of the real en-kk l10n corpus in ../shared (skip without it)."""
    en_path, kk_path = L10N / "l10n.en-kk.en.gz", L10N / "l10n.en-kk.kk.gz"
    if not (en_path.is_file() and kk_path.is_file()):
        pytest.skip(f"needs the shared l10n corpus ({en_path}, {kk_path}); ../shared is absent")
    with gzip.open(en_path, "rb") as en, gzip.open(kk_path, "rb") as kk:
        en_lines = [line.rstrip(b"\n") for line in islice(en, n)]
        kk_lines = [line.rstrip(b"\n") for line in islice(kk, n)]
    return en_lines, kk_lines


def _sample_pairs() -> tuple[list[bytes], list[bytes]]:
    """Real en-kk lines: from the shared l10n corpus when present, else a few written here."""
    if (L10N / "l10n.en-kk.en.gz").is_file():
        return _l10n_lines(300)
    pairs = [
        ("Open the file", "Файлды ашу"),
        ("Save changes before closing?", "Жабу алдында өзгерістерді сақтау керек пе?"),
        ("The printer is out of paper.", "Принтерде қағаз бітті."),
    ]
    return [a.encode() for a, _ in pairs], [b.encode() for _, b in pairs]


def _write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _opus_zip(path: Path, corpus: str, code: str, en: list[bytes], xx: list[bytes]) -> Path:
    """A zip laid out as OPUS's Moses downloads: both sides, README and LICENSE."""
    pair = "-".join(sorted(("en", code)))
    return _write_zip(
        path,
        {
            f"{corpus}.{pair}.en": b"".join(line + b"\n" for line in en),
            f"{corpus}.{pair}.{code}": b"".join(line + b"\n" for line in xx),
            "README": README,
            "LICENSE": LICENSE,
        },
    )


def _manifest(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "opus.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest(MANIFEST)


# --- the manifest shipped in resources/ ---------------------------------------------------


def test_shipped_manifest_offers_every_xtreme_language(manifest):
    assert manifest.base_url == "https://object.pouta.csc.fi"
    assert list(manifest.corpora) == [
        "Europarl",
        "UNPC",
        "MultiUN",
        "OpenSubtitles",
        "Tanzil",
        "CCMatrix",
        "WikiMatrix",
    ]
    for lang in GROUPS["xtreme36"]:
        assert archives(manifest, lang), lang


def test_url_with_english_first(manifest):
    assert (
        url(manifest, "OpenSubtitles", "kk")
        == "https://object.pouta.csc.fi/OPUS-OpenSubtitles/v2018/moses/en-kk.txt.zip"
    )


def test_url_with_english_last(manifest):
    assert (
        url(manifest, "Europarl", "de")
        == "https://object.pouta.csc.fi/OPUS-Europarl/v8/moses/de-en.txt.zip"
    )


def test_url_uses_the_opus_code_alias(manifest):
    assert (
        url(manifest, "OpenSubtitles", "zh")
        == "https://object.pouta.csc.fi/OPUS-OpenSubtitles/v2018/moses/en-zh_cn.txt.zip"
    )
    # Other corpora call Chinese plain zh.
    assert (
        url(manifest, "UNPC", "zh")
        == "https://object.pouta.csc.fi/OPUS-UNPC/v1.0/moses/en-zh.txt.zip"
    )


def test_url_for_a_language_the_corpus_lacks(manifest):
    with pytest.raises(CorpusError, match=r"Europarl v8 .* does not list 'kk'.*opusapi"):
        url(manifest, "Europarl", "kk")
    with pytest.raises(CorpusError, match=r"'Paracrawl' is not in the OPUS manifest"):
        url(manifest, "Paracrawl", "de")


def test_archives_skip_corpora_without_the_language(manifest, caplog):
    with caplog.at_level(logging.INFO, logger="xlsent.corpus.readers.opus"):
        found = archives(manifest, "zh", ["Europarl", "OpenSubtitles", "UNPC"])
    assert [(a.corpus, a.version, a.opus_code, a.pair) for a in found] == [
        ("OpenSubtitles", "v2018", "zh_cn", "en-zh_cn"),
        ("UNPC", "v1.0", "zh", "en-zh"),
    ]
    assert found[0].url == url(manifest, "OpenSubtitles", "zh")
    assert found[0].lang == "zh"
    assert "Europarl v8 has no English-zh pair" in caplog.text


def test_language_no_corpus_offers_names_what_was_tried_and_the_fix(manifest):
    with pytest.raises(CorpusError) as info:
        archives(manifest, "kk", ["Europarl", "UNPC"])
    message = str(info.value)
    assert "'kk'" in message
    assert "Europarl, UNPC" in message
    assert str(MANIFEST) in message
    assert "corpus.local.dir" in message


# --- manifest validation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("corpora: {Tanzil: {version: v1, languages: [kk]}}\n", "base_url must be an http"),
        ("base_url: https://x.org\n", "corpora must be a non-empty mapping"),
        ("base_url: https://x.org\nextra: 1\ncorpora: {}\n", "unknown top-level key(s) ['extra']"),
        (
            "base_url: https://x.org\ncorpora: {Tanzil: {version: 1.0, languages: [kk]}}\n",
            "corpora.Tanzil.version must be the OPUS release as a quoted string",
        ),
        (
            "base_url: https://x.org\ncorpora: {Tanzil: {version: v1, languages: [kz]}}\n",
            "corpora.Tanzil.languages: unknown language code 'kz'",
        ),
        (
            "base_url: https://x.org\ncorpora: {Tanzil: {version: v1, languages: [en, kk]}}\n",
            "corpora.Tanzil.languages: 'en' is the pivot",
        ),
        (
            "base_url: https://x.org\ncorpora: {Tanzil: {version: v1, languages: [kk, kk]}}\n",
            "corpora.Tanzil.languages lists ['kk'] more than once",
        ),
        (
            "base_url: https://x.org\ncorpora: {Tanzil: {version: v1, language: [kk]}}\n",
            "corpora.Tanzil: unknown key(s) ['language']",
        ),
        (
            "base_url: https://x.org\n"
            "corpora: {Tanzil: {version: v1, languages: [kk], opus_codes: {zh: zh_cn}}}\n",
            "corpora.Tanzil.opus_codes.zh: 'zh' is not in Tanzil's languages",
        ),
        (
            "base_url: https://x.org\n"
            "corpora: {Tanzil: {version: v1, languages: [zh], opus_codes: {zh: zh-cn}}}\n",
            "corpora.Tanzil.opus_codes.zh must be an OPUS language code",
        ),
        ("base_url: https://x.org\ncorpora: [Tanzil]\n", "corpora must be a non-empty mapping"),
        ("base_url: [unclosed\n", "is not valid YAML"),
    ],
)
def test_manifest_errors_name_the_file_and_key(tmp_path, text, expected):
    path = _manifest(tmp_path, text)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_missing_manifest(tmp_path):
    with pytest.raises(ManifestError, match=r"opus\.yaml does not exist"):
        load_manifest(tmp_path / "opus.yaml")


def test_manifest_errors_are_corpus_errors(tmp_path):
    # The workflow reports CorpusError uniformly; manifest problems are a kind of it.
    assert issubclass(ManifestError, CorpusError)


def test_base_url_trailing_slash_is_dropped(tmp_path):
    text = (
        "base_url: http://mirror.example/opus/\ncorpora: {Tanzil: {version: v1, languages: [kk]}}"
    )
    path = _manifest(tmp_path, text)
    assert url(load_manifest(path), "Tanzil", "kk") == (
        "http://mirror.example/opus/OPUS-Tanzil/v1/moses/en-kk.txt.zip"
    )


# --- reading OPUS zips -----------------------------------------------------------------------


@pytest.mark.shared
def test_opus_zip_reads_back_the_lines_written(tmp_path):
    en, kk = _l10n_lines(500)
    path = _opus_zip(tmp_path / "en-kk.txt.zip", "Tanzil", "kk", en, kk)
    bitext = bitext_from_zip(path, "Tanzil", "kk")
    assert bitext.corpus == "Tanzil"
    assert bitext.en_origin == f"{path}:Tanzil.en-kk.en"
    assert bitext.xx_origin == f"{path}:Tanzil.en-kk.kk"
    rows = list(bitext.lines())
    assert rows == [(i, a, b) for i, (a, b) in enumerate(zip(en, kk, strict=True), start=1)]
    assert len(rows) == 500
    # Reading twice gives the same pairs (each read reopens the archive).
    assert list(bitext.lines()) == rows


def test_opus_zip_with_english_last_and_an_opus_code(tmp_path):
    en = [b"The committee met on Tuesday.", b"Thank you."]
    de = [b"Der Ausschuss trat am Dienstag zusammen.", "Danke schön.".encode()]
    path = _opus_zip(tmp_path / "de-en.txt.zip", "Europarl", "de", en, de)
    rows = [row[1:] for row in bitext_from_zip(path, "Europarl", "de").lines()]
    assert rows == list(zip(en, de, strict=True))

    zh = ["委员会星期二开会。".encode(), "谢谢。".encode()]
    path = _opus_zip(tmp_path / "en-zh_cn.txt.zip", "OpenSubtitles", "zh_cn", en, zh)
    bitext = bitext_from_zip(path, "OpenSubtitles", "zh", "zh_cn")
    assert bitext.xx_origin.endswith(":OpenSubtitles.en-zh_cn.zh_cn")
    assert [row[1:] for row in bitext.lines()] == list(zip(en, zh, strict=True))


def test_sides_of_different_length_name_both_members(tmp_path):
    en = [b"One line.", b"Two lines.", b"Three lines."]
    kk = ["Бір жол.".encode(), "Екі жол.".encode()]
    path = _opus_zip(tmp_path / "en-kk.txt.zip", "Tanzil", "kk", en, kk)
    bitext = bitext_from_zip(path, "Tanzil", "kk")
    with pytest.raises(CorpusError) as info:
        list(bitext.lines())
    message = str(info.value)
    assert f"{path}:Tanzil.en-kk.en" in message
    assert f"{path}:Tanzil.en-kk.kk" in message
    assert "after 2 lines" in message


def test_missing_member_lists_what_the_zip_holds(tmp_path):
    path = _write_zip(
        tmp_path / "en-kk.txt.zip",
        {"Tanzil.en-kk.en": b"A line.\n", "Tanzil.en-kk.ids": b"1\t1\n", "README": README},
    )
    with pytest.raises(CorpusError) as info:
        bitext_from_zip(path, "Tanzil", "kk")
    message = str(info.value)
    assert "Tanzil.en-kk.kk" in message
    assert "Tanzil.en-kk.en, Tanzil.en-kk.ids, README" in message
    assert str(path) in message


def test_wrong_corpus_name_lists_the_members(tmp_path):
    path = _opus_zip(tmp_path / "en-kk.txt.zip", "Tanzil", "kk", [b"a b"], [b"c d"])
    with pytest.raises(CorpusError, match=r"no WikiMatrix\.en-kk\.en or WikiMatrix\.en-kk\.kk"):
        bitext_from_zip(path, "WikiMatrix", "kk")


def test_not_a_zip(tmp_path):
    path = tmp_path / "en-kk.txt.zip"
    path.write_bytes(b"<html>Service Unavailable</html>")
    with pytest.raises(CorpusError, match=r"not a readable zip archive.*download it again"):
        bitext_from_zip(path, "Tanzil", "kk")
    with pytest.raises(CorpusError, match=r"does not exist: download it first"):
        bitext_from_zip(tmp_path / "absent.zip", "Tanzil", "kk")


# --- end to end: OPUS's layout served over HTTP ----------------------------------------------


@pytest.fixture
def opus_mirror(static_server) -> tuple[str, Path]:
    """(base URL, document root) of a static HTTP server, to lay out like OPUS."""
    return static_server


def test_download_and_read_an_opus_archive(tmp_path, opus_mirror):
    base_url, root = opus_mirror
    en, kk = _sample_pairs()
    served = root / "OPUS-Tanzil" / "v1" / "moses" / "en-kk.txt.zip"
    served.parent.mkdir(parents=True)
    _opus_zip(served, "Tanzil", "kk", en, kk)
    manifest = load_manifest(
        _manifest(
            tmp_path,
            f"base_url: {base_url}/\n"
            "corpora:\n"
            "  Europarl: {version: v8, languages: [de]}\n"
            "  Tanzil: {version: v1, languages: [kk]}\n",
        )
    )

    (archive,) = archives(manifest, "kk")
    assert archive.url == f"{base_url}/OPUS-Tanzil/v1/moses/en-kk.txt.zip"
    path = download_archive(archive, tmp_path / "downloads" / "kk.zip", backoff=0)

    assert path == tmp_path / "downloads" / "kk.zip"
    assert path.read_bytes() == served.read_bytes()
    assert sidecar_path(path).is_file()
    bitext = bitext_from_zip(path, archive.corpus, archive.lang, archive.opus_code)
    assert list(bitext.lines()) == [
        (i, a, b) for i, (a, b) in enumerate(zip(en, kk, strict=True), start=1)
    ]


def test_download_archive_404_says_how_to_fix_it(tmp_path, opus_mirror):
    base_url, _ = opus_mirror
    manifest = load_manifest(
        _manifest(
            tmp_path,
            f"base_url: {base_url}\ncorpora: {{Tanzil: {{version: v1, languages: [kk]}}}}\n",
        )
    )
    (archive,) = archives(manifest, "kk")
    with pytest.raises(DownloadError) as info:
        download_archive(archive, tmp_path / "downloads" / "kk.zip", backoff=0)
    message = str(info.value)
    assert archive.url in message
    assert "HTTP 404" in message
    assert "Tanzil v1 for en-kk" in message
    assert "corpus.local.dir" in message
    assert not (tmp_path / "downloads" / "kk.zip").exists()
