"""Corpus sources as a registry: the schema's names, what each source declares, and a new one.

Each source declares the files a language's `clean` job reads, the flags that pass them to
`xlsent clean`, and what else makes the cleaned pairs stale. These tests hold the declarations
against each other (the job reads exactly the declared inputs) and against the params that
the `clean` rule compared before the registry existed (no cleaned corpus goes stale), and
they add a source in-process to show what that takes: one class and a registry entry.
"""

from __future__ import annotations

import argparse
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path

import polars as pl
import pytest
import yaml
from support import ROOT

from xlsent.cli import build_parser, main
from xlsent.corpus import clean as cleaning
from xlsent.corpus.bitext import Bitext, in_memory
from xlsent.corpus.clean_base import CleanConfig
from xlsent.corpus.sources import SOURCES, Shipped, Source

SCHEMA = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
CORPUS = SCHEMA["properties"]["corpus"]["properties"]


def _clean_argv(lang: str, source: str, args: list[str], out: Path) -> list[str]:
    """The command line of the `clean` rule for these source arguments."""
    return [
        "clean",
        "--lang",
        lang,
        "--source",
        source,
        *args,
        "--settings",
        '{"style": "words", "min_tokens": 1, "max_length_ratio": 3.0}',
        "--out",
        str(out / "clean.parquet"),
        "--stats",
        str(out / "clean_stats.json"),
    ]


def _job_bitexts(source: Source, config: dict, lang: str, inputs: dict[str, str]) -> list[Bitext]:
    """What the clean job reads: the rule's arguments for `inputs`, parsed by the real CLI."""
    args = source.clean_args(config, inputs, shipped=str)
    parsed = build_parser().parse_args(_clean_argv(lang, source.name, args, Path("out")))
    return source.bitexts(lang, parsed)


def test_the_schema_lists_exactly_the_registered_sources() -> None:
    assert sorted(CORPUS["source"]["enum"]) == sorted(SOURCES), (
        "corpus.source's enum in config.schema.yaml and xlsent.corpus.sources.SOURCES differ"
    )
    for name, source in SOURCES.items():
        assert source.name == name
        assert name in CORPUS, f"source {name!r} has no settings block corpus.{name}"


def test_the_clean_parser_takes_every_source_and_its_flags() -> None:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    clean = sub.choices["clean"]
    assert clean.get_default("handler").__module__ == "xlsent.commands.corpus"
    (source,) = [a for a in clean._actions if a.dest == "source"]
    assert list(source.choices) == list(SOURCES)
    groups = [group.title for group in clean._action_groups]
    assert [f"--source {name}" for name in SOURCES] == groups[-len(SOURCES) :]


# -- each source: its inputs, its arguments and what the job reads ----------------------------


def _local_config(directory: Path, corpora: list[str] | None = None) -> dict:
    return {"corpus": {"source": "local", "local": {"dir": str(directory), "corpora": corpora}}}


def test_local_declares_both_sides_of_each_corpus_and_the_job_reads_them(tmp_path: Path) -> None:
    for name in ("Tanzil.en-kk.en", "Tanzil.en-kk.kk.gz", "l10n.en-kk.en", "l10n.en-kk.kk"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "l10n.de-en.de").write_bytes(b"")  # another language's
    local = SOURCES["local"]
    config = _local_config(tmp_path)
    inputs = local.inputs(config, "kk", shipped=str, downloads="unused")
    assert inputs == {
        "Tanzil.en": f"{tmp_path}/Tanzil.en-kk.en",
        "Tanzil.kk": f"{tmp_path}/Tanzil.en-kk.kk.gz",
        "l10n.en": f"{tmp_path}/l10n.en-kk.en",
        "l10n.kk": f"{tmp_path}/l10n.en-kk.kk",
    }
    read = _job_bitexts(local, config, "kk", inputs)
    assert [b.corpus for b in read] == ["Tanzil", "l10n"]
    assert {origin for b in read for origin in (b.en_origin, b.xx_origin)} == set(inputs.values())
    # With corpora named: only those, in that order, and the flag says so.
    config = _local_config(tmp_path, ["l10n"])
    assert local.clean_args(config, {}, shipped=str) == [
        "--local-dir",
        str(tmp_path),
        "--corpora",
        "l10n",
    ]
    inputs = local.inputs(config, "kk", shipped=str, downloads="unused")
    assert list(inputs) == ["l10n.en", "l10n.kk"]
    assert [b.corpus for b in _job_bitexts(local, config, "kk", inputs)] == ["l10n"]


