"""What a config makes (xlsent.config.outputs): `rule all`'s targets, each table's results, the
sentence sources the encoder evaluations read; written out by hand for the shipped configs."""

from __future__ import annotations

import pytest
from support import ROOT

from xlsent import languages
from xlsent.config import (
    bli_results,
    bucc_results,
    final_outputs,
    gpus_per_job,
    load,
    mteb_results,
    mteb_runs,
    retrieval_results,
    table_outputs,
    validate,
    vector_source,
    vector_sources,
)

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
DEMO = load(ROOT / "resources" / "demo" / "config.yaml", SCHEMA)
PAPER = load(ROOT / "config.yaml", SCHEMA)


def test_the_demo_makes_every_table_but_bli_and_mteb():
    assert final_outputs(DEMO) == [
        "results/tables/tatoeba.csv",
        "results/plots/tatoeba_groups.png",
        "results/plots/aligned_words.png",
        "results/plots/tatoeba_tokens.png",
        "results/tables/dev.csv",
        "results/tables/ablation.csv",
        "results/tables/compare.csv",
        "results/tables/transfer.csv",
        "results/tables/retrieval.csv",
        "results/tables/bucc.csv",
        "results/tables/cost.csv",
        *(
            f"results/align/eflomal/{lang}/_SUCCESS"
            for lang in languages.resolve(DEMO["languages"])
        ),
    ]
    assert bli_results(DEMO) == [] and mteb_results(DEMO) == {}


def test_the_paper_config_mines_and_runs_mteb_and_no_retrieval():
    tables = table_outputs(PAPER)
    assert "results/tables/bucc.csv" in tables and "results/tables/mteb.csv" in tables
    assert "results/tables/retrieval.csv" not in tables and retrieval_results(PAPER) == []
    assert final_outputs(PAPER)[-36:] == [
        f"results/align/wspalign/{lang}/_SUCCESS" for lang in languages.resolve("xtreme36")
    ]
    # The run with language embeddings is left out of MTEB, which names no text's language.
    assert "wacse-langemb" not in mteb_runs(PAPER) and "wacse-10k" in mteb_runs(PAPER)
    assert mteb_results(PAPER)["tr/seed0"] == "results/eval/mteb/tr/seed0"


def test_each_tables_results_follow_its_settings():
    config = validate(
        {
            "languages": ["de", "kk"],
            "corpus": {"mining_pairs": 100},
            "runs": {
                "tr": {"method": "tr", "model": "xlmr", "seeds": [42, 0]},
                "b2v": {"method": "bisent2vec", "seeds": [1]},
            },
            "evaluate": {
                "bli": {"dictionaries": {"de": "de-en.txt"}},
                "bucc": {"languages": ["de"], "source": "heldout"},
                "retrieval": {"languages": ["kk"]},
                "mteb": {"tasks": ["STS17"]},
            },
            "tables": {"ablation": {"runs": []}},
        },
        SCHEMA,
    )
    assert bucc_results(config) == [
        "results/eval/bucc/tr/seed42.parquet",
        "results/eval/bucc/tr/seed0.parquet",
    ]
    assert retrieval_results(config) == [
        "results/eval/retrieval/tr/seed42.parquet",
        "results/eval/retrieval/tr/seed0.parquet",
        "results/eval/retrieval/b2v/seed1.parquet",
    ]
    assert bli_results(config) == [
        "results/eval/bli/b2v/seed1/de.en2xx.parquet",
        "results/eval/bli/b2v/seed1/de.xx2en.parquet",
    ]
    assert table_outputs(config) == [
        "results/tables/tatoeba.csv",
        "results/plots/tatoeba_groups.png",
        "results/tables/dev.csv",
        "results/tables/retrieval.csv",
        "results/tables/bli.csv",
        "results/tables/bucc.csv",
        "results/tables/mteb.csv",
    ]


@pytest.mark.parametrize(
    ("settings", "sources"),
    [
        # The demo: retrieval and the mining set are built from the Tatoeba set, one source.
        (
            {"languages": DEMO["languages"], "evaluate": DEMO["evaluate"]},
            {"tatoeba": languages.resolve(DEMO["languages"])},
        ),
        # The mining set of the corpus's held-out split (the pretrained configs'): a second
        # source, in the order the mining names its languages.
        (
            {
                "corpus": {"mining_pairs": 2000},
                "evaluate": {
                    "bucc": {
                        "languages": ["kk", "de"],
                        "source": "heldout",
                        "heldout": {"from": "corpus"},
                    },
                    "retrieval": {"languages": ["kk"], "from": "corpus"},
                },
            },
            {"tatoeba": ["de", "kk"], "mining": ["kk", "de"]},
        ),
        # BUCC 2018's files, beside retrieval among the Tatoeba pairs of one language.
        (
            {
                "evaluate": {
                    "bucc": {"languages": ["de"], "source": "bucc2018"},
                    "retrieval": {"languages": ["kk"], "from": "tatoeba"},
                }
            },
            {"tatoeba": ["de", "kk"], "bucc2018": ["de"]},
        ),
    ],
)
def test_each_source_encodes_the_languages_its_evaluations_read(settings, sources):
    config = validate({"languages": ["de", "kk"], **settings}, SCHEMA)
    assert vector_sources(config) == sources
    read = {task: vector_source(config, task) for task in ("tatoeba", "retrieval", "bucc")}
    assert set(read.values()) == set(sources)


def test_the_cost_table_counts_the_gpus_of_each_jobs_stage_and_run():
    """`tables-cost --gpus`: each encoder and dual-pivot run's GPUs, each aligner's, and the
    encoder evaluations'; the demo's jobs hold none, the paper's trainings one each."""
    assert gpus_per_job(DEMO) == [
        "train/mlm=0",
        "train/tr=0",
        "train/wacse=0",
        "train/dap=0",
        "train/tr-awp=0",
        "train/tr-wtr=0",
        "train/tr-recipe=0",
        "train/me5=0",
        "train/me5-tr=0",
        "train_dualpivot/dualpivot-sup=0",
        "train_dualpivot/dualpivot-unsup=0",
        "train_dualpivot/dualpivot-layer=0",
        "align/eflomal=0",
        "hard_negatives/encode=0",
        "eval/encode=0",
        "eval/mteb=0",
    ]
    paper = gpus_per_job(PAPER)
    assert paper[0] == "train/tr=1" and "align/wspalign=1" in paper
    assert paper[-2:] == ["eval/encode=0", "eval/mteb=0"]
    assert "train_dualpivot/dualpivot-sup-de=1" in paper
