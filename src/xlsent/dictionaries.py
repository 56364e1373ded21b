"""Bilingual dictionaries, the word pairs that word translation (BLI) is scored on and the
mapping baseline is fitted on.

Dictionaries are read in MUSE's format (one `source target` pair per line) from a path or a
URL (downloaded once through `xlsent.download`), or built from a FreeDict dictionary in dictd
format (the Debian packages `dict-freedict-*`, in any of their three layouts) by
`freedict_pairs`. `split_dictionary` splits a language's dictionaries into a seed part (the
mapping baseline, `xlsent.bisent2vec.mapped`, fits on it) and test parts that share no word
with it (`xlsent.evaluate.bli` scores the test parts).
"""

from __future__ import annotations

import gzip
import os
import random
import re
import unicodedata
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from xlsent.failures.errors import XlsentError
from xlsent.io import atomic_path


class DictionaryError(XlsentError):
    """A dictionary file that cannot be read; the message names the file, line and fix."""


def read_muse(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """The (source, target) pairs of a MUSE dictionary: `source target` per line.

    Words are separated by a space or a tab; blank lines are skipped; anything else fails
    with the file and line.
    """
    path = Path(path)
    pairs = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2:
                raise DictionaryError(
                    f"{path}:{lineno}: expected `source target` (two words), got {line.strip()!r}"
                    "; a MUSE dictionary holds one word pair per line"
                )
            pairs.append((parts[0], parts[1]))
    if not pairs:
        raise DictionaryError(f"{path} holds no word pairs")
    return pairs


def write_muse(pairs: Iterable[tuple[str, str]], path: str | os.PathLike[str]) -> int:
    """Write pairs in MUSE's format (tab-separated); return how many."""
    n = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for src, tgt in pairs:
            f.write(f"{src}\t{tgt}\n")
            n += 1
    return n


def load_dictionary(
    source: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None
) -> list[tuple[str, str]]:
    """A MUSE dictionary from a local path or an http(s) URL (downloaded into `cache_dir`)."""
    text = str(source)
    if urlparse(text).scheme in ("http", "https"):
        from xlsent.download import download

        if cache_dir is None:
            raise DictionaryError(
                f"{text} is a URL: give a cache directory to download it into, or download "
                "the dictionary by hand and pass its path"
            )
        dest = Path(cache_dir) / Path(urlparse(text).path).name
        download(text, dest)
        return read_muse(dest)
    if not Path(source).is_file():
        raise FileNotFoundError(
            f"dictionary {source} not found: pass a MUSE file (`source target` per line), "
            "a URL, or build one from FreeDict with `xlsent bli-dictionary`"
        )
    return read_muse(source)


_B64_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64 = {c: i for i, c in enumerate(_B64_DIGITS)}
_BRACKETED = re.compile(r"<[^>]*>|\[[^\]]*\]|\{[^}]*\}|\([^)]*\)")
_TAG = re.compile(r"\[[^\]]*\]")
_PRONUNCIATION = re.compile(r"/+[^/\n]*/+")
_HEADWORD_END = re.compile(r" /| <| \(| \[")
_SENSE = re.compile(r"^(\d+)\.\s+")
# Arabic tashkil (harakat, shadda, sukun, …) and tatweel, and the stress accents of
# Cyrillic words (a combining grave or acute that NFKC leaves uncomposed: `кни́га`):
# FreeDict's words carry them, running text (and so the corpus) mostly does not.
_MARKS = re.compile("[\u0640\u064b-\u065f\u0670\u0300\u0301]")


def _b64(number: str) -> int:
    value = 0
    for ch in number:
        value = value * 64 + _B64[ch]
    return value


def normalise_word(word: str, lowercase: bool = True) -> str:
    """A dictionary word as the corpus spells it: NFKC (`ĳ` → `ij`, Greek oxia → tonos),
    Arabic tashkil and tatweel and Cyrillic stress accents removed, lowercased (by
    default)."""
    word = _MARKS.sub("", unicodedata.normalize("NFKC", word.strip()))
    return word.lower() if lowercase else word


def is_word(text: str) -> bool:
    """One word: a letter first, then letters, combining marks (Devanagari's vowel signs),
    digits, `'` or `-`, a letter, mark or digit last."""
    # `str.isalpha` is exactly "every character of a category L*" (Python's own Unicode
    # tables, as `unicodedata`'s): most words are letters only, and a dictionary has 10^5.
    if text.isalpha():
        return True
    if not text or not unicodedata.category(text[0]).startswith("L"):
        return False
    for ch in text:
        if not unicodedata.category(ch).startswith(("L", "M", "N")) and ch not in "'-":
            return False
    return text[-1] not in "'-"


def _headwords(line: str) -> list[str]:
    """The headword(s) of an entry's first line: `run /ɹˈʌn/ (ran …) <v>` → run; Japanese
    entries list several spellings, each with its pronunciation and priority tags
    (`[news1] 十億 /…/, [news1] じゅうおく /…/`)."""
    line = _TAG.sub(" ", line)
    pieces = _PRONUNCIATION.split(line)
    if len(pieces) == 1:  # no pronunciation: the headword ends where its annotations start
        return [_HEADWORD_END.split(line, maxsplit=1)[0].strip()]
    # Every piece before a pronunciation is a spelling (the last piece follows the last one),
    # but for those inside parentheses: Ding's inflections (`go /…/ (went /…/, gone /…/)`).
    out, depth = [], 0
    for piece in pieces[:-1]:
        if depth == 0 and piece.strip(" ,"):
            out.append(piece.strip(" ,"))
        depth += piece.count("(") - piece.count(")")
    return out


def _translation_lines(lines: list[str]) -> list[str]:
    """The lines of an entry (after the headword line) that hold its translations.

    FreeDict's dictd files come in three layouts: Ding's (one line of comma-separated
    translations, then indented examples, synonyms and `see:` references), TEI's (the same,
    sometimes after a blank line, often followed by an unindented definition in the source
    language: `kerb` → `reunakiveys, …` then `edge between pavement and roadway`), and
    numbered senses (`1. Lacerates`, `2. Mutilates`, each maybe followed by a definition or
    an indented example). Numbered senses give their numbered lines; otherwise the first
    line with more than annotations (a part of speech in parentheses, as in jpn-eng, is
    not) is the one.
    """
    numbered = [_SENSE.sub("", line) for line in lines if _SENSE.match(line)]
    if numbered:
        return numbered
    for line in lines:
        if line.startswith(("  ", "\t")):  # an example, synonym or note
            continue
        if _BRACKETED.sub("", line).strip():
            return [line]
    return []


def _entry_pairs(entry: str, lowercase: bool) -> list[tuple[str, str]]:
    """The single-word translation pairs of one FreeDict entry (`_translation_lines`).

    Translations are comma- or semicolon-separated, annotated with `<gender, pos>`,
    `[domain]`, `{…}` and `(…)`, which are dropped; a trailing full stop is dropped. Multi-
    word headwords and translations are left out, as a MUSE dictionary holds words.
    """
    lines = entry.split("\n")
    sources = [normalise_word(w, lowercase) for w in _headwords(lines[0])]
    sources = [w for w in sources if is_word(w)]
    if not sources:
        return []
    out = []
    for line in _translation_lines(lines[1:]):
        for candidate in re.split(r"[,;]", _BRACKETED.sub(" ", line)):
            word = normalise_word(candidate.strip().rstrip("."), lowercase)
            if is_word(word):
                out.extend((source, word) for source in sources)
    return out


@dataclass(frozen=True)
class SplitSettings:
    """`evaluate.bli` less `dictionaries` (workflow/schemas/config.schema.yaml): the share of
    English words whose pairs make the seed dictionary, and the shuffle's seed."""

    seed_share: float
    seed: int


def split_dictionary(
    pairs: dict[str, Sequence[tuple[str, str]]], seed_share: float, seed: int
) -> tuple[list[tuple[str, str]], dict[str, list[tuple[str, str]]]]:
    """A language's dictionaries split into a seed part and a test part per direction.

    `pairs` maps a direction (`en2xx`, `xx2en`) to its dictionary, source words first. The
    English words of all of them, sorted, are shuffled with `seed` and the first
    `seed_share` of them are the seed's: the seed dictionary is every pair (en, xx) of any
    direction whose English word is one of them. A test pair shares no word with the seed
    dictionary (neither its English nor its foreign word), so that no test pair is a seed
    pair and no test source word is a seed source word, in either direction: a mapping
    fitted on the seed (`method: mapped`) is never tested on what it was fitted on, and one
    seed serves both directions. Returns the seed pairs (en, xx), sorted, and each
    direction's test pairs in its own order.
    """
    if not 0 <= seed_share < 1:
        raise ValueError(f"seed_share must be in [0, 1), got {seed_share}")
    unknown = set(pairs) - {"en2xx", "xx2en"}
    if unknown:
        raise ValueError(f"unknown directions {sorted(unknown)}: use en2xx and xx2en")
    as_en_xx = {
        direction: [(a, b) if direction == "en2xx" else (b, a) for a, b in dictionary]
        for direction, dictionary in pairs.items()
    }
    english = sorted({en for dictionary in as_en_xx.values() for en, _ in dictionary})
    random.Random(seed).shuffle(english)
    seed_english = set(english[: round(seed_share * len(english))])
    seed_pairs = sorted({(en, xx) for d in as_en_xx.values() for en, xx in d if en in seed_english})
    seed_foreign = {xx for _, xx in seed_pairs}
    tests = {
        direction: [
            pair
            for pair, (en, xx) in zip(pairs[direction], dictionary, strict=True)
            if en not in seed_english and xx not in seed_foreign
        ]
        for direction, dictionary in as_en_xx.items()
    }
    return seed_pairs, tests


# Known misspellings of a FreeDict dictionary's language, by its ISO 639-3 code (the Debian
# name's): eng-hun writes Hungarian's ő and ű as ô and û (14,000 of its 99,000 pairs; hun-eng
# spells them right), letters Hungarian does not have.
SPELLING_FIXES = {"hun": str.maketrans("ôûÔÛ", "őűŐŰ")}
_FREEDICT_NAME = re.compile(r"^freedict-([a-z]{3})-([a-z]{3})\.(?:dict|dict\.dz|index)$")


def freedict_languages(path: str | os.PathLike[str]) -> tuple[str, str] | None:
    """The (source, target) ISO 639-3 codes of a FreeDict file by its Debian name
    (`freedict-eng-deu.dict.dz` → eng, deu); None for another name."""
    match = _FREEDICT_NAME.match(Path(path).name)
    return (match[1], match[2]) if match else None


def freedict_package(path: str | os.PathLike[str]) -> str | None:
    """The Debian package that installs a FreeDict file (`dict-freedict-eng-deu`), by its name."""
    langs = freedict_languages(path)
    return f"dict-freedict-{langs[0]}-{langs[1]}" if langs else None


def freedict_pairs(
    dict_path: str | os.PathLike[str],
    index_path: str | os.PathLike[str] | None = None,
    *,
    lowercase: bool = True,
) -> list[tuple[str, str]]:
    """MUSE pairs (source word, target word) from a FreeDict dictionary in dictd format.

    `dict_path` is the `.dict.dz` (dictzip, which gzip reads) or a plain `.dict`; the index
    (`.index`, one `headword<TAB>offset<TAB>length` line per entry, numbers in dictd's
    base64) defaults to the same name with `.index`. Pairs come in index order, without
    duplicates; the dictionary's own `00-database-*` entries are skipped. Words are
    normalised (`normalise_word`), and where a dictionary of the Debian name
    `freedict-{src}-{tgt}` is known to misspell a language, its words are fixed
    (`SPELLING_FIXES`).
    """
    dict_path = Path(dict_path)
    package = freedict_package(dict_path) or "dict-freedict-eng-deu"
    fixes = [SPELLING_FIXES.get(lang) for lang in freedict_languages(dict_path) or ("", "")]
    if index_path is None:
        stem = dict_path.name.removesuffix(".dz").removesuffix(".dict")
        index_path = dict_path.with_name(stem + ".index")
    index_path = Path(index_path)
    for path in (dict_path, index_path):
        if not path.is_file():
            raise FileNotFoundError(
                f"FreeDict file {path} not found; on Debian install it with `apt-get install "
                f"{package}` (or the package of your language pair)"
            )
    opener = gzip.open if dict_path.suffix == ".dz" else open
    try:
        with opener(dict_path, "rb") as f:
            data = f.read()
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise DictionaryError(
            f"{dict_path}: the dictzip data ends early or is corrupt ({err}): reinstall the "
            f"package it came from (`apt-get install --reinstall {package}`, or that of your "
            f"language pair); `gzip -t {dict_path}` checks the file"
        ) from err
    seen_entries: set[tuple[int, int]] = set()
    pairs: dict[tuple[str, str], None] = {}
    with open(index_path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                raise DictionaryError(
                    f"{index_path}:{lineno}: expected `headword<TAB>offset<TAB>length`; "
                    "is this a dictd index?"
                )
            headword = parts[0]
            if not headword or headword.startswith(("00-database", "00database")):
                continue
            try:
                key = (_b64(parts[1]), _b64(parts[2]))
            except KeyError:
                raise DictionaryError(
                    f"{index_path}:{lineno}: offset {parts[1]!r} or length {parts[2]!r} is not "
                    "dictd base64"
                ) from None
            if key in seen_entries:
                continue
            seen_entries.add(key)
            entry = data[key[0] : key[0] + key[1]].decode("utf-8", errors="replace")
            for src, tgt in _entry_pairs(entry, lowercase):
                if fixes[0]:
                    src = src.translate(fixes[0])
                if fixes[1]:
                    tgt = tgt.translate(fixes[1])
                pairs[src, tgt] = None
    if not pairs:
        raise DictionaryError(f"{dict_path} yielded no single-word translation pairs")
    return list(pairs)
