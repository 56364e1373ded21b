"""The DAG as Snakemake plans it (dry runs: seconds), and the errors a user sees first."""

from __future__ import annotations

import re

import pytest
import yaml
from support import ROOT, demo_config, planned_jobs, snakemake, snakemake_env, write_config

from xlsent import languages
from xlsent.config import load as load_config
from xlsent.corpus.readers import opus

pytestmark = pytest.mark.workflow


def test_paper_config_plans_the_whole_pipeline(tmp_path):
    # With the schema's defaults: config.yaml holds only what differs from them.
    config = load_config(ROOT / "config.yaml", ROOT / "workflow/schemas/config.schema.yaml")
    jobs = planned_jobs(tmp_path, ROOT / "config.yaml", "results/tables/tatoeba.csv")
    manifest = opus.load_manifest(ROOT / "resources/opus.yaml")
    languages = 36
    corpora, skip = config["corpus"]["opus"]["corpora"], config["corpus"]["opus"]["skip"]
    downloads = sum(
        len(opus.archives(manifest, lang, [c for c in corpora if lang not in skip.get(c, [])]))
        for lang in manifest_langs()
    )
    assert jobs == {
        "opus_download": downloads,
        "clean": languages,
        "sample": languages,
        # xlm-roberta-base for the fine-tuning runs, xlm-roberta-large for the dual-pivot ones,
        # bert-base-multilingual-cased for the tokenizer of DAP's corpus filters
        "fetch_model": 3,
        "tokenizer": 2,
        # every language's train and dev splits for xlmr (a job each language), the pivots'
        # (de, ar) for xlmr-large
        "subwords": languages + 2,
        # The alignment shards hide behind the `sample` checkpoint; their manifests and the
        # word spans of the wacse runs are planned.
        "align_manifest": languages,
        "word_spans": languages,
        # tr, wacse, dap, tr-tlm × seeds 42 and 0; six 10K-step ablations (WACSE Tables 8-10
        # and WTR's temperature)
        "train": 4 * 2 + 6,
        # dual-pivot: sup and unsup on de and on ar (Table 3), Table 2's unsup on both, the
        # best single layer, Table 4's two ablations
        "train_dualpivot": 9,
        "fetch_tatoeba": 1,
        # each run's Tatoeba sentences encoded once (a GPU job), then searched
        "encode": 4 * 2 + 6 + 9,
        "eval_tatoeba": 4 * 2 + 6 + 9,
        # bisent2vec-uni, bisent2vec-bi and fasttext-cbow × seeds 42 and 0: a model per
        # language on its training words (the C++ trainer built once, the tf-idf weights
        # counted on the same words), one evaluation each.
        "words": languages,
        "bisent2vec_build": 1,
        "bisent2vec_train": 3 * 2 * languages,
        "eval_tatoeba_bisent2vec": 3 * 2,
        "tables_tatoeba": 1,
    }


def test_the_snakemake_process_imports_no_data_library(tmp_path):
    """The rule files name paths and size jobs; reading data is the jobs' work. Every start of
    Snakemake (each run, each dry run, each job's own on a cluster) imported polars and faiss
    (0.2 s) for two column lists and BUCC's file names, until those had light modules of
    their own (`xlsent.train.columns`, `xlsent.evaluate.bucc_files`)."""
    configfile = write_config(tmp_path / "config.yaml", demo_config())
    env = snakemake_env(PYTHONPROFILEIMPORTTIME="1")
    proc = snakemake(tmp_path, "--dry-run", "--configfile", str(configfile), env=env)
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    # The rule files were read: their imports are there.
    assert {"xlsent.train.columns", "xlsent.evaluate.bucc_files", "pyarrow"} <= imported
    assert not imported & {"polars", "faiss", "torch", "transformers"}


def test_a_run_on_several_gpus_starts_a_process_per_gpu(tmp_path):
    """The train command starts the processes itself (`xlsent.train.launch`); the job asks
    for the GPUs on one node."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["runs"] = {"tr": {"method": "tr", "model": "xlmr", "seeds": [42], "train": {"gpus": 4}}}
    config["tables"]["ablation"]["runs"] = []
    configfile = write_config(tmp_path / "config.yaml", config)
    out = snakemake(
        tmp_path,
        "results/models/tr/seed42",
        "--dry-run",
        "--printshellcmds",
        "--configfile",
        str(configfile),
    ).stdout
    assert re.search(r"\bxlsent train .* --processes 4 --checkpoints ", out)
    assert "torchrun" not in out
    assert "nodes=1, gpu=4" in out


def manifest_langs() -> list[str]:
    return languages.resolve("xtreme36")


def _failed_dry_run(workdir, config: dict, *targets: str) -> str:
    configfile = write_config(workdir / "config.yaml", config)
    proc = snakemake(
        workdir, *targets, "--dry-run", "--configfile", str(configfile), should_fail=True
    )
    return proc.stdout + proc.stderr


def test_unknown_config_key_stops_with_its_name(tmp_path):
    config = demo_config()
    config["corpus"]["max_pair"] = 10
    out = _failed_dry_run(tmp_path, config)
    assert "config key `corpus.max_pair` (did you mean `corpus.max_pairs`?) is not known" in out


def test_unknown_language_stops_with_the_valid_codes(tmp_path):
    config = demo_config()
    config["languages"] = ["kk", "kz"]
    out = _failed_dry_run(tmp_path, config)
    assert "config key `languages`: unknown language code or group 'kz'" in out
    assert " kk " in out and "group names: low4, low5, low8" in out


def test_missing_tatoeba_file_is_named_before_anything_runs(tmp_path):
    tatoeba = tmp_path / "tatoeba"
    tatoeba.mkdir()
    (tatoeba / "tatoeba.kaz-eng.kaz").write_text("Сәлем!\n")
    (tatoeba / "tatoeba.kaz-eng.eng").write_text("Hello!\n")
    config = demo_config()
    config["languages"] = ["kk", "te"]
    config["dualpivot"]["pivot"] = "kk"  # the demo's, de, is left out
    config["evaluate"] = {"tatoeba": {"dir": str(tatoeba)}}
    out = _failed_dry_run(tmp_path, config)
    assert (
        f"config key `evaluate.tatoeba.dir`: {tatoeba} lacks the Tatoeba files of te "
        "(tatoeba.tel-eng.tel, tatoeba.tel-eng.eng)"
    ) in out
    assert "or leave te out of `evaluate.tatoeba.languages`" in out
    assert "Building DAG of jobs" not in out


def test_a_language_without_local_files_stops_before_any_job(tmp_path):
    """Even a target that needs only the languages with files: the workflow itself would
    look for te's files only when a target needs te, after hours of de's and kk's work."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("l10n.de-en.de", "l10n.de-en.en", "l10n.en-kk.en", "l10n.en-kk.kk"):
        (corpus / name).write_text("A sentence of the corpus.\n")
    config = demo_config()
    config["languages"] = ["de", "kk", "te", "ka"]
    config["evaluate"]["bucc"]["languages"] = ["de", "kk"]  # mined in trained languages
    config["corpus"] = {"source": "local", "local": {"dir": str(corpus)}}
    out = _failed_dry_run(tmp_path, config, "results/align/eflomal/de/_SUCCESS")
    assert (
        f"config key `corpus.local.dir`: {corpus} has no corpus files for te, ka: expected "
        "{corpus}.en-te.en and .te, {corpus}.en-ka.en and .ka"
    ) in out
    assert "put them there or remove te, ka from `languages`" in out
    assert "Building DAG of jobs" not in out


