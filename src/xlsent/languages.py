"""The language table: ISO codes, names, scripts and the language groups of the papers.

Codes are ISO 639-1 (what OPUS, spaCy and the papers use); `iso3` is the code of the LASER
Tatoeba files, which is not always the ISO 639-3 macrolanguage code (Mandarin is `cmn`,
Persian `pes`, Swahili `swh`), so the mapping is explicit rather than derived.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlsent.errors import XlsentError


@dataclass(frozen=True)
class Language:
    code: str
    iso3: str
    name: str
    # Scripts written without spaces between words: token counts there are character counts.
    unspaced: bool = False


_TABLE = [
    Language("af", "afr", "Afrikaans"),
    Language("ar", "ara", "Arabic"),
    Language("bg", "bul", "Bulgarian"),
    Language("bn", "ben", "Bengali"),
    Language("de", "deu", "German"),
    Language("el", "ell", "Greek"),
    Language("es", "spa", "Spanish"),
    Language("et", "est", "Estonian"),
    Language("eu", "eus", "Basque"),
    Language("fa", "pes", "Persian"),
    Language("fi", "fin", "Finnish"),
    Language("fr", "fra", "French"),
    Language("he", "heb", "Hebrew"),
    Language("hi", "hin", "Hindi"),
    Language("hu", "hun", "Hungarian"),
    Language("id", "ind", "Indonesian"),
    Language("it", "ita", "Italian"),
    Language("ja", "jpn", "Japanese", unspaced=True),
    Language("jv", "jav", "Javanese"),
    Language("ka", "kat", "Georgian"),
    Language("kk", "kaz", "Kazakh"),
    Language("ko", "kor", "Korean"),
    Language("ml", "mal", "Malayalam"),
    Language("mr", "mar", "Marathi"),
    Language("nl", "nld", "Dutch"),
    Language("pt", "por", "Portuguese"),
    Language("ru", "rus", "Russian"),
    Language("sw", "swh", "Swahili"),
    Language("ta", "tam", "Tamil"),
    Language("te", "tel", "Telugu"),
    Language("th", "tha", "Thai", unspaced=True),
    Language("tl", "tgl", "Tagalog"),
    Language("tr", "tur", "Turkish"),
    Language("ur", "urd", "Urdu"),
    Language("vi", "vie", "Vietnamese"),
    Language("zh", "cmn", "Chinese", unspaced=True),
]

ENGLISH = Language("en", "eng", "English")
LANGUAGES: dict[str, Language] = {lang.code: lang for lang in [*_TABLE, ENGLISH]}
BY_ISO3: dict[str, Language] = {lang.iso3: lang for lang in LANGUAGES.values()}

GROUPS: dict[str, tuple[str, ...]] = {
    # WACSE Table 3: the low-resource settings, in the paper's order.
    "low4": ("kk", "te", "ka", "jv"),
    "low5": ("tl", "jv", "ka", "kk", "te"),
    "low8": ("te", "ka", "kk", "jv", "ml", "sw", "tl", "mr"),
    # DAP Table 1: the 14 languages LASER was evaluated on (its XNLI set) ...
    "laser14": ("ar", "bg", "de", "el", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh"),
    # ... and the 28 whose Tatoeba test sets have the full 1000 pairs.
    "dap28": tuple(
        lang.code
        for lang in _TABLE
        if lang.code not in {"jv", "ka", "kk", "ml", "sw", "ta", "te", "th"}
    ),
    "xtreme36": tuple(lang.code for lang in _TABLE),
}


class UnknownLanguageError(XlsentError):
    pass


def get(code: str) -> Language:
    """The language with ISO 639-1 `code`; a clear error for anything else."""
    try:
        return LANGUAGES[code]
    except KeyError:
        known = " ".join(sorted(LANGUAGES))
        raise UnknownLanguageError(
            f"unknown language code {code!r}: use an ISO 639-1 code from the language table "
            f"(xlsent.languages): {known}"
        ) from None


def resolve(spec: str | list[str]) -> list[str]:
    """Expand a group name or a list of codes/group names into a list of codes, in order.

    An item that is neither is answered with both lists: a config names groups as often as
    codes, and a mistyped group (`low9`) is not a language code gone wrong.
    """
    items = [spec] if isinstance(spec, str) else list(spec)
    codes: list[str] = []
    for item in items:
        if item not in GROUPS and item not in LANGUAGES:
            codes_known = " ".join(sorted(code for code in LANGUAGES if code != ENGLISH.code))
            raise UnknownLanguageError(
                f"unknown language code or group {item!r}: use ISO 639-1 codes from the language "
                f"table (xlsent.languages): {codes_known}; or group names: {', '.join(GROUPS)}"
            )
        for code in GROUPS.get(item, (item,)):
            if get(code) == ENGLISH:
                raise UnknownLanguageError(
                    "'en' is the pivot of every pair; list only the non-English languages"
                )
            if code not in codes:
                codes.append(code)
    return codes
