"""The Bi-Sent2vec part of the demo DAG: the C++ build, a model per language pair for
Bi-Sent2vec and the fastText CBOW baseline, their Tatoeba rows in the table, sentence
retrieval among the held-out pairs (the retrieval table), and word translation (BLI) on the
FreeDict en-de dictionary where installed.

Two of the demo's languages (de, kk) and its two word-vector runs only, with tf-idf
weighting on (the demo leaves it off), so that the held-out words are exercised too: in a
copy of the demo run, whose models they are.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from support import copy_tree, demo_config, planned_jobs, snakemake, write_config

from xlsent.methods import WORD_VECTOR_METHODS
from xlsent.tables.devices import COLUMNS as DEVICES

pytestmark = pytest.mark.workflow

FREEDICT = Path("/usr/share/dictd/freedict-eng-deu.dict.dz")
LANGS = ["de", "kk"]
RUNS = ["bisent2vec-uni", "fasttext-cbow"]
TARGETS = ["results/tables/tatoeba.csv", "results/plots/tatoeba_groups.png"]
RETRIEVAL_TABLE = "results/tables/retrieval.csv"


def bisent2vec_config(bli: bool) -> dict:
    config = demo_config()
    assert [run for run in config["runs"] if run in RUNS] == RUNS
    config["languages"] = LANGS
    config["runs"] = {run: config["runs"][run] for run in RUNS}
    config["bisent2vec"]["tfidf"] = True
    config["evaluate"]["bucc"] = {"languages": []}  # no sentence encoder to mine with
    # The paper's sentence retrieval on the demo's held-out test pairs.
    config["evaluate"]["retrieval"] = {"languages": LANGS, "from": "tatoeba"}
    config["tables"] = {"groups": ["low4"], "ablation": {"runs": []}}
    if bli:
        config["evaluate"]["bli"] = {"dictionaries": {"de": f"freedict:{FREEDICT}"}}
    return config


@pytest.fixture(scope="module")
def b2v_run(demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The demo run under this module's config: the demo's corpus, words, C++ build and
    word-vector models of de and kk are this config's too (tf-idf is the evaluation's
    setting), so only the evaluations, the dictionaries and the tables run."""
    workdir = copy_tree(demo_run, tmp_path_factory.mktemp("bisent2vec") / "run", link_weights=True)
    bli = FREEDICT.is_file() and FREEDICT.with_name("freedict-eng-deu.index").is_file()
    config = bisent2vec_config(bli)
    configfile = write_config(workdir / "config.yaml", config)
    targets = [*TARGETS, RETRIEVAL_TABLE, *(["results/tables/bli.csv"] if bli else [])]
    snakemake(
        workdir, *targets, "--cores", "2", "--max-threads", "1", "--configfile", str(configfile)
    )
    return {"dir": workdir, "config": config, "configfile": configfile, "targets": targets}


def test_a_model_per_run_and_language_pair(b2v_run):
    results = b2v_run["dir"] / "results"
    assert (results / "build/bisent2vec/bisent2vec").is_file()
    assert (results / "benchmarks/bisent2vec_build.tsv").is_file()
    settings = b2v_run["config"]["bisent2vec"]
    for run in RUNS:
        for lang in LANGS:
            model = results / f"models/{run}/seed42/{lang}"
            files = {p.name for p in model.iterdir()}
            assert {"vectors.en.vec", f"vectors.{lang}.vec", "stats.json"} <= files
            assert ("model.bin" in files) == (run == "bisent2vec-uni")
            stats = json.loads((model / "stats.json").read_text())
            assert stats["method"] == b2v_run["config"]["runs"][run]["method"]
            assert stats["langs"] == ["en", lang]
            assert stats["settings"]["dim"] == settings["dim"]
            assert stats["settings"]["seed"] == 42  # the run's seed
            assert stats["vocabulary"][lang] > 500  # min_count 1 on ~1,300 pairs
            header = (model / f"vectors.{lang}.vec").open().readline().split()
            assert int(header[1]) == settings["dim"]
            log = b2v_run["dir"] / f"logs/bisent2vec_train/{run}/seed42/{lang}.log"
            assert "vocabulary" in log.read_text()


