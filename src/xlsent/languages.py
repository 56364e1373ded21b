"""The language table: codes, names, scripts and the language groups of the papers.

It holds every language of LASER's Tatoeba test set (v1, 112 languages paired with English;
Artetxe and Schwenk, 2019, arXiv:1812.10464). A language's `code` is its ISO 639-1 code (what
OPUS, spaCy and the papers use) where it has one, else the code of its LASER files (Old
English `ang`, Asturian `ast`, Cebuano `ceb`, ...). `iso3` is the code of the LASER files,
which is not always the ISO 639-3 macrolanguage code (Mandarin is `cmn`, Persian `pes`,
Swahili `swh`, Latvian `lvs`, Malay `zsm`), so the mapping is explicit rather than derived.
`script` is the ISO 15924 code of the script the Tatoeba sentences are written in (Serbian
and Uzbek mix Latin and Cyrillic there: the majority, Latin).

Only languages with an ISO 639-1 code can be trained on: the workflow's per-language paths
(`results/corpus/{lang}/...`) take two-letter codes. The others are evaluated only, which is
the transfer the dual-pivot paper measures (Tien and Steinert-Threlkeld, 2022, Table 3).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xlsent.failures.errors import XlsentError


@dataclass(frozen=True)
class Language:
    code: str
    iso3: str
    name: str
    script: str = "Latn"
    # Scripts written without spaces between words: token counts there are character counts.
    unspaced: bool = False


# The 36 languages of XTREME's Tatoeba task (Hu et al., 2020), the papers' evaluation set.
_XTREME = [
    Language("af", "afr", "Afrikaans"),
    Language("ar", "ara", "Arabic", "Arab"),
    Language("bg", "bul", "Bulgarian", "Cyrl"),
    Language("bn", "ben", "Bengali", "Beng"),
    Language("de", "deu", "German"),
    Language("el", "ell", "Greek", "Grek"),
    Language("es", "spa", "Spanish"),
    Language("et", "est", "Estonian"),
    Language("eu", "eus", "Basque"),
    Language("fa", "pes", "Persian", "Arab"),
    Language("fi", "fin", "Finnish"),
    Language("fr", "fra", "French"),
    Language("he", "heb", "Hebrew", "Hebr"),
    Language("hi", "hin", "Hindi", "Deva"),
    Language("hu", "hun", "Hungarian"),
    Language("id", "ind", "Indonesian"),
    Language("it", "ita", "Italian"),
    Language("ja", "jpn", "Japanese", "Jpan", unspaced=True),
    Language("jv", "jav", "Javanese"),
    Language("ka", "kat", "Georgian", "Geor"),
    Language("kk", "kaz", "Kazakh", "Cyrl"),
    Language("ko", "kor", "Korean", "Hang"),
    Language("ml", "mal", "Malayalam", "Mlym"),
    Language("mr", "mar", "Marathi", "Deva"),
    Language("nl", "nld", "Dutch"),
    Language("pt", "por", "Portuguese"),
    Language("ru", "rus", "Russian", "Cyrl"),
    Language("sw", "swh", "Swahili"),
    Language("ta", "tam", "Tamil", "Taml"),
    Language("te", "tel", "Telugu", "Telu"),
    Language("th", "tha", "Thai", "Thai", unspaced=True),
    Language("tl", "tgl", "Tagalog"),
    Language("tr", "tur", "Turkish"),
    Language("ur", "urd", "Urdu", "Arab"),
    Language("vi", "vie", "Vietnamese"),
    Language("zh", "cmn", "Chinese (Mandarin)", "Hans", unspaced=True),
]

# The other 76 languages of LASER's Tatoeba set, in the order of their LASER codes.
_LASER_ONLY = [
    Language("am", "amh", "Amharic", "Ethi"),
    Language("ang", "ang", "Old English"),
    Language("arq", "arq", "Algerian Arabic", "Arab"),
    Language("arz", "arz", "Egyptian Arabic", "Arab"),
    Language("ast", "ast", "Asturian"),
    Language("awa", "awa", "Awadhi", "Deva"),
    Language("az", "aze", "Azerbaijani"),
    Language("be", "bel", "Belarusian", "Cyrl"),
    Language("ber", "ber", "Berber"),
    Language("bs", "bos", "Bosnian"),
    Language("br", "bre", "Breton"),
    Language("ca", "cat", "Catalan"),
    Language("cbk", "cbk", "Chavacano"),
    Language("ceb", "ceb", "Cebuano"),
    Language("cs", "ces", "Czech"),
    Language("ch", "cha", "Chamorro"),
    Language("kw", "cor", "Cornish"),
    Language("csb", "csb", "Kashubian"),
    Language("cy", "cym", "Welsh"),
    Language("da", "dan", "Danish"),
    Language("dsb", "dsb", "Lower Sorbian"),
    Language("dtp", "dtp", "Central Dusun"),
    Language("eo", "epo", "Esperanto"),
    Language("fo", "fao", "Faroese"),
    Language("fy", "fry", "Western Frisian"),
    Language("gd", "gla", "Scottish Gaelic"),
    Language("ga", "gle", "Irish"),
    Language("gl", "glg", "Galician"),
    Language("gsw", "gsw", "Swiss German"),
    Language("hr", "hrv", "Croatian"),
    Language("hsb", "hsb", "Upper Sorbian"),
    Language("hy", "hye", "Armenian", "Armn"),
    Language("io", "ido", "Ido"),
    Language("ie", "ile", "Interlingue"),
    Language("ia", "ina", "Interlingua"),
    Language("is", "isl", "Icelandic"),
    Language("kab", "kab", "Kabyle"),
    Language("km", "khm", "Khmer", "Khmr", unspaced=True),
    Language("ku", "kur", "Kurdish"),
    Language("kzj", "kzj", "Coastal Kadazan"),
    Language("la", "lat", "Latin"),
    Language("lfn", "lfn", "Lingua Franca Nova"),
    Language("lt", "lit", "Lithuanian"),
    Language("lv", "lvs", "Latvian"),
    Language("max", "max", "North Moluccan Malay"),
    Language("mhr", "mhr", "Eastern Mari", "Cyrl"),
    Language("mk", "mkd", "Macedonian", "Cyrl"),
    Language("mn", "mon", "Mongolian", "Cyrl"),
    Language("nds", "nds", "Low German"),
    Language("nn", "nno", "Norwegian Nynorsk"),
    Language("nb", "nob", "Norwegian Bokmål"),
    Language("nov", "nov", "Novial"),
    Language("oc", "oci", "Occitan"),
    Language("orv", "orv", "Old Russian", "Cyrl"),
    Language("pam", "pam", "Kapampangan"),
    Language("pms", "pms", "Piedmontese"),
    Language("pl", "pol", "Polish"),
    Language("ro", "ron", "Romanian"),
    Language("sk", "slk", "Slovak"),
    Language("sl", "slv", "Slovenian"),
    Language("sq", "sqi", "Albanian"),
    Language("sr", "srp", "Serbian"),
    Language("sv", "swe", "Swedish"),
    Language("swg", "swg", "Swabian"),
    Language("tt", "tat", "Tatar", "Cyrl"),
    Language("tk", "tuk", "Turkmen"),
    Language("tzl", "tzl", "Talossan"),
    Language("ug", "uig", "Uyghur", "Arab"),
    Language("uk", "ukr", "Ukrainian", "Cyrl"),
    Language("uz", "uzb", "Uzbek"),
    Language("war", "war", "Waray"),
    Language("wuu", "wuu", "Wu Chinese", "Hans", unspaced=True),
    Language("xh", "xho", "Xhosa"),
    Language("yi", "yid", "Yiddish", "Hebr"),
    Language("yue", "yue", "Cantonese", "Hant", unspaced=True),
    Language("ms", "zsm", "Malay"),
]

ENGLISH = Language("en", "eng", "English")
LANGUAGES: dict[str, Language] = {lang.code: lang for lang in [*_XTREME, *_LASER_ONLY, ENGLISH]}
BY_ISO3: dict[str, Language] = {lang.iso3: lang for lang in LANGUAGES.values()}

_XTREME36 = tuple(lang.code for lang in _XTREME)
GROUPS: dict[str, tuple[str, ...]] = {
    # WACSE Table 3: the low-resource settings, in the paper's order.
    "low4": ("kk", "te", "ka", "jv"),
    "low5": ("tl", "jv", "ka", "kk", "te"),
    "low8": ("te", "ka", "kk", "jv", "ml", "sw", "tl", "mr"),
    # DAP Table 1: the 14 languages LASER was evaluated on (its XNLI set) ...
    "laser14": ("ar", "bg", "de", "el", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh"),
    # ... and the 28 whose Tatoeba test sets have the full 1000 pairs.
    "dap28": tuple(
        code for code in _XTREME36 if code not in {"jv", "ka", "kk", "ml", "sw", "ta", "te", "th"}
    ),
    "xtreme36": _XTREME36,
    # The dual-pivot paper's Table 3 averages: XTREME's 36 and all 112 of LASER's Tatoeba set
    # (its third, "41", is Kvapilíková et al.'s (2020) set, which the paper does not list).
    "tatoeba36": _XTREME36,
    "tatoeba112": tuple(lang.code for lang in [*_XTREME, *_LASER_ONLY]),
}


class UnknownLanguageError(XlsentError):
    pass


def trainable(code: str) -> bool:
    """Whether the workflow can train on `code`: its per-language paths take ISO 639-1 codes."""
    return len(code) == 2


def get(code: str) -> Language:
    """The language with `code` (ISO 639-1, or LASER's code); a clear error for anything else."""
    try:
        return LANGUAGES[code]
    except KeyError:
        known = " ".join(LANGUAGES)
        raise UnknownLanguageError(
            f"unknown language code {code!r}: use a code from the language table "
            f"(xlsent.languages; ISO 639-1 where the language has one, else LASER's): {known}"
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
            # In the table's order: XTREME's 36 first, then the rest of LASER's.
            codes_known = " ".join(code for code in LANGUAGES if code != ENGLISH.code)
            raise UnknownLanguageError(
                f"unknown language code or group {item!r}: use codes from the language table "
                f"(xlsent.languages): {codes_known}; or group names: {', '.join(GROUPS)}"
            )
        for code in GROUPS.get(item, (item,)):
            if get(code) == ENGLISH:
                raise UnknownLanguageError(
                    "'en' is the pivot of every pair; list only the non-English languages"
                )
            if code not in codes:
                codes.append(code)
    return codes


# A defined group's name becomes table columns `{name}`, `{name}_xx2en`, `{name}_en2xx`, which
# the tables split at the first underscore, and a command argument `{name}=code,code`.
GROUP_NAME = re.compile(r"[a-z][a-z0-9]*")
# The tables' other columns beside the groups' (`all`: every language evaluated for the run).
TABLE_COLUMNS = ("all", "trained", "run", "seeds", "pivot", "missing", "scarce")


def define_groups(spec: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Groups a config defines (`tables.group_languages`: name → codes or built-in group
    names), each expanded to its codes in order; a clear error for a bad name or code.

    A group a paper averages but does not list (the dual-pivot paper's 41 languages) is left
    to the user who holds the list, rather than guessed in `GROUPS`.
    """
    defined = {}
    for name, items in spec.items():
        where = f"group {name!r}"
        if not GROUP_NAME.fullmatch(name):
            raise UnknownLanguageError(
                f"{where}: a group name is lower-case letters and digits, starting with a "
                "letter (it names table columns, `{name}_xx2en`)"
            )
        if name in GROUPS or name in LANGUAGES or name in TABLE_COLUMNS:
            raise UnknownLanguageError(
                f"{where}: the name is taken by a built-in group, a language code or a table "
                f"column ({', '.join(TABLE_COLUMNS)}): choose another"
            )
        if not items:
            raise UnknownLanguageError(f"{where}: list at least one language")
        try:
            defined[name] = tuple(resolve(list(items)))
        except UnknownLanguageError as err:
            raise UnknownLanguageError(f"{where}: {err}") from None
    return defined


def members(
    names: Sequence[str], defined: Mapping[str, Sequence[str]] | None = None
) -> dict[str, tuple[str, ...]]:
    """The languages of each group of `names`, built-in (`GROUPS`) or `defined`."""
    known = {**GROUPS, **(defined or {})}
    for name in names:
        if name not in known:
            raise UnknownLanguageError(
                f"unknown group {name!r}; use group names: {', '.join(known)}, or define it "
                "in `tables.group_languages`"
            )
    return {name: tuple(known[name]) for name in names}


def group_arguments(
    names: Sequence[str], defined: Mapping[str, Sequence[str]] | None = None
) -> list[str]:
    """`names` as command arguments: a built-in group by its name, a defined one as
    `name=code,code,...`, so a table job carries its groups' languages (and a changed
    definition changes the job's parameters, which reruns it)."""
    groups = members(names, defined)
    return [name if name in GROUPS else f"{name}={','.join(groups[name])}" for name in names]


def parse_group_arguments(items: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The inverse of `group_arguments`: each group's languages, in the order given."""
    defined = {}
    for item in items:
        name, sep, codes = item.partition("=")
        if sep:
            defined.update(define_groups({name: codes.split(",")}))
    return members([item.partition("=")[0] for item in items], defined)


def resolve_trainable(spec: str | list[str]) -> list[str]:
    """`resolve`, refusing the languages that can only be evaluated (no ISO 639-1 code)."""
    codes = resolve(spec)
    untrainable = [code for code in codes if not trainable(code)]
    if untrainable:
        raise UnknownLanguageError(
            f"{', '.join(untrainable)} can be evaluated (evaluate.tatoeba.languages) but not "
            "trained on: training languages need an ISO 639-1 code, which these lack"
        )
    return codes
