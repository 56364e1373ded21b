"""What a user meets on the console when a file breaks, a job is killed or refused, a lock is
left, or a config says too little: each case as the user met it, on a tiny run (one language
of the embedded demo data, a one-layer encoder trained for 8 steps: the whole DAG in under a
minute on 2 cores). docs/recovery.md quotes these messages."""

from __future__ import annotations

import json
import os
import re
import shlex
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

from xlsent.failures.locks import holders_log, marked

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
    # The user's own command, with the option that remakes the file (their --snakefile and
    # --directory are the test's).
    command = shlex.join(
        [
            "snakemake",
            *snakemake_command(workdir, *TARGETS, "--cores", "2")[3:],
            *("--configfile", str(workdir / "config.yaml"), "--forcerun", EVALUATION),
        ]
    )
    assert (
        f"{EVALUATION} does not read back (Parquet magic bytes not found in footer): the file "
        f"is truncated or corrupt, broken after the job that wrote it ended; moved it to "
        f"{EVALUATION}.unreadable.\nNothing was removed or run. The results computed from it "
        "are kept, and the same command remakes it only where a job needs it again. To remake "
        f"it now, and what was computed from it: {command}\n"
    ) in out
    assert "Traceback" not in out
    assert (workdir / TARGETS[0]).read_bytes() == table
    # The report: the same command answered "Nothing to be done", the file stayed missing.
    # It still has nothing to do, and says so, with the command that remakes the file.
    again = run(workdir, "--dry-run")
    assert "Nothing to be done" in again.stdout
    assert (
        f"{EVALUATION}, set aside as unreadable ({EVALUATION}.unreadable), is still missing; the "
        "results computed from it are kept, and a run remakes it only where a job needs it "
        f"again. To remake it now, and what was computed from it: {command}\n"
    ) in console(again)
    # The status names what the table was computed from, and the command that remakes it.
    status = xlsent_status(workdir)
    assert f"  {TARGETS[0]} (from {EVALUATION})" in status
    assert f"snakemake --forcerun {TARGETS[0]}" in status
    # The command as printed remakes it, and the table from it.
    subprocess.run([sys.executable, "-m", *shlex.split(command)], env=snakemake_env(), check=True)
    assert (workdir / EVALUATION).exists()
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
    # The note is the run's before any job (the Snakefile's onstart): `--touch` runs no job, so
    # the training it announces (10 steps from scratch, and the export) is not paid for.
    out = console(snakemake(workdir, "results/models/tr/seed42", "--cores", "2", "--configfile",
                            str(workdir / "config.yaml"), "--touch"))  # fmt: skip
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
        from xlsent.failures.locks import sole_writer
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


# -- a training that could not resume: a broken checkpoint, Ctrl-C -------------------------


def test_a_checkpoint_that_no_longer_loads_is_named_at_the_end_of_the_run(workdir):
    """The report: a training's last.pt cut short by a copy; its job's log said "training
    starts over at step 0", the console nothing, and the cost table lost the time of the job
    before. Here the finished run's model is deleted, and the job that makes it again finds
    its checkpoint broken."""
    model = "results/models/tr/seed42"
    shutil.rmtree(workdir / model)
    checkpoints = workdir / "results/checkpoints/tr/seed42"
    truncate(checkpoints / "last.pt")  # the export left it alone
    configfile = str(workdir / "config.yaml")
    out = console(snakemake(workdir, model, "--cores", "2", "--configfile", configfile))
    assert (
        "Trainings that could not resume from their latest checkpoint:\n"
        f"  {TRAIN_LOG}: results/checkpoints/tr/seed42/last.pt did not load (PytorchStreamReader "
        "failed reading zip archive: failed finding central directory), nor any checkpoint "
        "before it: the training started over at step 0; the cost table counts the time of the "
        "jobs before\n"
    ) in out
    earlier = json.loads((checkpoints / "earlier_attempts.json").read_text())
    assert [attempt["steps"] for attempt in earlier] == [[0, 8]]


