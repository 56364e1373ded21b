"""The workflow through the Slurm profile (`slurm/config.yaml`) on a real Slurm cluster.

`tests/cluster/local_slurm.sh start` runs a single-node Slurm on this machine from Debian's
packages (installed if missing): munged, MariaDB + slurmdbd (so `sacct` has every job),
slurmctld and slurmd, the node advertising placeholder GPUs so that GPU rules schedule
(they run on the CPU). A cluster started here is stopped at the end; one that was already
running is left as it was.

A user adapts the profile to a site with a profile of their own passed after it
(`--profile slurm --profile mysite`); the test does the same for this cluster: its
partition, and status checks every few seconds instead of every 40.

Needs root (daemons, apt-get): skipped, saying so, where the machine cannot run Slurm.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
import yaml
from support import HANG_LIMIT_S

pytestmark = [pytest.mark.cluster, pytest.mark.workflow]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "local_slurm.sh"
SLURM_DIR = Path(os.environ.get("LOCAL_SLURM_DIR", "/tmp/xlsent-local-slurm"))
PARTITION = os.environ.get("LOCAL_SLURM_PARTITION", "debug")
LANGS = ["kk", "te"]


def _why_no_slurm() -> str | None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root to start a local Slurm (munged, slurmdbd, slurmctld, slurmd)"
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        return "Slurm is not installed and there is no apt-get to install it"
    return None


@pytest.fixture(scope="module")
def slurm_env():
    """The environment of a client of the local cluster (SLURM_CONF, the venv on PATH)."""
    reason = _why_no_slurm()
    if reason:
        pytest.skip(reason)
    env = dict(
        os.environ,
        LOCAL_SLURM_DIR=str(SLURM_DIR),
        LOCAL_SLURM_PARTITION=PARTITION,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    was_running = (
        subprocess.run(
            [str(SCRIPT), "status"], env=env, capture_output=True, check=False
        ).returncode
        == 0
    )
    started = time.monotonic()
    proc = subprocess.run(
        [str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=900, check=False
    )
    if proc.returncode == 3:
        pytest.skip(f"cannot install Slurm here: {proc.stderr.strip().splitlines()[-1]}")
    if proc.returncode != 0:
        pytest.fail(f"local_slurm.sh start failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    print(f"local Slurm ready in {time.monotonic() - started:.0f} s")
    env["SLURM_CONF"] = str(SLURM_DIR / "etc" / "slurm.conf")
    yield env
    if not was_running:
        subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True, check=False)


@pytest.fixture(scope="module")
def site_profile(tmp_path_factory) -> Path:
    """The test cluster's own profile, layered on slurm/: every slurm_partition of the real
    profile replaced by the local one, and quick status checks."""

    def local(resources: dict) -> dict:
        if "slurm_partition" in resources:
            return {**resources, "slurm_partition": PARTITION}
        return resources

    real = yaml.safe_load((ROOT / "slurm" / "config.yaml").read_text())
    profile = {
        "default-resources": local(real["default-resources"]),
        "set-resources": {rule: local(r) for rule, r in real.get("set-resources", {}).items()},
        "slurm-init-seconds-before-status-checks": 2,
        # A round of status checks every 2 s, not 10: each wave of jobs is seen finished and
        # the next submitted 8 s sooner (the small demo runs in 7 waves, and every test here
        # waits on a few).
        "seconds-between-status-checks": 2,
    }
    directory = tmp_path_factory.mktemp("profile") / "localsite"
    directory.mkdir()
    (directory / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return directory


def small_config() -> dict:
    """The demo, small: two languages, two or three alignment shards each, one TR run of a
    few steps that asks for two GPUs (placeholders: its two processes train on the CPU, over
    gloo)."""
    config = yaml.safe_load((ROOT / "resources" / "demo" / "config.yaml").read_text())
    config["languages"] = LANGS
    config["align"]["shard_size"] = 800
    config["models"]["tiny"]["vocab_size"] = 1000
    config["runs"] = {"tr": {"method": "tr", "model": "tiny", "seeds": [42]}}
    config["train"].update(
        max_steps=10,
        eval_every=5,
        checkpoint_every=5,
        warmup_steps=2,
        log_every=5,
        batch_size=32,
        micro_batch_size=16,
        gpus=2,
        threads=2,
    )
    config["tables"] = {"groups": ["low4"], "ablation": {"runs": []}}
    config["evaluate"]["bucc"] = {"languages": []}  # the demo mines languages left out here
    config["evaluate"]["retrieval"] = {"languages": []}  # and retrieves in them
    return config


def run(workdir: Path, args: list[str], env: dict, limit: int) -> subprocess.Popen:
    """Snakemake on `workdir` (also its cwd, so `--profile slurm` is found there as from the
    repository root), under `timeout -k`: Snakemake may ignore SIGTERM while jobs run."""
    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / "snakemake.out").open("w") as log:
        return subprocess.Popen(
            ["timeout", "-k", "30", str(limit), sys.executable, "-m", "snakemake", *args],
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )


def finish(proc: subprocess.Popen, workdir: Path) -> str:
    proc.wait()
    out = (workdir / "snakemake.out").read_text()
    if proc.returncode != 0:
        pytest.fail(f"snakemake in {workdir} exited with {proc.returncode}:\n{out[-6000:]}")
    return out


def sacct(env: dict, name: str, since: datetime) -> list[dict]:
    """The allocations (not steps) of the Slurm jobs named `name`."""
    fields = ["JobID", "State", "Comment", "ReqMem", "AllocTRES", "Partition"]
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "--allusers", "--name", name,
         "--starttime", since.strftime("%Y-%m-%dT%H:%M:%S"), "--format", ",".join(fields)],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [dict(zip(fields, line.split("|"), strict=True)) for line in out.splitlines()]


def slurm_run_id(out: str) -> str:
    return re.search(r"SLURM run ID: (\S+)", out).group(1)


def submitted_ids(out: str) -> list[str]:
    return re.findall(r"submitted with SLURM jobid (\d+)", out)


@pytest.fixture(scope="module")
def runs(slurm_env, site_profile, tmp_path_factory):
    """The small demo twice: through the Slurm profile, and locally (beside it, to save time)."""
    base = tmp_path_factory.mktemp("runs")
    config = base / "config.yaml"
    config.write_text(yaml.safe_dump(small_config(), sort_keys=False))
    local_dir, slurm_dir = base / "local", base / "slurm"
    snakefile = ["--snakefile", str(ROOT / "Snakefile")]
    local = run(
        local_dir,
        [*snakefile, "--cores", "2", "--configfile", str(config)],
        slurm_env,
        limit=HANG_LIMIT_S,
    )
    slurm_dir.mkdir()
    (slurm_dir / "slurm").symlink_to(ROOT / "slurm")  # `--profile slurm`, as users run it
    since = datetime.now() - timedelta(minutes=1)
    started = time.monotonic()
    cluster = run(
        slurm_dir,
        [*snakefile, "--profile", "slurm", "--profile", str(site_profile),
         "--configfile", str(config)],
        slurm_env,
        limit=HANG_LIMIT_S,
    )  # fmt: skip
    slurm_out = finish(cluster, slurm_dir)
    print(f"Slurm run: {time.monotonic() - started:.0f} s")
    finish(local, local_dir)
    return {"local": local_dir, "slurm": slurm_dir, "out": slurm_out, "since": since}


def test_every_job_went_through_slurm_packed_in_groups(runs, slurm_env):
    out = runs["out"]
    jobs = sacct(slurm_env, slurm_run_id(out), runs["since"])
    ids = submitted_ids(out)
    assert sorted(j["JobID"] for j in jobs) == sorted(ids), out[-3000:]
    assert {j["State"] for j in jobs} == {"COMPLETED"}
    assert {j["Partition"] for j in jobs} == {PARTITION}
    # Fewer Slurm jobs than rule jobs: the groups packed the small ones (the local `all`
    # is the one rule job that is not submitted).
    rule_jobs = re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", out)
    assert "all" in rule_jobs
    assert len(jobs) < len(rule_jobs) - 1
    comments = [j["Comment"] for j in jobs]
    assert any(c.startswith("rule_corpus") for c in comments), comments
    assert any(c.startswith("rule_subwords") for c in comments), comments
    # One job per alignment shard (the fan-out unit), never grouped.
    shards = sum(len(list((runs["slurm"] / f"results/align/eflomal/{lang}").glob("shard-*.arrow")))
                 for lang in LANGS)  # fmt: skip
    assert shards >= 2 * len(LANGS)
    assert sum(c.startswith("rule_align_shard") for c in comments) == shards
    # The training job asked for (and got) its two GPUs on one node, and the memory of its
    # rule; it trained in two processes.
    (train,) = [j for j in jobs if j["Comment"].startswith("rule_train")]
    assert "gres/gpu=2" in train["AllocTRES"] and "node=1" in train["AllocTRES"]
    log = (runs["slurm"] / "logs/train/tr/seed42.log").read_text()
    assert "launching 2 training processes on each of 1 node(s)" in log
    mem_mb = re.search(r"^rule train:\n(?:\s+.*\n)*?\s+resources: .*\bmem_mb=(\d+)", out, re.M)
    assert train["ReqMem"] == f"{mem_mb.group(1)}M"


def _same_files(a: Path, b: Path, pattern: str, skip: tuple[str, ...] = ()) -> int:
    files = sorted(p.relative_to(a) for p in a.glob(pattern) if p.is_file())
    files = [f for f in files if f.name not in skip]
    assert files, f"no {pattern} in {a}"
    for f in files:
        assert (b / f).read_bytes() == (a / f).read_bytes(), f"{f} differs"
    return len(files)


def test_outputs_equal_those_of_a_local_run(runs):
    local, slurm = runs["local"] / "results", runs["slurm"] / "results"
    # Deterministic stages, byte for byte: the corpus, words, the alignment shards (eflomal is
    # seeded), tokenizer, subwords, the test set, training on the CPU with a fixed seed (not
    # its log, which has timings), the evaluation and the tables.
    for pattern in (
        "corpus/*/*",
        "words/*/*",
        "align/eflomal/*/*",
        "tokenizers/tiny/*",
        "subwords/tiny/*/*",
        "demo/tatoeba/*",
        "models/tr/seed42/*",
        "eval/tatoeba/tr/*",
        "tables/*",
    ):
        # (Not the cost table either: it holds the jobs' times and memory; nor the dev table,
        # whose last columns are the trainings' speed.)
        timed = ("train_log.jsonl", "cost.csv", "cost.md", "dev.csv", "dev.md")
        _same_files(local, slurm, pattern, skip=timed)
    table = pl.read_csv(slurm / "tables/tatoeba.csv")
    assert table["run"].to_list() == ["tr"]


def test_a_failed_job_says_why_on_the_console(slurm_env, site_profile, tmp_path):
    """kk below the pair minimum: its `sample` job fails in its Slurm job (the corpus group,
    after its `clean`), twice (one retry, to save time). The console of the Snakemake that
    submitted it shows the job's own line from its log, once, and nothing of `clean`'s."""
    config = small_config()
    config["corpus"]["min_train_pairs"] = 100_000
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config, sort_keys=False))
    (tmp_path / "slurm").symlink_to(ROOT / "slurm")
    proc = run(
        tmp_path,
        ["--snakefile", str(ROOT / "Snakefile"), "results/corpus/kk/train.parquet",
         "--profile", "slurm", "--profile", str(site_profile), "--retries", "1",
         "--configfile", str(configfile)],
        slurm_env,
        limit=HANG_LIMIT_S,
    )  # fmt: skip
    proc.wait()
    out = (tmp_path / "snakemake.out").read_text()
    assert proc.returncode == 1, out[-6000:]
    assert len(submitted_ids(out)) == 2, out[-6000:]
    said = out.split("The failed jobs' logs say:\n")[1]
    assert re.match(
        r"logs/sample/kk\.log:\n    ERROR xlsent: kk: \d+ clean pairs give \d+ train pairs, "
        r"fewer than the minimum of 100000 \(corpus\.min_train_pairs\)",
        said,
    ), said
    assert out.count("ERROR xlsent: kk: ") == 1
    assert "logs/clean/" not in said


def test_a_job_killed_for_memory_is_retried_with_more(slurm_env, site_profile, tmp_path):
    """tests/cluster/retry/Snakefile: a job that holds 800 MB asks for 700 MB × attempt;
    Slurm kills the first attempt, the profile's `retries` submits it again with 1400 MB."""
    (tmp_path / "slurm").symlink_to(ROOT / "slurm")
    since = datetime.now() - timedelta(minutes=1)
    proc = run(
        tmp_path,
        ["--snakefile", str(HERE / "retry" / "Snakefile"), "--profile", "slurm",
         "--profile", str(site_profile)],
        slurm_env,
        limit=HANG_LIMIT_S,
    )  # fmt: skip
    out = finish(proc, tmp_path)
    first, second = sacct(slurm_env, slurm_run_id(out), since)
    assert first["Comment"] == second["Comment"] == "rule_hog"
    assert (first["ReqMem"], second["ReqMem"]) == ("700M", "1400M")
    assert first["State"] in {"FAILED", "OUT_OF_MEMORY"}
    assert second["State"] == "COMPLETED"
    killed = (tmp_path / ".snakemake/slurm_logs/rule_hog" / f"{first['JobID']}.log").read_text()
    assert "exceeded memory limit" in killed
    assert (tmp_path / "hog.txt").read_text().split()[0] == "mem_mb=1400"
