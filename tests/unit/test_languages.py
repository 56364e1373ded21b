"""The language table against LASER's Tatoeba files: every language, its script, its spacing."""

from __future__ import annotations

import unicodedata
from collections import Counter

import pytest
from support import ROOT, SHARED

from xlsent import languages
from xlsent.config import ConfigError, config_warnings, group_arguments, load, validate
from xlsent.evaluate.tatoeba import read_pairs, tatoeba_files

TATOEBA = SHARED / "tatoeba" / "v1"
needs_tatoeba = pytest.mark.skipif(
    not TATOEBA.is_dir(), reason=f"the LASER Tatoeba files are not at {TATOEBA}"
)

# The Unicode character names' first word, as ISO 15924 codes (Han, kana and Hangul: the
# table says which variety: Hans, Hant, Jpan, Hang).
SCRIPTS = {
    "LATIN": "Latn",
    "CYRILLIC": "Cyrl",
    "ARABIC": "Arab",
    "GREEK": "Grek",
    "HEBREW": "Hebr",
    "ARMENIAN": "Armn",
    "GEORGIAN": "Geor",
    "ETHIOPIC": "Ethi",
    "DEVANAGARI": "Deva",
    "BENGALI": "Beng",
    "TAMIL": "Taml",
    "TELUGU": "Telu",
    "MALAYALAM": "Mlym",
    "THAI": "Thai",
    "KHMER": "Khmr",
    "HANGUL": "Hang",
    "CJK": "Han",
    "HIRAGANA": "Jpan",
}
HAN = {"Hans", "Hant"}


def test_the_groups_of_the_dual_pivot_paper():
    groups = languages.GROUPS
    assert groups["tatoeba36"] == groups["xtreme36"]
    assert len(groups["tatoeba36"]) == 36
    assert len(groups["tatoeba112"]) == len(set(groups["tatoeba112"])) == 112
    assert set(groups["tatoeba36"]) < set(groups["tatoeba112"])
    # The LASER codes are the files': one language per file pair.
    assert len({languages.get(code).iso3 for code in groups["tatoeba112"]}) == 112


def test_codes_are_iso_639_1_or_else_the_laser_code():
    for code, language in languages.LANGUAGES.items():
        assert code == language.code
        assert len(code) == 2 or code == language.iso3, code
    # Macrolanguages: LASER's files name the individual language, the table keeps both.
    assert [languages.get(c).iso3 for c in ("zh", "fa", "sw", "lv", "ms")] == [
        "cmn",
        "pes",
        "swh",
        "lvs",
        "zsm",
    ]
    assert languages.BY_ISO3["ast"].name == "Asturian"


def test_untrainable_languages_resolve_for_evaluation_only():
    assert languages.resolve(["kk", "ast", "low4"]) == ["kk", "ast", "te", "ka", "jv"]
    assert languages.resolve_trainable(["kk", "low4"]) == ["kk", "te", "ka", "jv"]
    with pytest.raises(languages.UnknownLanguageError) as err:
        languages.resolve_trainable(["kk", "ast", "gsw"])
    assert str(err.value) == (
        "ast, gsw can be evaluated (evaluate.tatoeba.languages) but not trained on: training "
        "languages need an ISO 639-1 code, which these lack"
    )
    with pytest.raises(languages.UnknownLanguageError, match="tatoeba112"):
        languages.resolve("tatoeba113")


@needs_tatoeba
@pytest.mark.shared
def test_every_language_has_its_laser_file_pair():
    stems = {path.name.split(".")[1].removesuffix("-eng") for path in TATOEBA.glob("tatoeba.*")}
    assert len(stems) == 112
    assert {languages.get(code).iso3 for code in languages.GROUPS["tatoeba112"]} == stems
    for code in languages.GROUPS["tatoeba112"]:
        for path in tatoeba_files(TATOEBA, code):  # raises for a missing file
            assert path.is_file()


def _majority_script(text: str) -> str:
    names = Counter(unicodedata.name(ch).split()[0] for ch in text if ch.isalpha())
    return SCRIPTS[names.most_common(1)[0][0]]


