"""The embedded demo source: real human translations read offline from installed packages.

A fresh machine with no network can still run the whole workflow on text that people
translated: the CLDR display data that Babel ships (territory, language, script, currency,
time-zone and unit names, calendar words) and the gettext catalogs that Django ships (its UI
messages). Nothing is generated and nothing is copied into this repository; the pairs are read
at run time from the installed `xlsent[demo]` extra, so `provenance()` records their versions.

Every pair is English ↔ one language of `xlsent.languages`, tagged with its corpus name
("cldr" or "django"). A stable hash of the English text splits off a held-out part that is
written in the LASER Tatoeba layout, so the evaluation stage can score the demo models on
pairs their training never saw.
"""

from __future__ import annotations

import gettext
import hashlib
import importlib.metadata
import importlib.util
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from xlsent import languages
from xlsent.corpus.bitext import Bitext, CorpusError, in_memory
from xlsent.io import atomic_path

log = logging.getLogger(__name__)

CORPORA = ("cldr", "django")

# Where CLDR or Django name a language differently from our ISO 639-1 codes.
_CLDR_LOCALE = {"tl": "fil"}
_DJANGO_LOCALE = {"zh": "zh_Hans"}

# Format placeholders (`{0}`, `%s`, `%(name)d`, `%%`) and HTML tags mark templates, not text.
_TEMPLATE = re.compile(
    r"\{[^{}]*\}|%(?:\([^)]*\))?[#0 +-]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa%]|<[A-Za-z/!][^>]*>"
)
_MIN_HELDOUT = 10  # fewer test pairs than this make a retrieval score meaningless


def _clean(text: str) -> str:
    # str.split() also splits on \r, NBSP and U+2028, which text-mode readers treat as breaks.
    return " ".join(text.split())


def _usable(text: str) -> bool:
    return bool(text) and not _TEMPLATE.search(text)


# --- CLDR via Babel -------------------------------------------------------------------------


def _babel() -> Any:
    try:
        import babel
    except ImportError:
        raise CorpusError(
            "the demo corpus source needs the 'babel' package (CLDR data): "
            "pip install 'xlsent[demo]'"
        ) from None
    return babel


_Extractor = Callable[[Any], dict[tuple[Any, ...], str]]


def _pick(*path: str) -> _Extractor:
    """An extractor: the strings under `path`, starting from a Locale's public property."""

    def extract(locale: Any) -> dict[tuple[Any, ...], str]:
        node = getattr(locale, path[0])
        for step in path[1:]:
            node = node.get(step, {})
        return {(key,): text for key, text in node.items() if isinstance(text, str)}

    return extract


def _long_names(property_name: str) -> _Extractor:
    """An extractor of the spelled-out zone names (the short ones are codes such as "CET")."""

    def extract(locale: Any) -> dict[tuple[Any, ...], str]:
        return {
            (zone, kind): text
            for zone, names in getattr(locale, property_name).items()
            for kind, text in names.get("long", {}).items()
        }

    return extract


def _unit_names(locale: Any) -> dict[tuple[Any, ...], str]:
    return {
        (unit,): names["long"]
        for unit, names in locale.unit_display_names.items()
        if "long" in names
    }


# Names and calendar words that CLDR's translators enter by hand. Date field names ("last
# year") are missing because Babel ships only their `{0}` templates ("in {0} years").
# Stand-alone months and days are the dictionary forms (Slavic "format" months are genitive).
_CLDR_CATEGORIES: tuple[_Extractor, ...] = (
    _pick("territories"),
    _pick("languages"),
    _pick("scripts"),
    _pick("currencies"),
    _long_names("meta_zones"),
    _long_names("time_zones"),
    _unit_names,
    _pick("months", "stand-alone", "wide"),
    _pick("days", "stand-alone", "wide"),
    _pick("quarters", "stand-alone", "wide"),
    _pick("eras", "wide"),
)


