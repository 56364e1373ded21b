"""One training over several processes: `xlsent train` starts them itself, one per GPU of
each node (or per CPU process, over gloo), through PyTorch's elastic agent, the launcher
torchrun wraps.

The agent is called as a library, not through torchrun's command line: torchrun parses the
arguments meant for the training as its own wherever one abbreviates one of its options
(`--log` is ambiguous with its `--log-dir` and `--logs-specs`, which is how the first
several-GPU job of the workflow failed before it started).

One node: a rendezvous on this machine, on a free port (torchrun's `--standalone`). Several
nodes (`train.nodes`): the `train` rule runs one agent per node under `srun`, and the agents
meet at the first node of the Slurm allocation (`scontrol show hostnames`), on a port derived
from the job's id, over c10d's TCP store; the global ranks are the nodes' in the order they
joined, which changes nothing: every rank trains its own slice of the same global batches.

When a process fails, the agent stops the others; what the launcher then says (which rank,
how it ended, and the step the same command resumes from) is the job's one ERROR line,
which the workflow repeats on the console (`xlsent.failures.failed_jobs`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from xlsent.failures.errors import XlsentError

log = logging.getLogger(__name__)

# Seconds the agent leaves its processes, after passing them a SIGTERM (Slurm's preemption
# or time limit), to finish their step and save a checkpoint before it kills them.
SHUTDOWN_GRACE_S = 120
# The first node's port of the rendezvous is this plus the job id modulo PORT_SPREAD, so that
# two multi-node jobs that start on the same node do not meet at one port.
BASE_PORT = 29500
PORT_SPREAD = 1000


class LaunchError(XlsentError):
    """The processes could not be started, or one of them failed; the message says which."""


def is_worker(env: Mapping[str, str] = os.environ) -> bool:
    """Whether this process is one the agent (ours, or a user's torchrun) started."""
    return "LOCAL_RANK" in env


def rendezvous_endpoint(nodes: int, given: str | None, env: Mapping[str, str]) -> str:
    """Where the agents of the run meet: `given` (HOST:PORT), this machine on a free port for
    one node, or for several nodes the first node of the Slurm allocation."""
    if given:
        return given
    if nodes == 1:
        return "localhost:0"
    if "SLURM_JOB_NODELIST" not in env or "SLURM_JOB_ID" not in env:
        raise LaunchError(
            f"train.nodes is {nodes}, but this process runs outside a Slurm job (no "
            "SLURM_JOB_NODELIST): several nodes are a Slurm allocation's, launched by the "
            "train rule under srun (`--profile slurm`); by hand, give --rendezvous HOST:PORT"
        )
    hosts = subprocess.run(
        ["scontrol", "show", "hostnames", env["SLURM_JOB_NODELIST"]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return f"{hosts[0]}:{BASE_PORT + int(env['SLURM_JOB_ID']) % PORT_SPREAD}"


def launch(
    argv: Sequence[str],
    processes: int,
    nodes: int,
    rendezvous: str | None,
    checkpoint_dir: Path,
    env: Mapping[str, str] = os.environ,
) -> None:
    """Run `xlsent <argv>` in `processes` processes on this node, one of `nodes` nodes, and
    wait for them; raise `LaunchError` saying which failed and where a rerun resumes."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    endpoint = rendezvous_endpoint(nodes, rendezvous, env)
    options = {f.name for f in dataclasses.fields(LaunchConfig)}
    config = LaunchConfig(
        min_nodes=nodes,
        max_nodes=nodes,
        nproc_per_node=processes,
        run_id=env.get("SLURM_JOB_ID", "xlsent") if nodes > 1 else "standalone",
        rdzv_backend="c10d",
        rdzv_endpoint=endpoint,
        # A failed process fails the job: the same command resumes from the last checkpoint,
        # and Snakemake's retries (or the user) decide whether to run it again.
        max_restarts=0,
        start_method="spawn",
        monitor_interval=1,
        # An older torch has no such setting: its agent waits 30 s.
        **({"shutdown_timeout": SHUTDOWN_GRACE_S} if "shutdown_timeout" in options else {}),
    )
    log.info(
        "launching %d training processes on each of %d node(s), rendezvous at %s",
        processes,
        nodes,
        endpoint,
    )
    try:
        elastic_launch(config, sys.executable)("-m", "xlsent.cli", *argv)
    except ChildFailedError as err:
        # The cause first: a process a signal ended (its peers fail after it, on a closed
        # connection), else the first to fail.
        failures = sorted(
            err.failures.items(), key=lambda item: (item[1].exitcode >= 0, item[1].timestamp)
        )
        rank, failure = failures[0]
        raise LaunchError(
            f"the training process of rank {rank} (local rank {failure.local_rank} on this "
            f"node, pid {failure.pid}) {_ended(failure.exitcode)}; the other processes were "
            f"stopped. {resume_note(checkpoint_dir)}"
        ) from None
    except SignalException as err:
        raise LaunchError(
            f"stopped by {signal.Signals(err.sigval).name}, passed on to the training "
            f"processes. {resume_note(checkpoint_dir)}"
        ) from None


def _ended(exitcode: int) -> str:
    """How a process with `exitcode` ended (a negative code: the signal that killed it)."""
    if exitcode < 0:
        return f"was killed by {signal.Signals(-exitcode).name}"
    return f"exited with status {exitcode} (its error is above in this log)"


def resume_note(checkpoint_dir: Path) -> str:
    """What the same command does next: resume at the latest checkpoint's step, or start over."""
    from xlsent.train.checkpoints import Checkpoints

    found = Checkpoints(checkpoint_dir).latest_step()
    if found is None:
        return "No checkpoint was saved: the same command starts the training over."
    path, step = found
    return f"The same command resumes the training at step {step} ({path})."