@needs_tatoeba
@pytest.mark.shared
def test_scripts_are_those_the_files_are_written_in():
    # Serbian and Uzbek mix Latin (69 % and 68 % of letters) with Cyrillic; Japanese is
    # mostly hiragana (66 %); MTEB's own Tatoeba task says Tifinagh for Berber and Devanagari
    # for North Moluccan Malay, whose files are Latin.
    for code in languages.GROUPS["tatoeba112"]:
        language = languages.get(code)
        found = _majority_script("".join(read_pairs(TATOEBA, code)[0]))
        expected = "Han" if language.script in HAN else language.script
        assert found == expected, f"{code}: the files are {found}, the table says {expected}"


@needs_tatoeba
@pytest.mark.shared
def test_unspaced_languages_are_those_written_without_spaces():
    # Spaces per character: Japanese 0.0005, Wu 0.0005, Cantonese 0.0012, Mandarin 0.0014,
    # Thai 0.009, Khmer 0.042; the least spaced of the others, Xhosa, 0.080.
    unspaced = set()
    for code in languages.GROUPS["tatoeba112"]:
        text = "".join(read_pairs(TATOEBA, code)[0])
        if text.count(" ") / len(text) < 0.06:
            unspaced.add(code)
    assert unspaced == {c for c in languages.GROUPS["tatoeba112"] if languages.get(c).unspaced}
    assert unspaced == {"ja", "zh", "th", "km", "wuu", "yue"}


# -- the config's languages and groups (xlsent.config) ---------------------------------------------
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def test_evaluate_only_languages_cannot_be_trained():
    with pytest.raises(ConfigError, match=r"config key `languages`: ast can be evaluated"):
        validate({"languages": ["kk", "ast"]}, SCHEMA)
    config = validate(
        {"languages": ["kk"], "evaluate": {"tatoeba": {"languages": ["ast"]}}}, SCHEMA
    )
    assert config["evaluate"]["tatoeba"]["languages"] == ["ast"]


def test_a_group_nothing_could_fill_stops_the_config():
    with pytest.raises(ConfigError) as err:
        validate({"tables": {"groups": ["xtreme36", "tatoeba112"]}}, SCHEMA)
    assert str(err.value) == (
        "config key `tables.groups`: group 'tatoeba112' averages languages that are only "
        "evaluated, and `evaluate.tatoeba.languages` leaves out ang, arq, arz, ast, awa, ber, "
        "cbk, ceb and 20 more: set it to tatoeba112 (or a list that holds them), or drop the "
        "group"
    )
    config = validate(
        {
            "evaluate": {"tatoeba": {"languages": "tatoeba112"}},
            "tables": {"groups": ["xtreme36", "tatoeba112"], "ablation": {"groups": ["low8"]}},
        },
        SCHEMA,
    )
    assert config_warnings(config) == []


def test_a_group_of_untrained_training_languages_is_a_warning():
    # Small configs evaluate a few of a group's languages on purpose: the table leaves the
    # group blank with a footnote, and the config says so before the run.
    runs = {"tr": {"method": "tr", "model": "xlmr"}}
    config = validate(
        {"languages": ["kk", "te"], "runs": runs, "tables": {"groups": ["low4"]}}, SCHEMA
    )
    low4 = (
        "config key `tables.groups`: group 'low4' needs Tatoeba results for ka, jv, which are "
        "not evaluated (`evaluate.tatoeba.languages`, default `languages`): its columns stay "
        "blank; evaluate them or drop it"
    )
    # No ablation runs: no ablation table, so its (default) groups are not a concern.
    assert config_warnings(config) == [low4]
    config["tables"]["ablation"]["runs"] = ["tr"]
    assert config_warnings(config) == [
        low4,
        "config key `tables.ablation.groups`: group 'low8' needs Tatoeba results for ka, jv, "
        "ml, sw, tl, mr, which are not evaluated (`evaluate.tatoeba.languages`, default "
        "`languages`): its columns stay blank; evaluate them or drop it",
    ]