def _cldr_pairs(lang: str) -> list[tuple[str, str]]:
    babel = _babel()
    english = babel.Locale.parse("en")
    locale = babel.Locale.parse(_CLDR_LOCALE.get(lang, lang))
    pairs = []
    for extract in _CLDR_CATEGORIES:
        en_texts, xx_texts = extract(english), extract(locale)
        for key in sorted(en_texts.keys() & xx_texts.keys()):
            en, xx = _clean(en_texts[key]), _clean(xx_texts[key])
            if _usable(en) and _usable(xx):
                pairs.append((en, xx))
    return pairs


# --- Django gettext catalogs ----------------------------------------------------------------


def _django_catalogs(lang: str) -> list[Path]:
    """The .mo files of `lang`: Django's core catalog, then its contrib apps by name."""
    spec = importlib.util.find_spec("django")
    if spec is None or spec.origin is None:
        log.warning(
            "Django is not installed, so the demo corpus has no 'django' pairs: "
            "pip install 'xlsent[demo]'"
        )
        return []
    root = Path(spec.origin).parent
    mo = Path(_DJANGO_LOCALE.get(lang, lang), "LC_MESSAGES", "django.mo")
    apps = sorted(path for path in (root / "contrib").iterdir() if path.is_dir())
    paths = [root / "conf" / "locale" / mo] + [app / "locale" / mo for app in apps]
    return [path for path in paths if path.is_file()]


def _mo_pairs(path: Path) -> Iterator[tuple[str, str]]:
    with open(path, "rb") as f:
        catalog = gettext.GNUTranslations(f)
    # GNUTranslations has no public iterator; `_catalog` maps msgid to msgstr and plural
    # messages to {(msgid, form): msgstr}. `plural(1)` is the form a count of one selects
    # (form 0 is "zero" in Arabic, so it is not always the singular).
    singular = catalog.plural(1)
    entries = []
    for key, msgstr in catalog._catalog.items():  # type: ignore[attr-defined]
        if isinstance(key, tuple):
            msgid, form = key
            if form != singular:
                continue
        else:
            msgid = key
        # "\x04" joins a msgctxt to its msgid: the context picks one of several translations
        # of the same English word, so the English alone does not determine the pair.
        if "\x04" in msgid:
            continue
        entries.append((_clean(msgid), _clean(msgstr)))
    for en, xx in sorted(entries):
        if _usable(en) and _usable(xx):
            yield en, xx


def _django_pairs(lang: str) -> list[tuple[str, str]]:
    return [pair for path in _django_catalogs(lang) for pair in _mo_pairs(path)]


# --- Public API -----------------------------------------------------------------------------


def demo_pairs(lang: str) -> list[tuple[str, str, str]]:
    """All (corpus, English, foreign) pairs for `lang`, in a fixed order.

    CLDR comes first (category by category, sorted by CLDR key), then Django (core catalog,
    then contrib apps by name, each sorted by message).
    """
    if languages.get(lang) == languages.ENGLISH:
        raise languages.UnknownLanguageError(
            "'en' is the pivot of every demo pair; ask for the other language"
        )
    return [("cldr", en, xx) for en, xx in _cldr_pairs(lang)] + [
        ("django", en, xx) for en, xx in _django_pairs(lang)
    ]


