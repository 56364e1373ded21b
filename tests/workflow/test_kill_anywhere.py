"""Kill anything, anywhere: a plain rerun recovers with the results of an uninterrupted run.

On a tiny DAG of the whole workflow (two languages of the embedded demo; a one-layer encoder
pretrained with MLM, then trained with TR from it and with WACSE on WSPAlign links of a tiny
aligner built here; a dual-pivot head over the MLM encoder; Bi-Sent2vec; Tatoeba; tables and
plots), every long-running job kind is killed with SIGKILL at its named
kill point (`xlsent.failures.kill_points`), and Snakemake itself with SIGTERM and with
SIGKILL. After each kill:

(a) nothing stale is reported as done: the dry run plans the tables, and every result that
    exists either is final (equal to the uninterrupted run's) or is planned to be rebuilt;
(b) the plain command of the README (`snakemake --cores N --configfile FILE`) finishes the
    work, and every output equals, byte for byte, the uninterrupted run's;
(c) no temporary file is left in the working directory.

Everything here is deterministic on a CPU (one thread per trainer; the aligner is a
network), so (b) compares bytes; only records of time and speed (benchmarks, logs,
throughput fields of the training log, the trainers' wall-clock statistics) are left out of
the comparison.

Kills happen after a settings change (a finished run whose config then changes: the case
where stale results used to survive). A change of the corpus makes the rerun remove every
result at its start, so from the first kill on the tree is a first run's, and every kill
point fires once in it: the tree it starts from is a small run of another corpus sample
(`other_config`), and the reference is the base run. Snakemake itself is killed while a
training job runs, after a change of that run's training alone, so that only the training
and what reads it rerun.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import polars as pl
import pytest
from support import (
    clean_demo,
    copy_tree,
    snakemake,
    snakemake_command,
    snakemake_env,
    tiny_qa_model,
    tiny_shape,
    write_config,
)

from xlsent.failures.locks import group_members
from xlsent.models.tokenizer import train_sentencepiece
from xlsent.tables.speed import COLUMNS as SPEED_COLUMNS
from xlsent.train import speed

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

# Every kill point of the workflow's jobs (xlsent.failures.kill_points.kill_point), named by
# rule; train at four moments: before its first checkpoint (its first step), right after a
# checkpoint, during a dev evaluation, and while it writes the exported model.
KILL_POINTS = [
    "clean",
    "sample",
    "words",
    "tokenizer",
    "subwords",
    "align_shard",
    "word_spans",
    "train.step",
    "train.evaluate",
    "train.checkpoint",
    "train.export",
    "dualpivot.train",
    "dualpivot.export",
    "bisent2vec_train",
    "encode",
    "eval_tatoeba",
]
CORES = "2"
# Outputs that record time or speed, not results.
UNTIMED = (
    "results/benchmarks/",
    "results/checkpoints/",
    "results/build/",
    "results/tables/cost.",  # the jobs' times and memory
    "results/tables/dev.md",  # dev.csv's numbers (compared without its speed columns)
)
TIMING_KEYS = {
    *speed.FIELDS,  # a training log line's speed
    "wall_seconds",
    "words_per_sec_per_thread",
    "peak_rss_mb",
    "seconds",
    "cpu_seconds",
}


def base_config(aligner: Path) -> dict:
    return {
        "languages": ["kk", "te"],
        "corpus": {
            "source": "demo",
            "demo": {"heldout_fraction": 0.2, "heldout_max_pairs": 60},
            "clean": {"min_tokens": 1},
            "max_pairs": 240,
            "dev_pairs": 30,
            "seed": 0,
        },
        "align": {
            "method": "wspalign",
            "shard_size": 120,
            "wspalign": {
                "model": str(aligner),
                "threshold": 0.05,
                "batch_size": 64,
                "device": "cpu",
                "precision": "fp32",
                "gpus": 0,
            },
        },
        "models": {
            "tiny": {
                "init": "scratch",
                "vocab_size": 400,
                "tokenizer_sentences": 2000,
                **tiny_shape(),
            }
        },
        "runs": {
            "mlm": {"method": "mlm", "model": "tiny", "seeds": [42], "train": {"max_steps": 4}},
            "tr": {
                "method": "tr",
                "model": "tiny",
                "seeds": [42],
                "init_from": "mlm",
                "train": {"max_steps": 12},
            },
            "wacse": {"method": "wacse", "model": "tiny", "seeds": [42], "train": {"max_steps": 8}},
            "dualpivot-sup": {
                "method": "dualpivot-sup",
                "model": "tiny",
                "seeds": [42],
                "init_from": "mlm",
                "dualpivot": {"pivot": "kk", "steps": 6, "log_every": 3, "batch_size": 8},
            },
            "bisent2vec-uni": {"method": "bisent2vec", "seeds": [42]},
        },
        "train": {
            "max_length": 24,
            "lr": 2.0e-3,
            "batch_size": 32,
            "micro_batch_size": 32,
            "eval_every": 4,
            "checkpoint_every": 4,
            "log_every": 2,
            "gpus": 0,
            "threads": 1,
        },
        "dualpivot": {"max_length": 24, "gpus": 0, "threads": 1},
        "bisent2vec": {"dim": 16, "min_count": 1, "epoch": 5, "lr": 0.2, "threads": 1},
        "evaluate": {"batch_size": 64, "tatoeba": {"dir": "results/demo/tatoeba"}},
        "tables": {"groups": ["low4"], "ablation": {"runs": ["tr", "wacse"]}},
        # WACSE Figure 1's panel of wacse (kk and te) from the few links of 240 pairs: killed
        # and rebuilt with the whole DAG after the settings change. Without tr's panel, the
        # tests that retrain tr do not redraw it (5 to 7 CPU-s each, five times).
        "figures": {"aligned_words": {"runs": ["wacse"], "pairs": 40}},
    }


def other_config(aligner: Path) -> dict:
    """A small run that every stage of the base config's differs from: stricter cleaning and
    another sample of the corpus (so every later stage differs), one language, fewer TR steps
    from no MLM run (the case of the report: a training's steps changed), no figures. Its
    finished tree is where the kills after a settings change start: a whole DAG of every
    kind of result (corpus to plots) at a third of the base run's cost."""
    config = base_config(aligner)
    config["languages"] = ["kk"]
    config["corpus"]["seed"] = 1
    config["corpus"]["clean"]["max_length_ratio"] = 2.5
    tr = {**config["runs"]["tr"], "train": {"max_steps": 4}}
    del tr["init_from"]
    config["runs"] = {"tr": tr}
    config["tables"] = {"groups": ["low4"], "ablation": {"runs": []}}
    config["figures"] = {"aligned_words": {"runs": []}}
    return config


def retrained_config(aligner: Path) -> dict:
    """The base config with more steps for TR: only TR, its evaluations and the tables (the
    tables' inputs) are redone."""
    config = base_config(aligner)
    config["runs"]["tr"]["train"]["max_steps"] = 16
    return config


@pytest.fixture(scope="module")
def aligner(tmp_path_factory) -> Path:
    """A tiny randomly initialised WSPAlign-style QA model with a SentencePiece tokenizer
    trained on real demo text: arbitrary but deterministic links."""
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("aligner")
    corpus = root / "kk.parquet"
    clean_demo("kk", corpus)
    train_sentencepiece({"kk": corpus}, root / "tokenizer", vocab_size=300)
    tokenizer = AutoTokenizer.from_pretrained(root / "tokenizer")
    model = tiny_qa_model(tokenizer)
    out = root / "model"

    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _plain_run(workdir: Path, *args: str, env: dict[str, str] | None = None, **kwargs):
    """The README's command for a run of a config file (targets: `rule all`)."""
    configfile = str(workdir / "config.yaml")
    return snakemake(
        workdir, *args, "--cores", CORES, "--configfile", configfile, env=env, **kwargs
    )


@pytest.fixture(scope="module")
def base_run(tmp_path_factory, aligner) -> Path:
    workdir = tmp_path_factory.mktemp("base")
    write_config(workdir / "config.yaml", base_config(aligner))
    _plain_run(workdir)
    return workdir


@pytest.fixture(scope="module")
def other_run(tmp_path_factory, aligner) -> Path:
    """A finished run of `other_config`: the tree the base config's kills start from."""
    workdir = tmp_path_factory.mktemp("other")
    write_config(workdir / "config.yaml", other_config(aligner))
    _plain_run(workdir)
    return workdir


@pytest.fixture(scope="module")
def retrained_run(tmp_path_factory, base_run, aligner) -> Path:
    """The base run after TR's change of steps, uninterrupted: the reference of the kills of
    a training job and of Snakemake."""
    workdir = copy_tree(base_run, tmp_path_factory.mktemp("retrained") / "run")
    write_config(workdir / "config.yaml", retrained_config(aligner))
    _plain_run(workdir)
    return workdir


# -- what is compared --------------------------------------------------------------------


def _results(workdir: Path) -> dict[str, Path]:
    """Every result file of a run, by path relative to the run directory."""
    return {
        str(path.relative_to(workdir)): path
        for path in sorted((workdir / "results").rglob("*"))
        if path.is_file() and not str(path.relative_to(workdir)).startswith(UNTIMED)
    }


def _content(path: Path) -> bytes | object:
    """What must not change between runs: the bytes, or a record without its timings."""
    if path.name == "train_log.jsonl":
        return [_untimed(json.loads(line)) for line in path.read_text().splitlines()]
    if path.name == "dev.csv":  # its last columns are the trainings' speed
        return pl.read_csv(path).drop(SPEED_COLUMNS).rows()
    if path.name == "stats.json" and "models" in path.parts:  # the word-vector trainers'
        return _untimed(json.loads(path.read_text()))
    return path.read_bytes()


def _untimed(record: object) -> object:
    if isinstance(record, dict):
        return {k: _untimed(v) for k, v in record.items() if k not in TIMING_KEYS}
    if isinstance(record, list):
        return [_untimed(v) for v in record]
    return record


def assert_same_results(run: Path, reference: Path) -> None:
    """(b) Every result of `run` equals the reference run's, and no result is missing."""
    ours, theirs = _results(run), _results(reference)
    assert sorted(ours) == sorted(theirs)
    differ = [name for name in ours if _content(ours[name]) != _content(theirs[name])]
    assert not differ, f"results that differ from the uninterrupted run: {differ}"


def assert_no_temporary_files(workdir: Path) -> None:
    """(c) Nothing a killed writer left behind: the `.NAME.tmp-PID` of atomic writes, a
    clean's first pass, a Bi-Sent2vec pairs file."""
    leftovers = [
        str(path.relative_to(workdir))
        for path in workdir.rglob(".*")
        if ".snakemake" not in path.parts
        and (".tmp-" in path.name or path.name.endswith((".pass1", ".pairs.txt")))
    ]
    assert not leftovers, f"temporary files left behind: {leftovers}"


def assert_nothing_stale_is_done(workdir: Path, reference: Path) -> str:
    """(a) After a kill, the tables are planned, and every evaluation or table that exists
    is final or planned to be rebuilt. Returns what the dry run printed."""
    proc = _plain_run(workdir, "--dry-run", should_fail=None, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"the dry run failed after a kill:\n{out[-3000:]}"
    assert "Nothing to be done" not in out, "a killed run reported as complete"
    assert "rule tables_tatoeba:" in out, "the Tatoeba table was reported up to date"
    final = _results(reference)
    for name, path in _results(workdir).items():
        if name.startswith(("results/eval/", "results/tables/", "results/plots/")):
            stale = name not in final or _content(path) != _content(final[name])
            assert not stale or f" {name}" in out or f"{name}," in out, (
                f"{name} holds stale results and the dry run does not rebuild it"
            )
    return out


def assert_as_a_first_run(workdir: Path) -> None:
    """Nothing of the runs is left: no model, vectors, evaluation, table or plot."""
    left = [
        str(path.relative_to(workdir))
        for part in ("models", "vectors", "eval", "tables", "plots")
        for path in (workdir / "results" / part).rglob("*")
        if path.is_file()
    ]
    assert not left, f"results left after the first kill of a rerun from the corpus: {left}"


def kill_everywhere(
    workdir: Path, reference: Path, kill_log: Path, after_first_kill=lambda: None
) -> list[str]:
    """Run the plain command (with `--keep-going`) with every kill point not yet fired armed,
    until a run completes; after each run that a kill failed check (a), and after the first
    `after_first_kill`. Return the points in the order they fired (one per killed job)."""
    fired: list[str] = []
    for attempt in range(len(KILL_POINTS) + 1):
        remaining = [point for point in KILL_POINTS if point not in fired]
        env = snakemake_env(XLSENT_KILL_AT=",".join(remaining), XLSENT_KILL_LOG=str(kill_log))
        # `--keep-going` (as the Slurm profile sets it): every job not downstream of a killed
        # one goes on, so the kills of independent jobs come in one run, not one run each.
        proc = _plain_run(workdir, "--keep-going", env=env, should_fail=None)
        now = kill_log.read_text().split() if kill_log.exists() else []
        new = now[len(fired) :]
        fired = now
        if proc.returncode == 0:
            assert not new, f"{new} fired but the run succeeded"
            break
        assert new, f"the run failed without a kill:\n{(proc.stdout + proc.stderr)[-4000:]}"
        assert_nothing_stale_is_done(workdir, reference)
        if attempt == 0:
            after_first_kill()
    # Each point fires in one job (`XLSENT_KILL_LOG`): the other jobs of its rule go on.
    never = set(KILL_POINTS) - set(fired)
    assert not never, f"kill points that never fired: {sorted(never)}"
    return fired


def test_kills_after_a_settings_change_recover_the_changed_run(
    other_run, base_run, aligner, tmp_path
):
    """The report's case: a finished run, its settings changed, jobs killed while the rerun
    works. Stale tables used to survive; now each kill leaves them planned, and the rerun
    ends with the results of the changed settings (the base run's, uninterrupted). The
    corpus changed: the first kill leaves a tree without results, as a first run's, and
    every later kill is a kill of a first run (once a test of its own, which killed each
    point again in an empty directory)."""
    workdir = copy_tree(other_run, tmp_path / "run")
    write_config(workdir / "config.yaml", base_config(aligner))
    fired = kill_everywhere(
        workdir, base_run, tmp_path / "kills.log", lambda: assert_as_a_first_run(workdir)
    )
    assert fired[0] in ("clean", "sample", "words")  # the DAG reran from the corpus
    assert_same_results(workdir, base_run)
    assert_no_temporary_files(workdir)
    assert "Nothing to be done" in _plain_run(workdir, "--dry-run").stdout


def test_a_killed_training_after_a_settings_change_is_not_trusted(
    base_run, retrained_run, aligner, tmp_path
):
    """The report, step by step: max_steps changed, `xlsent train` killed after a
    checkpoint. The dry run must plan the training, its evaluation and the tables; the
    rerun resumes and exports the weights of an uninterrupted run."""
    workdir = copy_tree(base_run, tmp_path / "run")
    write_config(workdir / "config.yaml", retrained_config(aligner))
    env = snakemake_env(XLSENT_KILL_AT="train.checkpoint@2")
    _plain_run(workdir, env=env, should_fail=True)
    assert not (workdir / "results/models/tr/seed42").exists()
    assert not (workdir / "results/tables/tatoeba.csv").exists()
    out = _plain_run(workdir, "--dry-run").stdout
    for rule in ("train", "encode", "eval_tatoeba", "tables_tatoeba", "tables_ablation", "plots"):
        assert f"rule {rule}:" in out or f"localrule {rule}:" in out, rule
    log = _plain_run(workdir).stderr
    assert "resumed from" in (workdir / "logs/train/tr/seed42.log").read_text()
    assert "Removed" not in log  # nothing left to invalidate: the kill had done it
    assert_same_results(workdir, retrained_run)


# -- Snakemake itself killed ---------------------------------------------------------------


def _start(workdir: Path) -> subprocess.Popen:
    """The plain command in its own process group, as a terminal or tmux starts it."""
    command = snakemake_command(
        workdir, "--cores", CORES, "--configfile", str(workdir / "config.yaml")
    )
    return subprocess.Popen(
        command,
        env=snakemake_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _wait_for_training(workdir: Path, timeout: float = 300) -> None:
    """Until a training job of this run has written a checkpoint."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any((workdir / "results/checkpoints").glob("*/seed*/last.pt")):
            return
        time.sleep(0.05)
    raise AssertionError("no training job started")


def _group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


@pytest.mark.parametrize(
    "how",
    ["sigterm", "sigkill-group", "sigkill-snakemake"],
)
def test_killed_snakemake_recovers_with_the_plain_command(
    how, base_run, retrained_run, aligner, tmp_path
):
    """SIGTERM (Ctrl-C, `kill`): Snakemake stops its jobs and releases its lock. SIGKILL of
    the whole process group (a reboot, a killed session): the lock stays behind, and the next
    run releases it. SIGKILL of Snakemake alone: its jobs run on; the next run keeps the lock
    and says so until they are gone, then releases it. Killed while TR trains again (its
    steps changed)."""
    workdir = copy_tree(base_run, tmp_path / "run")
    write_config(workdir / "config.yaml", retrained_config(aligner))
    shutil.rmtree(workdir / "results/checkpoints")
    proc = _start(workdir)
    _wait_for_training(workdir)
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
    elif how == "sigkill-group":
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=120)
    if how == "sigkill-snakemake" and _group_alive(proc.pid):
        # Its jobs outlive it: the lock must hold meanwhile.
        held = _plain_run(workdir, should_fail=None)
        if held.returncode == 0:
            # Its jobs ended before this run looked at the lock (a busy machine): the run
            # released the lock and finished the work.
            assert "Released the lock of an earlier run" in held.stderr, held.stderr[-3000:]
            assert_same_results(workdir, retrained_run)
            assert_no_temporary_files(workdir)
            return
        assert "its jobs are still running" in held.stderr, held.stderr[-3000:]
    # Killed processes take a moment to exit; jobs left alone run to their end.
    deadline = time.monotonic() + 300
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group_alive(proc.pid)
    # The first command after the kill (here a dry run) releases a lock left behind.
    planned = assert_nothing_stale_is_done(workdir, retrained_run)
    released = "Released the lock of an earlier run" in planned
    assert released == (how != "sigterm"), planned[-3000:]
    _plain_run(workdir)
    assert_same_results(workdir, retrained_run)
    assert_no_temporary_files(workdir)
