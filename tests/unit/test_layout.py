"""Where the results are (xlsent.layout): each pattern's wildcards are those the rules constrain,
the paths it formats to are the ones the rules write, and what `rule all` and the tables read
(xlsent.config.outputs) is made of it."""

from __future__ import annotations

import re

import pytest
from support import ROOT

from xlsent import languages, layout
from xlsent.config import (
    bli_results,
    bucc_results,
    compare_results,
    final_outputs,
    load,
    mteb_results,
    retrieval_results,
)
from xlsent.config.paths import shipped
from xlsent.corpus.sources import SOURCES
from xlsent.failures import configfile_guard

RULES = ROOT / "workflow" / "rules"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
DEMO = load(ROOT / "resources" / "demo" / "config.yaml", SCHEMA)
PAPER = load(ROOT / "config.yaml", SCHEMA)

# Every pattern of the layout and its fields, in order: what a rule's wildcards are named.
PATTERNS = {
    "DOWNLOADS": ("source",),
    "OPUS_ZIP": ("corpus", "lang"),
    "EFLOMAL_SDIST": ("sdist",),
    "BLI_DOWNLOAD": ("lang", "direction"),
    "BUILD": ("program",),
    "EFLOMAL_BINARY": (),
    "BISENT2VEC_BINARY": (),
    "CORPUS": ("lang", "split"),
    "CLEAN": ("lang",),
    "TRAIN_PAIRS": ("lang",),
    "DEV_PAIRS": ("lang",),
    "MINING_PAIRS": ("lang",),
    "CORPUS_STATS": ("lang", "step"),
    "CLEAN_STATS": ("lang",),
    "SAMPLE_STATS": ("lang",),
    "DEMO_TATOEBA": (),
    "WORDS": ("lang", "split"),
    "PRETRAINED": ("model",),
    "TOKENIZER": ("model",),
    "SUBWORDS": ("model", "lang", "split"),
    "WSPALIGN": (),
    "ALIGNMENTS": ("aligner", "lang"),
    "ALIGN_SHARD": ("aligner", "lang", "shard"),
    "ALIGN_SHARD_STATS": ("aligner", "lang", "shard"),
    "ALIGN_MANIFEST": ("aligner", "lang"),
    "ALIGN_PHARAOH": ("aligner", "lang"),
    "WORD_SPANS": ("model", "aligner", "lang"),
    "WORD_SPAN_STATS": ("model", "aligner", "lang"),
    "HARD_NEGATIVE_POOL": ("start", "pool"),
    "HARD_NEGATIVE_SHARD": ("start", "pool", "shard"),
    "HARD_NEGATIVES": ("start", "pool", "lang"),
    "HARD_NEGATIVES_FILE": ("start", "pool", "lang"),
    "HARD_NEGATIVES_MANIFEST": ("start", "pool", "lang"),
    "MODEL": ("run", "seed"),
    "WORD_VECTOR_MODEL": ("run", "seed", "lang"),
    "CHECKPOINTS": ("run", "seed"),
    "VECTORS": ("run", "seed", "source"),
    "DATA": ("name",),
    "TATOEBA_DIR": (),
    "BUCC2018_DIR": (),
    "MINING_SET_DIR": (),
    "MINING_SET_STATS": (),
    "BLI_DIR": (),
    "BLI_DICTIONARY": ("lang", "direction"),
    "BLI_SEED": ("lang",),
    "BLI_SEED_STATS": ("lang",),
    "BLI_TEST": ("lang", "direction"),
    "BLI_TEST_STATS": ("lang", "direction"),
    "EVAL": ("task", "run", "seed"),
    "EVAL_BLI": ("run", "seed", "lang", "direction"),
    "EVAL_BLI_STATS": ("run", "seed", "lang", "direction"),
    "EVAL_MTEB": ("run", "seed"),
}
# Fields the code fills in before Snakemake sees the pattern: never a rule's wildcard.
FILLED = {"sdist", "program", "step", "name", "task"}


def _constrained() -> set[str]:
    """Every wildcard a `wildcard_constraints:` block of the rule files names (the global
    ones of common.smk and hard_negatives_inputs.smk, and those of single rules)."""
    names = set()
    for path in RULES.glob("*.smk"):
        for block in re.findall(r"wildcard_constraints:\n((?:\s+\w+=.*\n)+)", path.read_text()):
            names |= set(re.findall(r"^\s+(\w+)=", block, re.M))
    return names


def _regex(pattern: str) -> re.Pattern[str]:
    """What `pattern` matches, each field one path part (or more, for {start})."""
    parts = re.split(r"(\{\w+\})", pattern)
    return re.compile(
        "".join(
            (".+" if part == "{start}" else "[^/]+")
            if re.fullmatch(r"\{\w+\}", part)
            else re.escape(part)
            for part in parts
        )
    )


