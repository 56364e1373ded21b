"""What a user meets on the console when a file breaks, a job is killed or refused, a lock is
left, or a config says too little: each case as the user met it, on a tiny run (one language
of the embedded demo data, a one-layer encoder trained for 8 steps: the whole DAG in under a
minute on 2 cores). docs/recovery.md quotes these messages."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from support import (
    ROOT,
    copy_tree,
    snakemake,
    snakemake_command,
    snakemake_env,
    tiny_shape,
    write_config,
)

from xlsent.recovery import holders_log, marked

pytestmark = pytest.mark.workflow

TARGETS = ("results/tables/tatoeba.csv", "results/tables/cost.csv")
EVALUATION = "results/eval/tatoeba/tr/seed42.parquet"
TRAIN_LOG = "logs/train/tr/seed42.log"


def tiny_config(max_steps: int = 8) -> dict:
    return {
        "languages": ["kk"],
        "corpus": {
            "source": "demo",
            "demo": {"heldout_fraction": 0.2, "heldout_max_pairs": 60},
            "clean": {"min_tokens": 1},
            "max_pairs": 240,
            "dev_pairs": 30,
            "min_train_pairs": 100,
            "min_dev_pairs": 10,
            "seed": 0,
        },
        "models": {
            "tiny": {
                "init": "scratch",
                "vocab_size": 400,
                "tokenizer_sentences": 2000,
                **tiny_shape(),
            }
        },
        "runs": {"tr": {"method": "tr", "model": "tiny", "seeds": [42]}},
        "train": {
            "max_length": 24,
            "lr": 2.0e-3,
            "batch_size": 32,
            "micro_batch_size": 32,
            "max_steps": max_steps,
            "eval_every": 4,
            "checkpoint_every": 2,
            "log_every": 2,
            "gpus": 0,
            "threads": 1,
        },
        "evaluate": {"batch_size": 64, "tatoeba": {"dir": "results/demo/tatoeba"}},
        "tables": {"group_languages": {"kk1": ["kk"]}, "groups": ["kk1"]},
    }


def run(workdir: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """The user's command: the targets first, then the config file."""
    configfile = str(workdir / "config.yaml")
    return snakemake(workdir, *TARGETS, "--cores", "2", "--configfile", configfile, *args, **kwargs)