def test_tatoeba_rows_for_the_word_vector_runs(b2v_run):
    results = b2v_run["dir"] / "results"
    for run in RUNS:
        rows = pl.read_parquet(results / f"eval/tatoeba/{run}/seed42.parquet")
        assert sorted(set(rows["lang"])) == sorted(LANGS)
        assert rows.height == 3 * len(LANGS)  # xx2en, en2xx, mean
        assert set(rows["run"]) == {run} and set(rows["seed"]) == {42}
        # Both languages hold out more pairs than the demo keeps: its cap, 100 each.
        cap = b2v_run["config"]["corpus"]["demo"]["heldout_max_pairs"]
        assert rows["n"].to_list() == [cap] * rows.height
    summary = pl.read_csv(results / "tables/tatoeba.csv")
    assert summary["run"].to_list() == RUNS
    # 100 held-out pairs per language (chance: 1%); the demo's settings reach about 47% on
    # the full demo.
    assert all(10 < value <= 100 for value in summary["all"])
    assert (results / "plots/tatoeba_groups.png").stat().st_size > 0


def test_retrieval_table_for_the_word_vector_runs(b2v_run):
    results = b2v_run["dir"] / "results"
    table = pl.read_csv(results / "tables/retrieval.csv")
    assert table["run"].to_list() == RUNS
    # low4 holds languages not retrieved: only `all`, then each language both ways.
    per_language = [f"{lang}{d}" for lang in LANGS for d in ("", "_xx2en", "_en2xx")]
    assert table.columns == [
        *("run", "seeds", "all", "all_xx2en", "all_en2xx"),
        *per_language,
        *("missing", "scarce"),
        *DEVICES,
    ]
    # Word vectors train and score on the CPU in fp32, by construction.
    assert table.select(DEVICES).unique().rows() == [("cpu", "fp32", "cpu", "fp32")]
    for row in table.to_dicts():
        for lang in LANGS:
            assert 10 < row[lang] <= 100, (row["run"], lang)  # chance: under 1%
    tatoeba = pl.read_parquet(results / "eval/tatoeba/bisent2vec-uni/seed42.parquet")
    rows = pl.read_parquet(results / "eval/retrieval/bisent2vec-uni/seed42.parquet")
    assert set(rows["task"]) == {"retrieval"} and rows.height == 3 * len(LANGS)
    # The same held-out pairs and the same tf-idf vectors (this config's tatoeba rows use
    # them too): where no pair was dropped as a repeat, the numbers are Tatoeba's.
    same = rows.join(tatoeba, on=["lang", "direction", "n"], how="inner", suffix="_tatoeba")
    assert same.height > 0  # the demo's de and kk test pairs hold no repeat
    assert all(a == b for a, b in same.select("value", "value_tatoeba").rows())
    assert all(0 < n <= t for n, t in zip(rows["n"], tatoeba["n"], strict=True))
    log = (b2v_run["dir"] / "logs/eval/retrieval/bisent2vec-uni/seed42.log").read_text()
    assert "held-out pairs" in log
    assert "Held-out pairs n per language" in (results / "tables/retrieval.md").read_text()


def test_bli_table(b2v_run):
    if "results/tables/bli.csv" not in b2v_run["targets"]:
        pytest.skip(
            f"{FREEDICT} (+ .index) is not installed: the BLI part needs the FreeDict en-de "
            "dictionary (apt-get install dict-freedict-eng-deu; tests/data/install_system_deps.sh)"
        )
    results = b2v_run["dir"] / "results"
    table = pl.read_csv(results / "tables/bli.csv")
    assert table["run"].to_list() == RUNS
    metrics = [f"p@{k}_{m}" for m in ("nn", "csls") for k in (1, 5, 10)]
    assert table.columns == [
        "run",
        "seeds",
        *(f"de_{d}_{m}" for d in ("en2xx", "xx2en") for m in [*metrics, "n"]),
        *DEVICES,
    ]
    for row in table.to_dicts():
        for d in ("en2xx", "xx2en"):
            for m in ("nn", "csls"):
                p1, p5, p10 = (row[f"de_{d}_p@{k}_{m}"] for k in (1, 5, 10))
                assert 0 <= p1 <= p5 <= p10 <= 100
                assert p10 > 5, (row["run"], d, m)  # CLDR names and UI words: far from chance
    coverage = json.loads((results / "eval/bli/bisent2vec-uni/seed42/de.en2xx.json").read_text())
    # The test part (half the English words went to the seed part), in the vocabularies.
    assert coverage["coverage"]["queries"] == coverage["test_words"] > 50
    assert table["de_en2xx_n"][0] == coverage["test_words"]
    # The xx2en dictionary is the en-de one reversed; each direction is tested on its part
    # that shares no word with the seed part (the same pairs, reversed: the split is one).
    split = json.loads((results / "data/bli/de.en2xx.test.json").read_text())
    assert 0 < split["en2xx"]["test_source_words"] < split["en2xx"]["source_words"]
    assert split["seed_pairs"] > 10000
    test = (results / "data/bli/de.en2xx.test.txt").read_text().splitlines()
    test_xx2en = (results / "data/bli/de.xx2en.test.txt").read_text().splitlines()
    assert len(test) == split["en2xx"]["test_pairs"]
    assert sorted("\t".join(reversed(x.split("\t"))) for x in test) == sorted(test_xx2en)
    en2xx = (results / "data/bli/de.en2xx.txt").read_text().splitlines()
    xx2en = (results / "data/bli/de.xx2en.txt").read_text().splitlines()
    assert len(en2xx) == len(xx2en) > 10000
    assert "\t".join(reversed(en2xx[0].split("\t"))) in xx2en
    assert "| bisent2vec-uni | 1 |" in (results / "tables/bli.md").read_text()