def _patterns() -> list[str]:
    return [getattr(layout, name) for name in PATTERNS]


def test_every_pattern_has_the_wildcards_its_rules_name():
    listed = {
        name
        for name, value in vars(layout).items()
        if name.isupper() and isinstance(value, str) and value.startswith(f"{layout.RESULTS}/")
    }
    # Every results pattern of the module is listed here (the roots are not patterns).
    roots = {"BENCHMARKS", "MODELS", "CHECKPOINTS_ROOT", "VECTORS_ROOT", "TABLES", "PLOTS"}
    assert listed - roots == set(PATTERNS)
    for name, fields in PATTERNS.items():
        assert layout.wildcards(getattr(layout, name)) == fields, name


def test_every_wildcard_of_a_pattern_is_constrained_by_the_rules():
    constrained = _constrained()
    assert {"lang", "split", "model", "run", "seed", "start", "pool", "source"} <= constrained
    fields = {field for pattern in _patterns() for field in layout.wildcards(pattern)}
    assert fields - FILLED - constrained == set()


def test_patterns_format_to_the_paths_the_rules_write():
    assert layout.MODEL.format(run="tr", seed=42) == "results/models/tr/seed42"
    assert layout.WORD_VECTOR_MODEL.format(run="b2v", seed=0, lang="kk") == (
        "results/models/b2v/seed0/kk"
    )
    assert layout.CHECKPOINTS.format(run="tr", seed=42) == "results/checkpoints/tr/seed42"
    assert layout.TRAIN_PAIRS.format(lang="de") == "results/corpus/de/train.parquet"
    assert layout.CLEAN.format(lang="de") == "results/corpus/de/clean.parquet"
    assert layout.SAMPLE_STATS.format(lang="de") == "results/corpus/de/sample_stats.json"
    assert layout.SUBWORDS.format(model="tiny", lang="kk", split="dev") == (
        "results/subwords/tiny/kk/dev.parquet"
    )
    assert layout.WORD_SPANS.format(model="tiny", aligner="eflomal", lang="kk") == (
        "results/wordspans/tiny/eflomal/kk.parquet"
    )
    assert layout.WORD_SPAN_STATS.format(model="tiny", aligner="eflomal", lang="kk") == (
        "results/wordspans/tiny/eflomal/kk.json"
    )
    assert layout.ALIGN_SHARD.format(aligner="eflomal", lang="kk", shard="0002") == (
        "results/align/eflomal/kk/shard-0002.arrow"
    )
    assert layout.VECTORS.format(run="tr", seed=42, source="tatoeba") == (
        "results/vectors/tr/seed42/tatoeba.arrow"
    )
    assert layout.HARD_NEGATIVES_FILE.format(start="pretrained/me5", pool="all", lang="kk") == (
        "results/hard_negatives/pretrained/me5/all/kk/negatives.parquet"
    )
    assert layout.HARD_NEGATIVE_SHARD.format(
        start="pretrained/me5", pool="max2000", shard="0000"
    ) == ("results/hard_negatives/pretrained/me5/max2000/vectors-0000.arrow")
    assert layout.EFLOMAL_BINARY == "results/build/eflomal/eflomal"
    assert layout.BISENT2VEC_BINARY == "results/build/bisent2vec/bisent2vec"
    assert layout.EFLOMAL_SDIST.format(sdist="eflomal-2.0.0.tar.gz") == (
        "results/downloads/eflomal/eflomal-2.0.0.tar.gz"
    )
    assert layout.OPUS_ZIP.format(corpus="Tanzil", lang="kk") == (
        "results/downloads/opus/Tanzil/kk.zip"
    )
    assert layout.BLI_TEST.format(lang="de", direction="en2xx") == (
        "results/data/bli/de.en2xx.test.txt"
    )
    assert layout.fill(layout.EVAL, task="tatoeba") == (
        "results/eval/tatoeba/{run}/seed{seed}.parquet"
    )
    assert layout.table("tatoeba") == "results/tables/tatoeba.csv"
    assert layout.table("tatoeba", "md") == "results/tables/tatoeba.md"
    assert layout.plot("aligned_words", "json") == "results/plots/aligned_words.json"
    assert layout.benchmark("train/{run}/seed{seed}") == (
        "results/benchmarks/train/{run}/seed{seed}.tsv"
    )
    assert layout.log("clean/{lang}") == "logs/clean/{lang}.log"