def test_opus_declares_the_downloads_and_the_job_reads_them(tmp_path: Path) -> None:
    manifest = tmp_path / "opus.yaml"
    manifest.write_text(
        "base_url: https://opus.example\n"
        "corpora:\n"
        "  Tanzil: {version: v1, languages: [kk, de]}\n"
        "  OpenSubtitles: {version: v2018, languages: [zh], opus_codes: {zh: zh_cn}}\n"
        "  Europarl: {version: v8, languages: [de]}\n"
    )
    config = {
        "corpus": {
            "source": "opus",
            "opus": {
                "manifest": "opus.yaml",
                "corpora": ["OpenSubtitles", "Tanzil"],
                "skip": {},
            },
        }
    }

    def shipped(path: str) -> str:  # as common.smk's shipped(): under the workflow directory
        return str(tmp_path / path)

    opus = SOURCES["opus"]
    downloads = str(tmp_path / "downloads")
    assert opus.inputs(config, "kk", shipped=shipped, downloads=downloads) == {
        "Tanzil": f"{downloads}/Tanzil/kk.zip"
    }
    inputs = opus.inputs(config, "zh", shipped=shipped, downloads=downloads)
    assert inputs == {"OpenSubtitles": f"{downloads}/OpenSubtitles/zh.zip"}
    zip_path = Path(inputs["OpenSubtitles"])
    zip_path.parent.mkdir(parents=True)
    with zipfile.ZipFile(zip_path, "w") as archive:
        archive.writestr("OpenSubtitles.en-zh_cn.en", "Good morning\n")
        archive.writestr("OpenSubtitles.en-zh_cn.zh_cn", "早上好\n")
    args = opus.clean_args(config, inputs, shipped=shipped)
    assert args == ["--manifest", str(manifest), "--zip", f"OpenSubtitles={zip_path}"]
    parsed = build_parser().parse_args(_clean_argv("zh", "opus", args, tmp_path))
    (read,) = opus.bitexts("zh", parsed)
    assert (read.corpus, read.zip_path) == ("OpenSubtitles", zip_path)
    assert list(read.lines()) == [(1, b"Good morning", "早上好".encode())]


def test_demo_has_no_inputs_and_the_job_reads_the_training_part() -> None:
    pytest.importorskip("babel", reason="the demo source needs the 'demo' extra")
    from xlsent.corpus.readers import demo

    source = SOURCES["demo"]
    config = {"corpus": {"source": "demo", "demo": {"heldout_fraction": 0.25}}}
    assert source.inputs(config, "kk", shipped=str, downloads="unused") == {}
    read = _job_bitexts(source, config, "kk", {})
    expected = demo.bitexts("kk", 0.25)
    assert [(b.corpus, list(b.lines())) for b in read] == [
        (b.corpus, list(b.lines())) for b in expected
    ]
    assert source.stats() == {"provenance": demo.provenance()}


def test_identity_is_what_the_clean_rule_compared_before_the_registry() -> None:
    """The `clean` rule's `identity` param in the form it had (common.smk's source_params):
    Snakemake compares its repr, so an equal one reruns no language's cleaning."""
    pytest.importorskip("babel", reason="the demo source needs the 'demo' extra")
    from xlsent.corpus.readers import demo

    corpus = {
        "opus": {"manifest": "resources/opus.yaml", "corpora": ["Tanzil"], "base_url": None},
        "local": {"dir": "raw", "corpora": None},
        "demo": {"heldout_fraction": 0.2, "heldout_max_pairs": 1000},
    }
    config = {"corpus": corpus}
    assert SOURCES["opus"].identity(config) == {"opus": corpus["opus"]}
    assert SOURCES["local"].identity(config) == {"local": corpus["local"]}
    identity = SOURCES["demo"].identity(config)
    assert repr(identity) == repr({"demo": 0.2, "provenance": demo.provenance()})