def test_a_rerun_plans_nothing_and_tfidf_reruns_only_the_evaluation(b2v_run, tmp_path):
    workdir, configfile = b2v_run["dir"], b2v_run["configfile"]
    assert planned_jobs(workdir, configfile, *b2v_run["targets"]) == {}
    config = json.loads(json.dumps(b2v_run["config"]))
    config["bisent2vec"]["tfidf"] = False
    changed = write_config(tmp_path / "changed.yaml", config)
    assert planned_jobs(workdir, changed, *TARGETS) == {
        "eval_tatoeba_bisent2vec": len(RUNS),
        "tables_tatoeba": 1,
        "plots": 1,
    }
    # The retrieval weights by tf-idf whatever bisent2vec.tfidf says: nothing to redo.
    assert planned_jobs(workdir, changed, RETRIEVAL_TABLE) == {}
    config["runs"]["bisent2vec-uni"]["bisent2vec"] = {"epoch": 10}
    changed = write_config(tmp_path / "changed.yaml", config)
    assert planned_jobs(workdir, changed, *TARGETS) == {
        "bisent2vec_train": len(LANGS),
        "eval_tatoeba_bisent2vec": len(RUNS),
        "tables_tatoeba": 1,
        "plots": 1,
    }


# -- dry runs: what the configuration plans -------------------------------------------------
def test_the_bli_table_is_planned_only_with_dictionaries(tmp_path):
    config = demo_config()
    word_vector_runs = [run for run, spec in config["runs"].items() if "model" not in spec]
    assert word_vector_runs == RUNS
    jobs = planned_jobs(tmp_path, write_config(tmp_path / "plain.yaml", config))
    assert "tables_bli" not in jobs and "eval_bli" not in jobs
    assert jobs["bisent2vec_train"] == len(RUNS) * 12 and jobs["bisent2vec_build"] == 1
    # The demo's retrieval table: every run, word vectors and encoders side by side.
    methods = [spec["method"] for spec in config["runs"].values()]
    vectors = sum(method in WORD_VECTOR_METHODS for method in methods)
    assert (jobs["eval_retrieval_bisent2vec"], jobs["eval_retrieval"]) == (
        vectors,
        len(methods) - vectors,
    )
    assert jobs["tables_retrieval"] == 1
    (tmp_path / "kk-en.txt").write_text("сәлем\thello\n")
    config["evaluate"]["bli"] = {
        "dictionaries": {
            "de": "https://example.org/en-de.txt",  # en2xx and, reversed, xx2en
            "kk": {"xx2en": "kk-en.txt"},  # one direction of its own
        }
    }
    jobs = planned_jobs(tmp_path, write_config(tmp_path / "bli.yaml", config))
    assert (jobs["bli_dictionary"], jobs["eval_bli"], jobs["tables_bli"]) == (3, 3 * len(RUNS), 1)


def test_without_word_vector_runs_no_bisent2vec_job_is_planned(tmp_path):
    config = demo_config()
    config["runs"] = {"tr": config["runs"]["tr"] | {"init_from": None}}
    config["tables"]["ablation"]["runs"] = []
    config["tables"]["compare"]["pairs"] = []
    jobs = planned_jobs(tmp_path, write_config(tmp_path / "config.yaml", config))
    assert jobs["train"] == jobs["eval_tatoeba"] == 1
    assert not [rule for rule in jobs if "bisent2vec" in rule or "bli" in rule]