def _unit_hash(text: str, salt: str = "") -> float:
    """A number in [0, 1) from the text alone: the same on every machine and Python run."""
    digest = hashlib.blake2b(f"{salt}\x00{text}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _normalise(text: str) -> str:
    return _clean(text).casefold()


def is_heldout(en: str, fraction: float) -> bool:
    """Whether the pair with English `en` belongs to the held-out part (about `fraction`)."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"heldout_fraction must be between 0 and 1, not {fraction}")
    # Deciding on the English text alone puts every translation of one English string, in
    # every language and corpus, on the same side: training never sees a test query.
    return _unit_hash(_normalise(en), "heldout") < fraction


def bitexts(lang: str, heldout_fraction: float) -> list[Bitext]:
    """The training part of the demo pairs of `lang`: one Bitext per corpus that has any."""
    by_corpus: dict[str, list[tuple[str, str]]] = {corpus: [] for corpus in CORPORA}
    for corpus, en, xx in demo_pairs(lang):
        if not is_heldout(en, heldout_fraction):
            by_corpus[corpus].append((en, xx))
    versions = provenance()
    origins = {
        "cldr": f"CLDR {versions['cldr']} (Babel {versions['babel']}) locale "
        f"{_CLDR_LOCALE.get(lang, lang)}",
        "django": f"Django {versions['django']} catalogs {_DJANGO_LOCALE.get(lang, lang)}",
    }
    return [
        in_memory(corpus, origins[corpus], pairs) for corpus, pairs in by_corpus.items() if pairs
    ]


def write_heldout(
    langs: list[str],
    out_dir: Path,
    heldout_fraction: float,
    max_pairs: int = 1000,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Write the held-out pairs of each language as LASER Tatoeba files; return the counts.

    `out_dir/tatoeba.{iso3}-eng.{iso3}` and `...eng.eng` hold one segment a line, line i
    translating line i. A retrieval test needs unambiguous targets, so pairs whose sides are
    equal and repeated English or foreign segments (ignoring case) are dropped; above
    `max_pairs`, a choice seeded by `seed` keeps that many.
    """
    if max_pairs < 1:
        raise ValueError(f"max_pairs must be at least 1, not {max_pairs}")
    out_dir = Path(out_dir)
    counts = {}
    for lang in langs:
        iso3 = languages.get(lang).iso3
        heldout = [(en, xx) for _, en, xx in demo_pairs(lang) if is_heldout(en, heldout_fraction)]
        distinct = [(en, xx) for en, xx in heldout if _normalise(en) != _normalise(xx)]
        seen_en: set[str] = set()
        seen_xx: set[str] = set()
        unique = []
        for en, xx in distinct:
            if _normalise(en) not in seen_en and _normalise(xx) not in seen_xx:
                unique.append((en, xx))
                seen_en.add(_normalise(en))
                seen_xx.add(_normalise(xx))
        # Ranking by a seeded hash (rather than random.sample) keeps the choice identical
        # across Python versions, and adding one pair does not reshuffle the others.
        keep = set(sorted(unique, key=lambda pair: _unit_hash(pair[0], str(seed)))[:max_pairs])
        chosen = [pair for pair in unique if pair in keep]
        for side, texts in ((iso3, [xx for _, xx in chosen]), ("eng", [en for en, _ in chosen])):
            with atomic_path(out_dir / f"tatoeba.{iso3}-eng.{side}") as tmp:
                tmp.write_text("".join(f"{text}\n" for text in texts), encoding="utf-8")
        counts[lang] = {
            "iso3": iso3,
            "heldout": len(heldout),
            "identical": len(heldout) - len(distinct),
            "duplicate": len(distinct) - len(unique),
            "capped": len(unique) - len(chosen),
            "written": len(chosen),
            "too_small": len(chosen) < _MIN_HELDOUT,
        }
        if len(chosen) < _MIN_HELDOUT:
            log.warning(
                "demo held-out set for %s has only %d pairs (fewer than %d): its retrieval "
                "scores are noise; raise heldout_fraction for a larger test set",
                lang,
                len(chosen),
                _MIN_HELDOUT,
            )
    return counts


def provenance() -> dict[str, str | None]:
    """The versions of the packages the demo pairs were read from, for stats files."""
    babel = _babel()
    try:
        django = importlib.metadata.version("django")
    except importlib.metadata.PackageNotFoundError:
        django = None
    return {
        "babel": babel.__version__,
        "cldr": babel.core.get_cldr_version(),
        "django": django,
    }