def test_a_batch_that_is_no_multiple_of_the_micro_batch_stops_before_any_job(tmp_path):
    config = demo_config()
    config["runs"]["wacse"]["train"] = {"batch_size": 200}  # the demo's micro-batch: 128
    out = _failed_dry_run(tmp_path, config)
    assert (
        "config key `runs.wacse.train.batch_size` (200) must be a multiple of "
        "`train.micro_batch_size` (128), as an optimizer step accumulates whole micro-batches: "
        "set it to 128 or 256, or change the micro-batch size"
    ) in out
    assert "Building DAG of jobs" not in out


def _dag_edges(workdir, configfile, *targets: str) -> set[tuple[str, str]]:
    """The edges of the planned DAG (`snakemake --dag`) between jobs named `rule run`."""
    out = snakemake(workdir, *targets, "--dag", "--configfile", str(configfile)).stdout
    names = {
        node: " ".join([rule, *re.findall(r"\\nrun: ([\w-]+)", label)])
        for node, rule, label in re.findall(r'^\s*(\d+)\[label = "(\w+)((?:\\n[^"]*)?)"', out, re.M)
    }
    return {(names[a], names[b]) for a, b in re.findall(r"^\s*(\d+) -> (\d+)$", out, re.M)}


def test_a_run_starting_from_another_trains_after_it(tmp_path):
    """`init_from` is a dependency: the demo's pretraining (mlm) is trained first, and the
    runs that fine-tune or freeze it read its model."""
    config = demo_config()
    starts = [run for run, spec in config["runs"].items() if spec.get("init_from") == "mlm"]
    assert {"tr", "wacse", "dap", "dualpivot-sup", "dualpivot-unsup", "dualpivot-layer"} <= set(
        starts
    )
    configfile = write_config(tmp_path / "config.yaml", config)
    targets = [f"results/models/{run}/seed42" for run in starts]
    edges = _dag_edges(tmp_path, configfile, *targets)
    for run in starts:
        rule = "train_dualpivot" if run.startswith("dualpivot") else "train"
        assert ("train mlm", f"{rule} {run}") in edges, run
    # Without init_from the runs train from scratch, with no edge from mlm (the dual-pivot
    # heads and the hard-negative run need a model to start from: left out).
    for spec in config["runs"].values():
        spec.pop("init_from", None)
    config["runs"] = {
        k: v
        for k, v in config["runs"].items()
        if not k.startswith("dualpivot") and not v.get("train", {}).get("hard_negatives")
    }
    alone = _dag_edges(tmp_path, write_config(tmp_path / "alone.yaml", config), *targets[:3])
    assert ("tokenizer", "train tr") in alone
    assert not any(a == "train mlm" for a, _ in alone)


def test_a_wacse_run_reads_the_links_of_its_own_aligner(tmp_path):
    """`runs.X.aligner`: a wacse run on SimAlign's links (over me5) beside the demo's wacse on
    eflomal's: each run's word spans come from its aligner's shards (which hide behind the
    `sample` checkpoint in a dry run; their manifests are planned)."""
    config = demo_config()
    config["align"]["simalign"] = {"model": "me5"}
    config["runs"]["wacse-simalign"] = {**config["runs"]["wacse"], "aligner": "simalign"}
    configfile = write_config(tmp_path / "config.yaml", config)
    langs = len(languages.resolve(config["languages"]))
    ours = planned_jobs(tmp_path, configfile, "results/models/wacse-simalign/seed42")
    assert (ours["align_manifest"], ours["word_spans"]) == (langs, langs)
    spans = snakemake(
        tmp_path,
        "results/models/wacse-simalign/seed42",
        "results/models/wacse/seed42",
        "--dry-run",
        "--configfile",
        str(configfile),
    ).stdout
    for aligner in ("simalign", "eflomal"):
        assert f"results/wordspans/tiny/{aligner}/kk.parquet" in spans
