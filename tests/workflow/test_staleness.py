"""What runs again after a change, and what does not: Snakemake's own bookkeeping (params,
input files and their checksums in .snakemake/metadata), no stamps of ours.

test_demo.py has the first two cases on the demo run (nothing changed: nothing to do; an
evaluation setting: evaluation and tables). Here: one run's training setting (only that
run), a changed local corpus file (only its language's corpus, words and alignment shards,
and what depends on them), and a file touched without changing its content (nothing).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from support import (
    ROOT,
    copy_tree,
    demo_config,
    l10n_config,
    l10n_corpus_file,
    planned_jobs,
    snakemake,
    snakemake_env,
    write_config,
)

pytestmark = pytest.mark.workflow

# Rules that gather runs (no wildcards): they follow a change of any run they show, the
# figures of the runs side by side in them (dap's in DAP Figure 1).
AGGREGATES = re.compile(r"tables_\w+|plots|figure_\w+")
# A job's header and its more-indented body; jobs of a group job are printed indented.
JOB = re.compile(
    r"^([ \t]*)(?:local)?(?:rule|checkpoint) (\w+):\n((?:\1[ \t]+.*\n)*)", re.MULTILINE
)


def jobs_in(out: str) -> list[tuple[str, dict[str, str]]]:
    """The (rule, wildcards) of each job Snakemake printed, in a dry run or a real one;
    without the target rule `all`."""
    jobs = []
    for _, rule, body in JOB.findall(out):
        found = re.search(r"^\s+wildcards: (.*)$", body, flags=re.MULTILINE)
        pairs = found.group(1).split(", ") if found else []
        if rule != "all":
            jobs.append((rule, dict(pair.split("=", 1) for pair in pairs)))
    return jobs


def planned(workdir: Path, configfile: Path, *targets: str) -> list[tuple[str, dict[str, str]]]:
    proc = snakemake(workdir, *targets, "--dry-run", "--configfile", str(configfile))
    return jobs_in(proc.stdout + proc.stderr)


def test_one_runs_training_setting_reruns_that_run_and_the_tables(demo_run, tmp_path):
    config = demo_config()
    assert len(config["runs"]) > 1 and "dap" not in config["tables"]["ablation"]["runs"]
    config["runs"]["dap"]["train"]["rtl_weight"] = 0.2
    changed = write_config(tmp_path / "changed.yaml", config)
    jobs = planned(demo_run, changed)
    assert sorted((rule, w) for rule, w in jobs if w) == [
        ("encode", {"run": "dap", "seed": "42", "source": "tatoeba"}),
        ("eval_bucc", {"run": "dap", "seed": "42"}),
        ("eval_retrieval", {"run": "dap", "seed": "42"}),
        ("eval_tatoeba", {"run": "dap", "seed": "42"}),
        ("train", {"run": "dap", "seed": "42"}),
    ]
    aggregates = {rule for rule, w in jobs if not w}
    assert "tables_tatoeba" in aggregates
    assert all(AGGREGATES.fullmatch(rule) for rule in aggregates), aggregates
    # dap is not in the ablation table: that table stays.
    assert "tables_ablation" not in aggregates


def test_a_pretraining_setting_retrains_every_run_that_starts_from_it(demo_run, tmp_path):
    """The demo's encoder and dual-pivot runs start from `mlm` (init_from): a change of mlm's
    training retrains it, then each of them (and evaluates them again); the word-vector runs,
    which start from no model, stay."""
    config = demo_config()
    config["runs"]["mlm"].setdefault("train", {})["lr"] = 1.0e-3
    jobs = planned(demo_run, write_config(tmp_path / "changed.yaml", config))
    starting = {run for run, spec in config["runs"].items() if spec.get("init_from") == "mlm"}
    assert {"tr", "wacse", "dualpivot-sup"} <= starting
    trained = {w["run"] for rule, w in jobs if rule in ("train", "train_dualpivot")}
    assert trained == {"mlm"} | starting
    evaluated = {w["run"] for rule, w in jobs if rule == "eval_tatoeba"}
    assert evaluated == {w["run"] for rule, w in jobs if rule == "encode"} == trained
    assert not [rule for rule, _ in jobs if rule.startswith("bisent2vec") or "bli" in rule]


# -- a local corpus: a directory of Moses files (the l10n run) --------------------------------


@pytest.mark.shared
def test_a_touched_corpus_file_with_the_same_content_reruns_nothing(l10n_run, tmp_path):
    """Snakemake recorded the checksum of each input file (up to --max-checksum-file-size,
    1 MB by default) when its job ran; a newer mtime with the same checksum is no change."""
    workdir = copy_tree(l10n_run, tmp_path / "run")
    configfile = workdir / "config.yaml"
    assert planned(workdir, configfile) == []
    later = time.time() + 60
    for side in ("en", "kk"):
        path = workdir / "corpus" / l10n_corpus_file("kk", side)
        assert path.stat().st_size < 1_000_000
        os.utime(path, (later, later))
    assert planned(workdir, configfile) == []


@pytest.mark.shared
def test_a_changed_corpus_file_reruns_its_language_and_what_follows(l10n_run, tmp_path):
    """A corpus file is an input: editing kk's file re-cleans kk, not de or te, and reruns
    what depends on kk's corpus."""
    workdir = copy_tree(l10n_run, tmp_path / "run")
    configfile = workdir / "config.yaml"
    results = workdir / "results"
    te_files = {
        p: p.read_bytes()
        for pattern in ("corpus/te/*", "words/te/*", "align/eflomal/te/*")
        for p in results.glob(pattern)
    }
    kk_shards = {p: p.stat().st_mtime_ns for p in results.glob("align/eflomal/kk/shard-*")}
    corpora = ("results/corpus/de/train.parquet", "results/corpus/kk/train.parquet")
    assert planned_jobs(workdir, configfile, *corpora) == {}
    for side in ("en", "kk"):  # a new release of the kk corpus: its last 10 pairs removed
        path = workdir / "corpus" / l10n_corpus_file("kk", side)
        lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
        path.write_bytes(gzip.compress(b"".join(lines[:-10])))
    # Of the corpus stage, kk's alone (once test_dag.py's own run of de and kk).
    assert planned_jobs(workdir, configfile, *corpora) == {"clean": 1, "sample": 1}

    proc = snakemake(workdir, "--cores", "2", "--max-threads", "1", "--configfile", str(configfile))
    ran = jobs_in(proc.stdout + proc.stderr)
    per_language = {rule for rule, w in ran if "lang" in w}
    assert {"clean", "sample", "words", "align_shard", "align_manifest"} <= per_language
    # te's corpus, words and alignment shards are not redone: only what depends on the
    # shared scratch tokenizer (trained on every language) is, for every language.
    assert {(rule, w["lang"]) for rule, w in ran if w.get("lang") == "te"} <= {
        ("subwords", "te"),
        ("word_spans", "te"),
    }
    assert all(p.read_bytes() == content for p, content in te_files.items())
    assert all(p.stat().st_mtime_ns != mtime for p, mtime in kk_shards.items())
    rules = {rule for rule, _ in ran}
    assert {"tokenizer", "train", "eval_tatoeba", "tables_tatoeba"} <= rules
    # And then it is up to date.
    assert planned(workdir, configfile) == []


