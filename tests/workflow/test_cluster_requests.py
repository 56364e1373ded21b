"""What a training job asks Slurm for: the `train` rule's resources, as a dry run of the
workflow evaluates them, turned into the sbatch line by the Slurm executor plugin's own code
(the functions its executor calls for a submission): several GPUs on one node, and several
nodes with the GPUs of each, never with `--ntasks-per-gpu` (which asks for a CPU set per GPU
and may spread the GPUs over nodes)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from snakemake_executor_plugin_slurm import set_gres_string
from snakemake_executor_plugin_slurm.submit_string import get_submit_command
from support import demo_config, snakemake, write_config

pytestmark = pytest.mark.workflow

MODEL = "results/models/tr/seed42"


class Resources(dict):
    """A job's resources as the plugin reads them (`.get` and attributes)."""

    def __getattr__(self, name: str):
        return self[name]


def sbatch_line(tmp_path, **train) -> str:
    """The sbatch line of the demo's `tr` training with `train` settings."""
    config = demo_config()
    config["runs"]["tr"]["train"] = dict(batch_size=64, micro_batch_size=8, threads=8, **train)
    configfile = write_config(tmp_path / "config.yaml", config)
    out = snakemake(
        tmp_path, MODEL, "--dry-run", "--cores", "16", "--configfile", str(configfile)
    ).stdout
    job = re.search(r"^rule train:\n(?:\s+.*\n)*?\s+threads: (\d+)\n\s+resources: (.*)$", out, re.M)
    resources = Resources()
    for item in job.group(2).split(", "):
        name, value = item.split("=", 1)
        resources[name] = int(value) if value.isdigit() else value
    resources.pop("mem_mb", None)  # from the inputs, not known before they exist
    job = SimpleNamespace(resources=resources, threads=int(job.group(1)))
    params = {
        "run_uuid": "run",
        "slurm_logfile": "log",
        "comment_str": "rule_train",
        "account": "",
        "partition": "-p gpu",
        "workdir": str(tmp_path),
    }
    return get_submit_command(job, params) + set_gres_string(job)


def test_several_gpus_on_one_node(tmp_path):
    line = sbatch_line(tmp_path, gpus=4)
    assert " --nodes=1 " in line and line.endswith(" --gpus=4")
    assert "--cpus-per-task=8" in line
    assert "ntasks" not in line


def test_several_nodes_one_task_each_with_their_gpus(tmp_path):
    line = sbatch_line(tmp_path, gpus=4, nodes=2)
    assert " --nodes=2 " in line and " --ntasks=2 " in line
    assert line.endswith(" --gres=gpu:4")
    assert "--cpus-per-task=8" in line
    assert "ntasks-per-gpu" not in line and "--gpus" not in line
