"""OPUS as a corpus source: the manifest of corpora, their download URLs and their Moses zips.

The manifest (`resources/opus.yaml`) lists, per OPUS corpus, its release and the languages it
pairs with English. OPUS serves each pair as
`{base_url}/OPUS-{corpus}/{version}/moses/{a}-{b}.txt.zip`, `{a}-{b}` being the two OPUS codes
in alphabetical order, and the zip holds `{corpus}.{a}-{b}.{a}` and `{corpus}.{a}-{b}.{b}`
(plus README, LICENSE and sometimes `.ids`/`.xml` files). OPUS codes are mostly ISO 639-1,
but not always (OpenSubtitles calls Simplified Chinese `zh_cn`), so the manifest maps our code
to OPUS's where they differ.
"""

from __future__ import annotations

import logging
import os
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from xlsent import languages
from xlsent.corpus.bitext import Bitext, CorpusError, moses_zip
from xlsent.corpus.readers.local import pair_name
from xlsent.download import download
from xlsent.io import file_error

logger = logging.getLogger(__name__)

OPUS_API = (
    "https://opus.nlpl.eu/opusapi/?source=en&target={lang}&preprocessing=moses&version=latest"
)
_CORPUS_KEYS = {"version", "languages", "opus_codes"}
# OPUS names and codes go into URLs and file names: keep them to plain characters.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class ManifestError(CorpusError):
    """The OPUS manifest is malformed; the message names the file and the key."""


@dataclass(frozen=True)
class OpusCorpus:
    name: str  # OPUS's name, as in the URL (e.g. "OpenSubtitles")
    version: str  # the OPUS release (e.g. "v2018")
    languages: dict[str, str]  # ISO 639-1 code -> OPUS code, in manifest order


@dataclass(frozen=True)
class Manifest:
    path: Path  # where it was read from, for messages
    base_url: str  # without a trailing slash
    corpora: dict[str, OpusCorpus]  # in manifest order


@dataclass(frozen=True)
class Archive:
    """One OPUS Moses zip: a corpus release for one English pair."""

    corpus: str
    version: str
    lang: str  # our ISO 639-1 code
    opus_code: str  # OPUS's code for `lang`
    pair: str  # OPUS's pair name, e.g. "en-zh_cn"
    url: str


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read and validate an OPUS manifest (see resources/opus.yaml for the layout)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(
            f"OPUS manifest {path} does not exist: point to a manifest laid out like "
            "resources/opus.yaml"
        ) from None
    except yaml.YAMLError as err:
        raise ManifestError(f"{path} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: expected a mapping with keys base_url and corpora")
    unknown = sorted(set(data) - {"base_url", "corpora"})
    if unknown:
        raise ManifestError(
            f"{path}: unknown top-level key(s) {unknown}; allowed: base_url, corpora"
        )

    base_url = data.get("base_url")
    if not isinstance(base_url, str) or not re.match(r"https?://[^/]", base_url):
        raise ManifestError(
            f"{path}: base_url must be an http(s) URL such as https://object.pouta.csc.fi, "
            f"not {base_url!r}"
        )
    corpora_data = data.get("corpora")
    if not isinstance(corpora_data, dict) or not corpora_data:
        raise ManifestError(
            f"{path}: corpora must be a non-empty mapping of OPUS corpus name to "
            "{version, languages}"
        )
    corpora = {}
    for name, spec in corpora_data.items():
        corpora[str(name)] = _parse_corpus(path, name, spec)
    return Manifest(path, base_url.rstrip("/"), corpora)


def _parse_corpus(path: Path, name: Any, spec: Any) -> OpusCorpus:
    where = f"{path}: corpora.{name}"
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ManifestError(
            f"{where}: a corpus name must be OPUS's name, e.g. Tanzil or OpenSubtitles"
        )
    if not isinstance(spec, dict):
        raise ManifestError(f"{where}: expected a mapping with version and languages")
    unknown = sorted(set(spec) - _CORPUS_KEYS)
    if unknown:
        raise ManifestError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(_CORPUS_KEYS)}")

    version = spec.get("version")
    if not isinstance(version, str) or not _NAME.fullmatch(version):
        raise ManifestError(
            f'{where}.version must be the OPUS release as a quoted string (e.g. "v1" or '
            f'"v1.0"), not {version!r}'
        )

    langs = spec.get("languages")
    if not isinstance(langs, list) or not langs or not all(isinstance(x, str) for x in langs):
        raise ManifestError(f"{where}.languages must be a non-empty list of ISO 639-1 codes")
    for code in langs:
        try:
            lang = languages.get(code)
        except languages.UnknownLanguageError as err:
            raise ManifestError(f"{where}.languages: {err}") from None
        if lang == languages.ENGLISH:
            raise ManifestError(
                f"{where}.languages: 'en' is the pivot of every pair; list only the other side"
            )
    duplicates = sorted({code for code in langs if langs.count(code) > 1})
    if duplicates:
        raise ManifestError(f"{where}.languages lists {duplicates} more than once")

    opus_codes = spec.get("opus_codes") or {}
    if not isinstance(opus_codes, dict):
        raise ManifestError(
            f"{where}.opus_codes must map ISO codes to OPUS codes, e.g. {{zh: zh_cn}}"
        )
    for code, opus_code in opus_codes.items():
        if code not in langs:
            raise ManifestError(
                f"{where}.opus_codes.{code}: {code!r} is not in {name}'s languages; add it there "
                "or remove the mapping"
            )
        if not isinstance(opus_code, str) or not _NAME.fullmatch(opus_code) or "-" in opus_code:
            raise ManifestError(
                f"{where}.opus_codes.{code} must be an OPUS language code such as zh_cn, "
                f"not {opus_code!r}"
            )
    return OpusCorpus(name, version, {code: opus_codes.get(code, code) for code in langs})