@pytest.mark.shared
def test_a_defined_group_reaches_the_tables_and_its_change_reruns_only_them(l10n_run, tmp_path):
    """`tables.group_languages` (a group the papers average but do not list): a new group
    reruns only the gathering jobs, its column averages its languages, and a changed
    definition reruns them again (the table job's parameters carry the languages)."""
    workdir = copy_tree(l10n_run, tmp_path / "run")
    config = l10n_config()
    config["tables"]["groups"] = ["low4", "pair"]
    config["tables"]["group_languages"] = {"pair": ["kk", "te"]}
    configfile = write_config(workdir / "grouped.yaml", config)
    jobs = planned(workdir, configfile)
    assert jobs and all(not w and AGGREGATES.fullmatch(rule) for rule, w in jobs), jobs
    assert "tables_tatoeba" in {rule for rule, _ in jobs}
    snakemake(
        workdir, "results/tables/tatoeba.csv", "--cores", "1", "--configfile", str(configfile)
    )
    summary = pl.read_csv(workdir / "results/tables/tatoeba.csv")
    langs = pl.read_csv(workdir / "results/tables/tatoeba_langs.csv")
    assert summary["pair"].to_list() == pytest.approx(((langs["kk"] + langs["te"]) / 2).to_list())
    assert summary["low4"].to_list() == [None, None]  # ka and jv were not evaluated
    config["tables"]["group_languages"] = {"pair": ["kk"]}
    changed = planned(
        workdir, write_config(workdir / "changed.yaml", config), "results/tables/tatoeba.csv"
    )
    assert [rule for rule, _ in changed] == ["tables_tatoeba"]


# -- what will rerun and why ---------------------------------------------------------------


def _status(workdir: Path, configfile: Path) -> str:
    """`xlsent status` as a user runs it, in the run directory with the same arguments."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "xlsent.cli",
            "status",
            "--snakefile",
            str(ROOT / "Snakefile"),
            "--configfile",
            str(configfile),
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        env=snakemake_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_status_says_what_reruns_and_why(demo_run, tmp_path):
    workdir = copy_tree(demo_run, tmp_path / "run", link_weights=True)
    assert _status(workdir, workdir / "config.yaml").startswith("Nothing to redo")
    config = demo_config()
    config["runs"]["dap"]["train"]["rtl_weight"] = 0.25
    changed = write_config(tmp_path / "changed.yaml", config)
    out = _status(workdir, changed).splitlines()
    assert out[0].startswith("The next run redoes")
    assert "  train (run=dap, seed=42): settings changed: rtl_weight: 0.8 → 0.25" in out
    assert (
        "  encode (run=dap, seed=42, source=tatoeba): an input is rebuilt: "
        "results/models/dap/seed42" in out
    )


def test_status_lists_results_whose_inputs_were_deleted_by_hand(demo_run, tmp_path):
    """Snakemake keeps an output whose intermediate input was deleted (its rule for temporary
    files); the status names it and the command that recomputes it."""
    workdir = copy_tree(demo_run, tmp_path / "run", link_weights=True)
    shutil.rmtree(workdir / "results/models/tr/seed42")
    out = _status(workdir, workdir / "config.yaml")
    assert "results/vectors/tr/seed42/tatoeba.arrow (from results/models/tr/seed42)" in out
    assert "snakemake --forcerun results/vectors/tr/seed42/tatoeba.arrow" in out