@pytest.mark.parametrize("config", [DEMO, PAPER], ids=["demo", "paper"])
def test_what_the_tables_and_rule_all_read_is_made_of_the_layout(config):
    made = [layout.fill(layout.EVAL, task=task) for task in ("tatoeba", "retrieval", "bucc")] + [
        layout.EVAL_BLI,
        layout.EVAL_MTEB,
        layout.ALIGN_MANIFEST,
        layout.table("{name}"),
        layout.plot("{name}"),
    ]
    paths = [
        *final_outputs(config),
        *bucc_results(config),
        *compare_results(config),
        *retrieval_results(config),
        *bli_results(config),
        *mteb_results(config).values(),
    ]
    assert paths
    unmatched = [p for p in paths if not any(_regex(m).fullmatch(p) for m in made)]
    assert unmatched == []
    assert layout.table("cost") in final_outputs(config)
    method = config["align"]["method"]
    assert layout.ALIGN_MANIFEST.format(aligner=method, lang="kk") in final_outputs(config)


def test_the_demo_tables_are_the_ones_its_rules_write():
    outputs = final_outputs(DEMO)
    assert outputs[:3] == [
        "results/tables/tatoeba.csv",
        "results/plots/tatoeba_groups.png",
        "results/plots/aligned_words.png",
    ]
    assert mteb_results(PAPER)["tr/seed42"] == "results/eval/mteb/tr/seed42"


def test_fill_leaves_the_fields_it_is_not_given():
    assert layout.fill(layout.CORPUS, split="mining") == layout.MINING_PAIRS
    assert layout.fill(layout.SUBWORDS, split="train") == (
        "results/subwords/{model}/{lang}/train.parquet"
    )
    assert layout.fill(layout.SUBWORDS) == layout.SUBWORDS
    assert layout.to_glob(layout.RUN_SEED) == "*/seed*"
    assert layout.wildcards("{lang}/{lang}.{direction}") == ("lang", "direction")


def test_lang_args_quote_each_language_and_path():
    assert layout.lang_args(layout.MINING_PAIRS, ["de", "kk"]) == (
        "de=results/corpus/de/mining.parquet kk=results/corpus/kk/mining.parquet"
    )
    assert layout.lang_args(layout.WORD_VECTOR_MODEL, ["kk"], run="b2v", seed=0) == (
        "kk=results/models/b2v/seed0/kk"
    )
    assert layout.lang_args("my data/{lang}", ["de"]) == "'de=my data/de'"
    assert layout.lang_args(layout.MINING_PAIRS, []) == ""


def test_names_regex_matches_those_names_only():
    regex = layout.names_regex(["tr", "tr-awp", "a.b"])
    assert [
        name for name in ("tr", "tr-awp", "a.b", "axb", "tr-") if re.fullmatch(regex, name)
    ] == [
        "tr",
        "tr-awp",
        "a.b",
    ]
    assert not any(re.fullmatch(layout.names_regex([]), name) for name in ("", "tr"))


def test_the_opus_source_downloads_where_the_layout_says():
    """The clean job's inputs (the source's, below its DOWNLOADS) are opus_download's outputs."""
    assert PAPER["corpus"]["source"] == "opus"
    downloads = layout.DOWNLOADS.format(source="opus")
    zips = {
        lang: SOURCES["opus"].inputs(
            PAPER, lang, shipped=lambda path: str(shipped(path, ROOT)), downloads=downloads
        )
        for lang in languages.resolve(PAPER["languages"])[:4]
    }
    assert all(zips.values())
    for lang, paths in zips.items():
        for corpus, path in paths.items():
            assert path == layout.OPUS_ZIP.format(corpus=corpus, lang=lang)


def test_the_paths_in_rules_commands_are_the_layouts():
    """The path a rule's shell string spells (a change there would rerun its jobs)."""
    evaluate = (RULES / "evaluate.smk").read_text()
    assert f"--download-dir {layout.DOWNLOADS.format(source='bucc2018')} " in evaluate
    assert layout.CHECKPOINTS_ROOT == "results/checkpoints"


def test_a_models_path_is_what_the_configfile_guard_protects():
    assert configfile_guard.MODELS == "results/models/"
    assert layout.MODEL.format(run="tr", seed=42).startswith(configfile_guard.MODELS)
    assert layout.WORD_VECTOR_MODEL.format(run="b", seed=1, lang="de").startswith(
        configfile_guard.MODELS
    )


def test_a_hard_negative_start_is_a_model_directory_below_results():
    text = (RULES / "hard_negatives_inputs.smk").read_text()
    (start,) = re.findall(r'^\s+start=r"([^"]+)"', text, re.M)
    below = f"{layout.RESULTS}/"
    for path in (
        layout.MODEL.format(run="mlm", seed=42),
        layout.PRETRAINED.format(model="me5"),
    ):
        assert path.startswith(below)
        assert re.fullmatch(start, path.removeprefix(below))
        assert layout.HARD_NEGATIVES.format(
            start=path.removeprefix(below), pool="all", lang="kk"
        ).startswith("results/hard_negatives/")