def test_language_embeddings_encode_only_the_training_languages():
    runs = {"langemb": {"method": "wacse", "model": "xlmr", "train": {"language_embeddings": True}}}
    with pytest.raises(ConfigError, match=r"run 'langemb' has language embeddings .* only"):
        validate({"runs": runs, "evaluate": {"tatoeba": {"languages": "tatoeba112"}}}, SCHEMA)
    validate({"runs": runs, "evaluate": {"tatoeba": {"languages": "low4"}}}, SCHEMA)


def test_the_l10n_config_evaluates_and_tabulates_all_112():
    config = load(ROOT / "resources" / "l10n" / "config.yaml", SCHEMA)
    assert len(languages.resolve(config["evaluate"]["tatoeba"]["languages"])) == 112
    assert {"tatoeba36", "tatoeba112"} <= set(config["tables"]["groups"])
    assert config_warnings(config) == []


def test_a_config_defines_a_group_the_tables_average():
    """`tables.group_languages`: a group the papers average but do not list (the dual-pivot
    paper's 41) is the user's to define; it reaches the table jobs with its languages."""
    spec = {"tatoeba41": ["low4", "de", "ast"], "pair": ["kk", "te"]}
    config = validate(
        {
            "evaluate": {"tatoeba": {"languages": "tatoeba112"}},
            "tables": {
                "groups": ["xtreme36", "tatoeba41"],
                "transfer": {"groups": ["pair"]},
                "group_languages": spec,
            },
        },
        SCHEMA,
    )
    assert config_warnings(config) == []
    defined = languages.define_groups(config["tables"]["group_languages"])
    assert defined["tatoeba41"] == ("kk", "te", "ka", "jv", "de", "ast")  # low4 expanded
    arguments = group_arguments(config, ["xtreme36", "tatoeba41"])
    assert arguments == ["xtreme36", "tatoeba41=kk,te,ka,jv,de,ast"]
    assert languages.parse_group_arguments(arguments) == {
        "xtreme36": languages.GROUPS["xtreme36"],
        "tatoeba41": defined["tatoeba41"],
    }


@pytest.mark.parametrize(
    ("spec", "groups", "message"),
    [
        (
            {"tatoeba41": ["de", "xx"]},
            ["tatoeba41"],
            "config key `tables.group_languages`: group 'tatoeba41': unknown language code or "
            "group 'xx'",
        ),
        (
            {"low4": ["de"]},
            ["low4"],
            "config key `tables.group_languages`: group 'low4': the name is taken by a built-in "
            "group, a language code or a table column",
        ),
        ({"mine": ["en"]}, ["mine"], "'en' is the pivot of every pair"),
        # A name is a table column's stem: `_` would split it.
        ({"my_group": ["de"]}, ["xtreme36"], "`tables.group_languages`"),
        ({"mine": []}, ["mine"], "`tables.group_languages.mine`"),
        (
            {"mine": ["de"]},
            ["mien"],
            "config key `tables.groups`: unknown group 'mien'; use group names: low4, low5, "
            "low8, laser14, dap28, xtreme36, tatoeba36, tatoeba112, mine, or define it in "
            "`tables.group_languages`",
        ),
        (
            {"mine": ["de", "ast"]},
            ["mine"],
            "group 'mine' averages languages that are only evaluated, and "
            "`evaluate.tatoeba.languages` leaves out ast",
        ),
    ],
)
def test_a_bad_defined_group_stops_the_config(spec, groups, message):
    with pytest.raises(ConfigError) as err:
        validate({"tables": {"groups": groups, "group_languages": spec}}, SCHEMA)
    assert message in str(err.value)


def test_a_table_command_refuses_a_bad_group_argument():
    with pytest.raises(languages.UnknownLanguageError, match="group 'bad_name'"):
        languages.parse_group_arguments(["bad_name=de,fr"])
    with pytest.raises(languages.UnknownLanguageError, match="unknown group 'tatoeba41'"):
        languages.parse_group_arguments(["tatoeba41"])  # defined groups carry their languages