def _corpus(manifest: Manifest, corpus: str) -> OpusCorpus:
    try:
        return manifest.corpora[corpus]
    except KeyError:
        raise CorpusError(
            f"corpus {corpus!r} is not in the OPUS manifest {manifest.path}; it lists "
            f"{', '.join(manifest.corpora)}. Add it there (name, version, languages) or fix "
            "the name (OPUS's spelling, case included)"
        ) from None


def url(manifest: Manifest, corpus: str, lang: str) -> str:
    """The OPUS download URL of `corpus`'s Moses zip for English-`lang`."""
    entry = _corpus(manifest, corpus)
    if lang not in entry.languages:
        raise CorpusError(
            f"{corpus} {entry.version} in {manifest.path} does not list {lang!r}; add it to "
            f"corpora.{corpus}.languages if OPUS has it (check {OPUS_API.format(lang=lang)})"
        )
    return _url(manifest, entry, pair_name(entry.languages[lang]))


def _url(manifest: Manifest, entry: OpusCorpus, pair: str) -> str:
    return f"{manifest.base_url}/OPUS-{entry.name}/{entry.version}/moses/{pair}.txt.zip"


def archives(manifest: Manifest, lang: str, corpora: Iterable[str] | None = None) -> list[Archive]:
    """The OPUS zips of the manifest (only `corpora`, if given) that hold English-`lang`.

    Corpora that do not offer `lang` are skipped (and logged); if none does, CorpusError.
    """
    names = list(manifest.corpora) if corpora is None else list(corpora)
    found = []
    for name in names:
        entry = _corpus(manifest, name)
        opus_code = entry.languages.get(lang)
        if opus_code is None:
            logger.info("%s %s has no English-%s pair; skipping it", name, entry.version, lang)
            continue
        pair = pair_name(opus_code)
        found.append(
            Archive(
                corpus=name,
                version=entry.version,
                lang=lang,
                opus_code=opus_code,
                pair=pair,
                url=_url(manifest, entry, pair),
            )
        )
    if not found:
        raise CorpusError(
            f"no OPUS corpus offers {lang!r}: tried {', '.join(names) or 'no corpora'} in "
            f"{manifest.path}. If OPUS has it (check {OPUS_API.format(lang=lang)}), add {lang} "
            "to a corpus's languages there (and to the corpora the workflow uses); otherwise "
            "put Moses files in a directory and use the local source (corpus.local.dir)"
        )
    return found


def download_archive(
    archive: Archive, dest: str | os.PathLike[str], **download_kwargs: Any
) -> Path:
    """Download `archive` (resumably) to the file `dest`; return its path."""
    dest = Path(dest)
    hint = (
        f"Check that OPUS has {archive.corpus} {archive.version} for {archive.pair} "
        f"({OPUS_API.format(lang=archive.opus_code)}) and fix the manifest entry, or download "
        f"{archive.url} by hand, unzip it into a directory and use the local source "
        "(corpus.local.dir)."
    )
    download_kwargs.setdefault("hint", hint)
    download(archive.url, dest, **download_kwargs)
    return dest


def bitext_from_zip(
    zip_path: str | os.PathLike[str], corpus: str, lang: str, opus_code: str | None = None
) -> Bitext:
    """The English-`lang` bitext in an OPUS Moses zip of `corpus` (members found by OPUS naming)."""
    zip_path = Path(zip_path)
    opus_code = opus_code or lang
    pair = pair_name(opus_code)
    en_member, xx_member = f"{corpus}.{pair}.en", f"{corpus}.{pair}.{opus_code}"
    try:
        with zipfile.ZipFile(zip_path) as archive:
            members = [info.filename for info in archive.infolist() if not info.is_dir()]
    except FileNotFoundError:
        raise CorpusError(f"{zip_path} does not exist: download it first") from None
    except zipfile.BadZipFile as err:
        raise CorpusError(
            f"{zip_path} is not a readable zip archive ({err}); it may be cut off or an error "
            "page saved under that name: delete it and rerun the workflow to download it again "
            "(the download rule, opus_download, fetches a zip that is missing)"
        ) from None
    except OSError as err:
        error = file_error(err, zip_path, "read", CorpusError)
        if error is None:
            raise
        raise error from err
    missing = [name for name in (en_member, xx_member) if name not in members]
    if missing:
        raise CorpusError(
            f"{zip_path} has no {' or '.join(missing)} (the {corpus} {pair} Moses files as OPUS "
            f"names them); its members are: {', '.join(members) or 'none'}. Check the corpus "
            f"name and the OPUS code of {lang!r} in the manifest, or that this is the right file"
        )
    return moses_zip(corpus, zip_path, en_member, xx_member)