def console(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout + proc.stderr


def xlsent_status(workdir: Path) -> str:
    """`xlsent status` with the run's arguments, in its directory."""
    args = ["--snakefile", str(ROOT / "Snakefile"), "--configfile", "config.yaml"]
    return subprocess.run(
        [sys.executable, "-m", "xlsent.cli", "status", *TARGETS, *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        env=snakemake_env(),
        check=True,
    ).stdout


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("tiny")
    write_config(workdir / "config.yaml", tiny_config())
    run(workdir)
    return workdir


@pytest.fixture
def workdir(tiny_run: Path, tmp_path: Path) -> Path:
    """A copy of the finished tiny run to break."""
    return copy_tree(tiny_run, tmp_path / "run")


def truncate(path: Path) -> Path:
    """Cut `path` to half its bytes, as a copy cut short leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def results(workdir: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(workdir)): path.read_bytes()
        for path in sorted((workdir / "results").rglob("*"))
        if path.is_file()
    }


# -- a file broken after its job ended ----------------------------------------------------


def test_a_truncated_evaluation_file_is_set_aside_and_the_table_kept(workdir):
    """The report: polars' "File out of specification", no file named, the good table
    removed first, every rerun failing the same way, `xlsent status` saying only "Missing
    output files"."""
    table = (workdir / TARGETS[0]).read_bytes()
    truncate(workdir / EVALUATION)
    out = console(run(workdir, should_fail=True))
    assert (
        f"{EVALUATION} does not read back (Parquet magic bytes not found in footer): the file "
        f"is truncated or corrupt, broken after the job that wrote it ended; moved it to "
        f"{EVALUATION}.unreadable.\nNothing was removed or run. Run the same command again: it "
        "remakes a file set aside where a job needs it, and keeps the results computed from it "
        "before it broke."
    ) in out
    assert "Traceback" not in out
    assert (workdir / TARGETS[0]).read_bytes() == table
    assert "Nothing to be done" in run(workdir, "--dry-run").stdout  # the same command goes on
    # The status names what the table was computed from, and the command that remakes it.
    status = xlsent_status(workdir)
    assert f"  {TARGETS[0]} (from {EVALUATION})" in status
    assert f"snakemake --forcerun {TARGETS[0]}" in status
    run(workdir, "--forcerun", EVALUATION)
    assert (workdir / TARGETS[0]).read_bytes() == table


def test_status_names_a_truncated_output_with_the_command_that_remakes_it(workdir):
    truncate(workdir / EVALUATION)
    status = xlsent_status(workdir)
    assert (
        "1 output no longer reads back (truncated or corrupt after the job that wrote them "
        f"ended):\n  {EVALUATION}: Parquet magic bytes not found in footer\n  To remake them "
        f"and what was computed from them: snakemake --forcerun {EVALUATION} (with your other "
        "arguments)"
    ) in status


def test_a_truncated_training_split_is_named_before_anything_is_removed(workdir):
    """The report: pyarrow named the file, but the run had removed 12 outputs computed from
    it (model, evaluations, tables) first."""
    before = results(workdir)
    split = "results/corpus/kk/train.parquet"
    truncate(workdir / split)
    out = console(run(workdir, should_fail=True))
    assert f"{split} does not read back (Parquet magic bytes not found in footer)" in out
    assert "Nothing was removed or run." in out
    after = results(workdir)
    assert f"{split}.unreadable" in after  # set aside, and nothing else touched
    assert {name: data for name, data in after.items() if name != f"{split}.unreadable"} == {
        name: data for name, data in before.items() if name != split
    }
    assert "Nothing to be done" in run(workdir, "--dry-run").stdout


# -- a killed training job, a refused one ------------------------------------------------


def test_a_killed_training_job_says_what_its_status_means_and_the_rerun_counts_both_jobs(
    workdir,
):
    """The report: the console said "exit status 137" and nothing else; after the resume
    the cost table showed the resumed job's time as the run's. Before the rerun's job runs
    the console says that it resumes (a setting that changes no number, log_every, changed
    meanwhile), and after another change, that it starts over and why."""
    write_config(workdir / "config.yaml", tiny_config(max_steps=10))
    env = snakemake_env(XLSENT_KILL_AT="train.checkpoint@2")  # killed after step 4's
    out = console(run(workdir, env=env, should_fail=True))
    said = out.split("The failed jobs' logs say:\n")[1]
    assert said.startswith(f"{TRAIN_LOG}:\n")
    assert (
        "    Exit status 137 is 128 + SIGKILL: the job was killed (out of memory, a time limit, "
        "or `kill -9`). The same command resumes its training at step 4 "
        "(results/checkpoints/tr/seed42/last.pt).\n"
    ) in said
    config = tiny_config(max_steps=10)
    config["train"]["log_every"] = 1
    write_config(workdir / "config.yaml", config)
    out = console(run(workdir))
    assert (
        "training tr (seed 42): resumes its training at step 4 "
        "(results/checkpoints/tr/seed42/last.pt)"
    ) in out
    assert (
        "resumed from results/checkpoints/tr/seed42/last.pt at step 4"
        in (workdir / TRAIN_LOG).read_text()
    )
    cost = {row.split(",")[0]: row.split(",") for row in (workdir / TARGETS[1]).read_text().split()}
    assert cost["train"][:4] == ["train", "tr", "1", "2"]  # one job's benchmark, two jobs' time
    config["train"]["lr"] = 1e-3
    write_config(workdir / "config.yaml", config)
    out = console(snakemake(workdir, "results/models/tr/seed42", "--cores", "2", "--configfile",
                            str(workdir / "config.yaml")))  # fmt: skip
    assert (
        "training tr (seed 42): its checkpoint at step 10 (results/checkpoints/tr/seed42/last.pt)"
        " was trained with other settings (lr: 0.002 → 0.001): the training starts over"
    ) in out


def test_one_of_two_training_processes_killed_is_named_and_the_rerun_resumes_it(workdir, tmp_path):
    """train.gpus 2 on the CPU: the rule's own command starts two training processes (gloo).
    One of them killed: the console names its rank and the step the same command resumes at,
    no model is left, and the rerun ends with the weights of a run that was never killed."""
    config = tiny_config()
    config["train"].update(gpus=2, device="cpu", micro_batch_size=16, threads=2)
    write_config(workdir / "config.yaml", config)
    uninterrupted = copy_tree(workdir, tmp_path / "uninterrupted")
    model = "results/models/tr/seed42"

    def train(tree: Path, **kwargs) -> subprocess.CompletedProcess:
        configfile = str(tree / "config.yaml")
        return snakemake(tree, model, "--cores", "2", "--configfile", configfile, **kwargs)

    env = snakemake_env(XLSENT_KILL_AT="train.step@3", XLSENT_KILL_RANK="1")
    out = console(train(workdir, env=env, should_fail=True))
    said = out.split("The failed jobs' logs say:\n")[1]
    assert re.match(
        rf"{TRAIN_LOG}:\n    ERROR xlsent: the training process of rank 1 \(local rank 1 on "
        r"this node, pid \d+\) was killed by SIGKILL; the other processes were stopped\. The "
        r"same command resumes the training at step 2 \(results/checkpoints/tr/seed42/last\.pt\)",
        said,
    ), said
    assert not (workdir / model).exists()
    train(workdir)
    assert "resumed from results/checkpoints/tr/seed42/last.pt at step 2" in (
        (workdir / TRAIN_LOG).read_text()
    )
    train(uninterrupted)
    weights = f"{model}/model.safetensors"
    assert (workdir / weights).read_bytes() == (uninterrupted / weights).read_bytes()


def test_a_job_refused_beside_an_orphaned_trainer_keeps_its_log(workdir):
    """The report: after `snakemake --unlock` and a rerun while the orphaned trainer of a
    killed Snakemake still ran, the refused job replaced its log with the refusal. Here the
    orphan is a process holding the run's checkpoint directory, its stderr appended to the
    job's log as the train rule's is."""
    write_config(workdir / "config.yaml", tiny_config(max_steps=10))
    code = textwrap.dedent(
        """
        import sys
        from xlsent.recovery import sole_writer
        with sole_writer("results/checkpoints/tr/seed42", "logs/train/tr/seed42.log"):
            print("the orphan's step 1", file=sys.stderr, flush=True)
            print("holding", flush=True)
            sys.stdin.readline()
            print("the orphan's step 2", file=sys.stderr, flush=True)
        """
    )
    (workdir / TRAIN_LOG).unlink()  # the orphan's job started afresh, its log appended to
    with open(workdir / TRAIN_LOG, "a") as log:
        orphan = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=workdir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    try:
        assert orphan.stdout.readline().strip() == "holding"
        out = console(run(workdir, should_fail=True))
    finally:
        orphan.communicate("go on\n", timeout=60)
    said = out.split("The failed jobs' logs say:\n")[1]
    assert said.startswith(
        f"{TRAIN_LOG}:\n    ERROR xlsent: results/checkpoints/tr/seed42 is being written by "
        f"pid {orphan.pid} on "
    )
    lines = (workdir / TRAIN_LOG).read_text().splitlines()
    assert lines[0] == "the orphan's step 1" and lines[-1] == "the orphan's step 2"
    assert "is being written by" in lines[-2]


# -- a killed Snakemake that a script started ------------------------------------------


def test_a_killed_snakemake_started_by_a_script_has_its_lock_released_once_its_jobs_end(workdir):
    """The report: a Snakemake started from a wrapper script (its jobs in the script's
    process group) and killed left no xlsent line, and its lock stayed after its jobs ended."""
    write_config(workdir / "config.yaml", tiny_config(max_steps=100_000))
    configfile = str(workdir / "config.yaml")
    command = " ".join(
        snakemake_command(workdir, *TARGETS, "--cores", "2", "--configfile", configfile)
    )
    wrapper = subprocess.Popen(
        ["bash", "-c", f"{command}; echo done"],
        env=snakemake_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        snakemake_pid = _wait_for_training(workdir, wrapper)
        os.kill(snakemake_pid, signal.SIGKILL)  # Snakemake alone: its job trains on
        out = console(run(workdir, "--dry-run", should_fail=None))
        jobs = re.search(
            rf"Kept the lock of an earlier run: Snakemake \(pid {snakemake_pid}\) was killed but "
            r"its jobs are still running \(pids ([\d, ]+)\): wait for them or kill them, then run "
            r"again\.",
            out,
        )
        assert jobs, out
        for pid in map(int, jobs.group(1).split(", ")):
            os.kill(pid, signal.SIGKILL)
    finally:
        wrapper.kill()
        wrapper.wait()
    _wait_until(lambda: not marked(_owner(workdir)["mark"]))
    out = console(run(workdir, "--dry-run"))
    assert (
        f"Released the lock of an earlier run: Snakemake (pid {snakemake_pid}) was killed, and "
        "none of its jobs is still running."
    ) in out


def _wait_for_training(workdir: Path, wrapper: subprocess.Popen) -> int:
    """Snakemake's pid once its training job holds the checkpoint directory."""
    _wait_until(lambda: holders_log(workdir / TRAIN_LOG).exists())
    assert wrapper.poll() is None
    return _owner(workdir)["pid"]


def _owner(workdir: Path) -> dict:
    return json.loads((workdir / ".snakemake/xlsent-lock-owner.json").read_text())


def _wait_until(condition, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


# -- config mistakes and a full disk -------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (  # the report: the tables job failed after the whole pipeline
            ("  groups:\n  - kk1\n", "  groups: []\n"),
            "config key `tables.groups` is empty, but it needs at least one entry: write e.g. "
            "`groups: [low4, low5, low8, xtreme36]` (its default), or leave the key out",
        ),
        (  # YAML 1.1 reads 2e-3 as a string
            ("  lr: 0.002\n", "  lr: 2e-3\n"),
            "config key `train.lr`: '2e-3' is not of type 'number': YAML reads `2e-3` as text "
            "(its floats need a dot and a signed exponent): write `2.0e-3`",
        ),
        (  # the report: the refusal's bound was one the job then lowered (k = 4 of 3)
            (
                "evaluate:\n",
                "evaluate:\n  bucc:\n    languages: [kk]\n    source: heldout\n"
                "    heldout: {from: corpus}\n    mining: {k: 4}\n",
            ),
            "config key `evaluate.bucc.mining.k` is 4, but a mining set of corpus.mining_pairs "
            "8 held-out pairs has at most 3 sentences on a side of a split (evaluate.bucc."
            "heldout: threshold_share 0.5, distractors 0.5), where k is lowered to 3: lower k to "
            "at most 3, or raise corpus.mining_pairs",
        ),
    ],
)
def test_a_config_mistake_stops_the_run_before_any_job(tmp_path, change, message):
    config = tiny_config()
    config["corpus"]["mining_pairs"] = 8
    text = yaml.safe_dump(config, sort_keys=False)
    assert change[0] in text
    (tmp_path / "config.yaml").write_text(text.replace(*change))
    out = console(run(tmp_path, "--dry-run", should_fail=True))
    assert message in out
    assert "Job stats" not in out


def test_results_moved_elsewhere_behind_a_symlink_stay_up_to_date(workdir, tmp_path):
    """What the full-disk message says to do (docs/recovery.md)."""
    elsewhere = tmp_path / "big" / "results"
    elsewhere.parent.mkdir()
    shutil.move(workdir / "results", elsewhere)
    (workdir / "results").symlink_to(elsewhere)
    assert "Nothing to be done" in run(workdir, "--dry-run").stdout
    (elsewhere / "tables/tatoeba.csv").unlink()
    run(workdir)
    assert (elsewhere / "tables/tatoeba.csv").exists()