def test_ctrl_c_of_a_training_saves_it_and_says_where_the_same_command_resumes(workdir):
    """The report: Ctrl-C left a bare KeyboardInterrupt traceback as the failed job's excerpt,
    no word of what a rerun does, and the steps since the last checkpoint lost (SIGTERM saves
    them). Ctrl-C in a terminal is SIGINT to its foreground process group: Snakemake and its
    jobs."""
    write_config(workdir / "config.yaml", tiny_config(max_steps=100_000))
    shutil.rmtree(workdir / "results/checkpoints")
    configfile = str(workdir / "config.yaml")
    proc = subprocess.Popen(
        snakemake_command(workdir, *TARGETS, "--cores", "2", "--configfile", configfile),
        env=snakemake_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_until(lambda: (workdir / "results/checkpoints/tr/seed42/last.pt").exists())
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    step = json.loads((workdir / "results/checkpoints/tr/seed42/last.json").read_text())["step"]
    said = out.split("The failed jobs' logs say:\n")[1]
    assert said.startswith(f"{TRAIN_LOG}:\n")
    assert "SIGINT: saving a checkpoint after this step, then stopping\n" in said
    assert (
        f"    stopped by a signal at step {step}: the same command resumes the training at step "
        f"{step} (results/checkpoints/tr/seed42/last.pt)\n"
    ) in said
    assert "KeyboardInterrupt" not in out


# -- a run of other config files (a forgotten --configfile) -------------------------------


def other_config(workdir: Path) -> Path:
    """Another config file in the run's directory: an evaluation setting changed, so that a
    run of it rebuilds the evaluations and tables, removing them as it starts."""
    config = tiny_config()
    config["evaluate"]["batch_size"] = 32
    return write_config(workdir / "other.yaml", config)


def test_a_run_of_other_config_files_removes_nothing_and_names_both(workdir):
    """The report: the same command without its --configfile ran the paper config, whose
    start removed 25 outputs of the finished tree (trained models among them) before it
    failed on the network, and nothing said "another config"."""
    before = results(workdir)
    other = other_config(workdir)
    args = [*TARGETS, "--cores", "2"]
    out = console(snakemake(workdir, *args, "--configfile", str(other), should_fail=True))
    assert re.search(
        r"This run would remove \d+ results that it rebuilds, made with other config files: "
        r"this directory's last run had config\.yaml, this run has other\.yaml\. Nothing was "
        r"removed or run\.\n",
        out,
    ), out
    ours = ["snakemake", *snakemake_command(workdir, *args)[3:]]
    assert (
        "To go on with those results, give their config files: "
        f"{shlex.join([*ours, '--configfile', str(workdir / 'config.yaml')])}\n"
        "To rebuild them with this run's config files instead, run the same command with "
        "XLSENT_ALLOW_REMOVAL=1 in front: XLSENT_ALLOW_REMOVAL=1 "
        f"{shlex.join([*ours, '--configfile', str(other)])}\n"
    ) in out
    assert results(workdir) == before


def test_a_run_of_other_config_files_goes_on_with_the_variable_set(workdir):
    """The documented way on: XLSENT_ALLOW_REMOVAL=1 in front of the command. Its config
    files are then those of the directory's results, and the first one's run is refused in
    turn."""
    other = other_config(workdir)
    args = (EVALUATION, "--cores", "2", "--configfile", str(other))  # encode and evaluate
    out = console(snakemake(workdir, *args, env=snakemake_env(XLSENT_ALLOW_REMOVAL="1")))
    assert f"Removed 1 outputs that this run rebuilds from changed inputs: {EVALUATION}" in out
    assert "this directory's last run had other.yaml, this run has config.yaml" in console(
        run(workdir, should_fail=True)
    )


def test_a_trained_model_is_not_removed_where_the_config_files_are_unknown(workdir):
    """A directory with no record of its config files (results of a version before the
    record): a run that would remove a trained model stops first. Under the config files of
    the record it goes on, as a changed setting retrains what depends on it: the everyday
    case, which test_kill_anywhere.py (a changed corpus, and TR's steps) and test_staleness.py
    (a new corpus file) run."""
    config = tiny_config()
    config["models"]["tiny"]["vocab_size"] = 380  # the tokenizer, and all that follows it
    write_config(workdir / "config.yaml", config)
    (workdir / ".snakemake/xlsent-configfiles.json").unlink()
    model = "results/models/tr/seed42"
    args = (model, "--cores", "2", "--configfile", str(workdir / "config.yaml"))
    out = console(snakemake(workdir, *args, should_fail=True))
    assert re.search(
        r"This run would remove \d+ results that it rebuilds, among them 1 trained model "
        r"\(results/models/tr/seed42\), and this directory has no record of the config files "
        r"they were made with \(an xlsent before this check made them\); this run's are "
        r"config\.yaml\. Nothing was removed or run\.\nIf those made them, run the same command "
        r"with XLSENT_ALLOW_REMOVAL=1 in front: XLSENT_ALLOW_REMOVAL=1 snakemake ",
        out,
    ), out
    assert (workdir / model / "model.safetensors").exists()


# -- bad bytes and empty files in a local corpus -------------------------------------------


def local_config(tmp_path: Path, corpora: dict[str, list[bytes]], langs: list[str]) -> Path:
    """The tiny config on a local corpus in `tmp_path/corpus` (`corpora`: file name → lines)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, lines in corpora.items():
        (corpus / name).write_bytes(b"".join(line + b"\n" for line in lines))
    config = tiny_config()
    config["languages"] = langs
    del config["corpus"]["demo"]
    config["corpus"].update(source="local", local={"dir": "corpus"})
    return write_config(tmp_path / "config.yaml", config)


KK_PAIRS = {
    "l10n.en-kk.en": [f"This is sentence number {i} of the corpus.".encode() for i in range(60)],
    "l10n.en-kk.kk": [f"Бұл корпустың {i} нөмірлі сөйлемі.".encode() for i in range(60)],
}


def test_an_empty_corpus_file_is_named_before_any_job(tmp_path):
    """The report: fr's two empty files were refused only after four other jobs, by a
    `sample` job that said to loosen `min_tokens`."""
    local_config(tmp_path, {**KK_PAIRS, "l10n.en-fr.en": [], "l10n.en-fr.fr": []}, ["kk", "fr"])
    out = console(run(tmp_path, "--dry-run", should_fail=True))
    assert (
        "config key `corpus.local.dir`: corpus holds empty corpus files, without a line to clean "
        "(fr: l10n.en-fr.en, l10n.en-fr.fr): copy their text there again, or remove them (and a "
        "language left without a corpus from `languages`)"
    ) in out
    assert "Job stats" not in out


def test_lines_that_are_not_utf8_are_counted_at_the_end_of_the_run_by_their_file(tmp_path):
    """The report: five lines with invalid UTF-8 dropped, counted in the job's log and in
    clean_stats.json, but the console said nothing, and the warning named both files of the
    pair."""
    kk = list(KK_PAIRS["l10n.en-kk.kk"])
    kk[2], kk[6] = b"\xff" + kk[2], kk[6][:-3] + b"\xc3"  # a stray byte, a cut sequence
    configfile = local_config(tmp_path, {**KK_PAIRS, "l10n.en-kk.kk": kk}, ["kk"])
    target = "results/corpus/kk/clean.parquet"
    out = console(snakemake(tmp_path, target, "--cores", "2", "--configfile", str(configfile)))
    assert (
        "Pairs each language's cleaning dropped (its clean_stats.json):\n"
        "  kk: kept 58 of 60 pairs; dropped 2 not valid UTF-8 (corpus/l10n.en-kk.kk line 3, 7)\n"
    ) in out


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
        (  # the report: the list of methods, and no word of which was meant
            ("method: tr\n", "method: wacs\n"),
            "config key `runs.tr.method`: 'wacs' (did you mean `wacse`?) is not one of ['tr', ",
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
    # The table alone (TARGETS[1], the cost table, would redo the plots and itself after it).
    configfile = str(workdir / "config.yaml")
    snakemake(workdir, TARGETS[0], "--cores", "2", "--configfile", configfile)
    assert (elsewhere / "tables/tatoeba.csv").exists()