# -- adding a source: one class and a registry entry ------------------------------------------


class Tsv(Source):
    """A source as a new module would add it: one file of `English<TAB>foreign` lines per
    language, at `corpus.tsv.pattern` with `{lang}` filled in."""

    name = "tsv"

    def inputs(
        self, config: dict, lang: str, *, shipped: Shipped, downloads: str
    ) -> dict[str, str]:
        return {"pairs": config["corpus"]["tsv"]["pattern"].format(lang=lang)}

    def clean_args(self, config: dict, inputs: Mapping[str, str], *, shipped: Shipped) -> list[str]:
        return ["--tsv", inputs["pairs"]]

    def add_arguments(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--tsv", help="a file of English<TAB>foreign lines")

    def bitexts(self, lang: str, args: argparse.Namespace) -> list[Bitext]:
        lines = Path(args.tsv).read_text(encoding="utf-8").splitlines()
        pairs = [(en, xx) for en, xx in (line.split("\t") for line in lines)]
        return [in_memory("tsv", args.tsv, pairs)]


def test_a_registered_source_is_cleaned_by_xlsent_clean(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("babel", reason="the pairs are the demo extra's real translations")
    from xlsent.corpus.readers import demo

    # Real translations (CLDR and Django, English-Kazakh) as a user's tab-separated file.
    pairs = [(en, kk) for _, en, kk in demo.demo_pairs("kk")]
    (tmp_path / "kk.tsv").write_text("".join(f"{en}\t{kk}\n" for en, kk in pairs))
    monkeypatch.setitem(SOURCES, "tsv", Tsv())
    config = {"corpus": {"source": "tsv", "tsv": {"pattern": str(tmp_path / "{lang}.tsv")}}}

    source = SOURCES[config["corpus"]["source"]]  # as corpus_inputs.smk asks the registry
    inputs = source.inputs(config, "kk", shipped=str, downloads="unused")
    assert inputs == {"pairs": str(tmp_path / "kk.tsv")}
    assert source.identity(config) == {"tsv": config["corpus"]["tsv"]}
    out = tmp_path / "out"
    main(_clean_argv("kk", "tsv", source.clean_args(config, inputs, shipped=str), out))

    cleaned = pl.read_parquet(out / "clean.parquet")
    stats = json.loads((out / "clean_stats.json").read_text())
    assert stats["read"] == len(pairs)
    assert 0 < stats["kept"] == cleaned.height < len(pairs)  # CLDR has untranslated names
    assert set(cleaned["source"]) == {"tsv"}
    assert set(cleaned.select("en", "xx").iter_rows()) <= set(pairs)
    # The same as cleaning the pairs directly: the command adds nothing of its own.
    direct = cleaning.clean(
        [in_memory("tsv", str(tmp_path / "kk.tsv"), pairs)],
        "kk",
        tmp_path / "direct.parquet",
        CleanConfig(min_tokens=1, max_length_ratio=3.0),
    )
    assert stats == direct
    assert cleaned.equals(pl.read_parquet(tmp_path / "direct.parquet"))


def test_an_opus_corpus_can_be_skipped_for_some_languages():
    """DAP's corpus takes no CCMatrix for de (and no OpenSubtitles zh): the paper config
    skips them, and the clean job of de reads no CCMatrix zip."""
    from xlsent.config import load

    config = load(ROOT / "config.yaml", ROOT / "workflow" / "schemas" / "config.schema.yaml")
    source = SOURCES["opus"]
    shipped = lambda path: str(ROOT / path)  # noqa: E731
    de = source.inputs(config, "de", shipped=shipped, downloads="d")
    assert "CCMatrix" not in de and "Europarl" in de
    assert "CCMatrix" in source.inputs(config, "bn", shipped=shipped, downloads="d")
    assert "OpenSubtitles" not in source.inputs(config, "zh", shipped=shipped, downloads="d")
