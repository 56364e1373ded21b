"""Data parallelism for real: `xlsent train --processes 2` (two processes over gloo, started
by the command itself, as the train rule runs it) trains what one process trains on the same
global micro-batches, for TR (also in micro-batches by length), WACSE with micro-batch
negatives and DAP; a preempted run resumes to the same bytes; two "nodes" meeting at a
rendezvous train the same weights. TR's two processes are the two nodes' (one process each),
whose bytes the preempted run of one node's two processes resumes to: one uninterrupted run
for both comparisons, each process start costing seconds of imports. And on GPUs, without
one: each process binds its own GPU before CUDA is touched, and every collective and pinned
copy goes where it should (CUDA faked). The processes of a run leave together, once the model
is written."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist
from safetensors.torch import load_file
from support import tiny_shape, train_settings
from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaModel

from xlsent.train import distributed
from xlsent.train.loop import Trainer, batch_builder
from xlsent.train.settings import ModelSpec, TrainSettings

# Each run sets its micro-batch (METHODS).
SETTINGS = train_settings(
    seed=5,
    max_steps=4,
    eval_every=100,
    checkpoint_every=2,
    log_every=1,
    dev_max_pairs=20,
)
# What each method's runs change. Each of two processes takes 8 pairs a pass; the one process
# it is compared with, the micro-batch that sees the same pairs in each loss:
METHODS = {
    # TR's negatives: the whole batch's, by caching, however it is split.
    "tr": ({"method": "tr"}, 16),
    # config.yaml's WACSE: the global micro-batch's negatives (both processes' 8, gathered
    # with their gradients: one process's 16); every aligned word masked (no per-process
    # random draw to tell them apart).
    "wacse": ({"method": "wacse", "negatives": "micro_batch", "awp_samples": 0}, 16),
    # RTL's token mean is each process's micro-batch's (as on DAP's 8 GPUs): one process
    # averages the same chunks of 8.
    "dap": ({"method": "dap", "rtl_layers": 1}, 8),
    # Micro-batches by length: each global micro-batch sorted, each process its share of it.
    "tr-window": ({"method": "tr", "length_window": 4}, 16),
}


@pytest.fixture(scope="module")
def dropout_free_model(tmp_path_factory, small_tokenizer) -> Path:
    """A one-layer encoder without dropout, as a pretrained model directory: the runs must
    differ by nothing but how the work is split (each process draws its own dropout masks)."""
    directory = tmp_path_factory.mktemp("model")
    config = XLMRobertaConfig(
        vocab_size=len(AutoTokenizer.from_pretrained(small_tokenizer)),
        max_position_embeddings=SETTINGS["max_length"] + 2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        **tiny_shape(),
    )
    torch.manual_seed(0)
    XLMRobertaModel(config).save_pretrained(directory)
    return directory


def _inputs(method: str, small_subwords, small_word_spans) -> tuple[dict, dict]:
    train = {lang: p["train"] for lang, p in small_subwords.items()}
    if method == "wacse":
        train = dict(small_word_spans)
    return train, {lang: p["dev"] for lang, p in small_subwords.items()}


def _command(settings: dict, model: Path, tokenizer: Path, train: dict, dev: dict, out: Path):
    """`xlsent train` as the rule builds it, its checkpoints and log beside `out`."""
    return [
        sys.executable,
        "-m",
        "xlsent.cli",
        "train",
        "--settings",
        json.dumps(settings),
        "--model",
        json.dumps({"init": "pretrained", "pooling": "cls", "prefix": ""}),
        "--tokenizer",
        str(tokenizer),
        "--pretrained",
        str(model),
        "--train",
        *(f"{lang}={path}" for lang, path in train.items()),
        "--dev",
        *(f"{lang}={path}" for lang, path in dev.items()),
        "--checkpoints",
        str(out.with_suffix(".checkpoints")),
        "--threads",
        "2",
        "--out",
        str(out),
        "--log",
        str(out.with_suffix(".log")),
    ]


def _run(command: list[str], *extra: str, env: dict | None = None, should_fail: bool = False):
    log = Path(command[command.index("--log") + 1])
    with open(log, "a") as stderr:  # as the rule: 2>> LOG
        proc = subprocess.run(
            [*command, *extra], stderr=stderr, env=env or os.environ, timeout=300, check=False
        )
    assert (proc.returncode != 0) == should_fail, log.read_text()[-4000:]
    return log.read_text()


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(model_dir / "model.safetensors")


@pytest.fixture(scope="module")
def two_node_tr(
    tmp_path_factory, small_subwords, small_word_spans, small_tokenizer, dropout_free_model
):
    """TR trained uninterrupted by two commands of one process each, two "nodes" on 127.0.0.1
    (as srun starts one a node) meeting at a c10d rendezvous: the two-process run that one
    process's TR is compared with, and the bytes a preempted run of one node's two processes
    resumes to. Returns the command of one node of two processes (`--processes 2` to add, as
    the rule adds it), the model, the nodes' exit codes and their log."""
    out = tmp_path_factory.mktemp("tr") / "model"
    train, dev = _inputs("tr", small_subwords, small_word_spans)
    settings = {**SETTINGS, **METHODS["tr"][0], "micro_batch_size": 8}
    command = _command(settings, dropout_free_model, small_tokenizer, train, dev, out)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Each node's command has the job's threads of its node: one, as each process of two has.
    node_command = list(command)
    node_command[node_command.index("--threads") + 1] = "1"
    nodes = ["--nodes", "2", "--processes", "1", "--rendezvous", f"127.0.0.1:{port}"]
    log = out.with_suffix(".log")
    procs = []
    for node in range(2):  # srun's task ids: the first node's command holds the checkpoints
        env = dict(os.environ, SLURM_PROCID=str(node))
        with open(log, "a") as stderr:
            procs.append(subprocess.Popen([*node_command, *nodes], stderr=stderr, env=env))
    exit_codes = [proc.wait(timeout=300) for proc in procs]
    return command, out, exit_codes, log.read_text()


@pytest.mark.slow  # starts processes
@pytest.mark.parametrize("method", METHODS)
def test_two_processes_train_what_one_process_trains(
    method,
    tmp_path,
    small_subwords,
    small_word_spans,
    small_tokenizer,
    dropout_free_model,
    two_node_tr,
):
    torch.set_num_threads(1)
    train, dev = _inputs(method, small_subwords, small_word_spans)
    changes, micro = METHODS[method]
    single = Trainer(
        TrainSettings(**{**SETTINGS, **changes, "micro_batch_size": micro}),
        ModelSpec("pretrained", small_tokenizer, pretrained_dir=dropout_free_model),
        train,
        dev,
        tmp_path / "single",
    )
    single.run()
    if method == "tr":  # two processes, one a node (two_node_tr), train TR
        _, parallel, exit_codes, nodes_log = two_node_tr
        assert exit_codes == [0, 0], nodes_log[-4000:]
    else:
        parallel = tmp_path / "model"
        settings = {**SETTINGS, **changes, "micro_batch_size": 8}
        log = _run(
            _command(settings, dropout_free_model, small_tokenizer, train, dev, parallel),
            "--processes",
            "2",
        )
        assert "launching 2 training processes on each of 1 node(s)" in log
    moved = _moved(single.model.state_dict(), _weights(parallel))
    assert moved < 0.01, f"{moved:.2%} of the weights moved apart"
    if method == "tr":  # what a real difference looks like: the pairs of another seed
        other = Trainer(
            TrainSettings(**{**SETTINGS, "seed": 6, "micro_batch_size": 16}),
            ModelSpec("pretrained", small_tokenizer, pretrained_dir=dropout_free_model),
            train,
            dev,
            tmp_path / "other",
        )
        other.run()
        assert _moved(single.model.state_dict(), other.model.state_dict()) > 0.5


def _moved(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """The share of the weights of `a` and `b` more than a tenth of a step (lr 1e-3) apart.
    Two runs of the same pairs differ by the order of float sums only, which Adam magnifies
    where a gradient is nearly zero (rare words' rows, far positions: m/sqrt(v) of rounding
    noise is a whole step), so a few weights move apart by up to a step a step; any real
    difference (other pairs, another split of the batch, other negatives) moves most weights
    by about a step. How far the noise reaches depends on the CPU's kernels: on an AVX2-only
    EPYC (2026-12-01) the two nodes' TR had 3.3 % of its weights more than a hundredth of a
    step from one process's, 0.09 % more than a tenth, where another seed's pairs moved 66 %
    and 63 % (the CPU of the earlier machines kept the noise under 1 % at a hundredth)."""
    difference = torch.cat([(a[name] - b[name]).abs().flatten() for name in a])
    return float((difference > SETTINGS["lr"] / 10).float().mean())


@pytest.mark.slow
def test_a_preempted_run_of_two_processes_resumes_to_the_bytes_of_two_nodes(two_node_tr, tmp_path):
    """SIGTERM to the command (Slurm's preemption): the agent passes it on, both processes
    finish their step and save; the same command resumes and ends with the uninterrupted
    run's weights, byte for byte. The uninterrupted run is two commands of one process each
    (two "nodes" on 127.0.0.1, as srun starts one a node) meeting at a c10d rendezvous: the
    same bytes also say that two nodes train the weights of one."""
    command, two_nodes, exit_codes, nodes_log = two_node_tr
    assert exit_codes == [0, 0], nodes_log[-4000:]
    out = tmp_path / "model"
    command = _command_at(command, out)
    # Rank 0 signals the launcher after its second step, as Slurm signals the job.
    env = dict(os.environ, XLSENT_KILL_AT="train.step@2", XLSENT_TERM_LAUNCHER="1")
    log = _run(command, "--processes", "2", env=env, should_fail=True)
    assert "stopped by SIGTERM, passed on to the training processes" in log
    assert "The same command resumes the training at step" in log
    assert not out.exists()
    log = _run(command, "--processes", "2")
    assert "resumed from" in log
    assert (out / "model.safetensors").read_bytes() == (
        two_nodes / "model.safetensors"
    ).read_bytes()


def _command_at(command: list[str], out: Path) -> list[str]:
    """`command` with its output (and the checkpoints and log beside it) at `out`."""
    command = list(command)
    for flag, value in (
        ("--out", out),
        ("--checkpoints", out.with_suffix(".checkpoints")),
        ("--log", out.with_suffix(".log")),
    ):
        command[command.index(flag) + 1] = str(value)
    return command


# -- on GPUs, without one ------------------------------------------------------------------


class FakeCuda:
    """The CUDA and process-group calls a training process makes, recorded in order, with the
    thread each was made in."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, visible: int = 2):
        self.calls: list[tuple] = []
        record = self.calls.append
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: visible)
        monkeypatch.setattr(
            torch.cuda,
            "set_device",
            lambda device: record(("set_device", torch.device(device), threading.get_ident())),
        )
        monkeypatch.setattr(dist, "is_initialized", lambda: False)
        monkeypatch.setattr(
            dist,
            "init_process_group",
            lambda backend, **kw: record(("init_process_group", backend, kw.get("device_id"))),
        )
        monkeypatch.setattr(
            dist, "new_group", lambda **kw: record(("new_group", kw["backend"])) or "gloo-group"
        )
        monkeypatch.setattr(
            dist,
            "all_gather_object",
            lambda out, obj, group=None: record(("all_gather_object", group)),
        )
        monkeypatch.setattr(dist, "barrier", lambda group=None: record(("barrier", group)))


def _rank(monkeypatch: pytest.MonkeyPatch, rank: int, local_rank: int) -> None:
    for name, value in (
        ("WORLD_SIZE", 4),
        ("RANK", rank),
        ("LOCAL_RANK", local_rank),
        ("LOCAL_WORLD_SIZE", 2),
    ):
        monkeypatch.setenv(name, str(value))


def test_each_process_binds_its_gpu_before_the_process_group(monkeypatch):
    """Rank 3, the second process of its node, takes GPU 1: bound first, then NCCL's group
    on it, then a gloo group that the object collectives and barriers use (not GPU 0)."""
    cuda = FakeCuda(monkeypatch)
    _rank(monkeypatch, rank=3, local_rank=1)
    world, device = distributed.world_and_device("auto")
    gpu1 = torch.device("cuda", 1)
    assert device == gpu1
    assert world == distributed.World(3, 4, 1, "gloo-group")
    assert cuda.calls == [
        ("set_device", gpu1, threading.get_ident()),
        ("init_process_group", "nccl", gpu1),
        ("new_group", "gloo"),
    ]
    distributed.gather_objects({"rng": 1}, world)
    distributed.barrier(world)
    assert cuda.calls[3:] == [("all_gather_object", "gloo-group"), ("barrier", "gloo-group")]


def test_the_batch_builder_thread_binds_the_gpu_before_it_pins(monkeypatch):
    """CUDA's current device is per thread: the thread that builds and pins the batches binds
    the process's GPU first (the trainer's builder), or its pinned buffers open a context on
    GPU 0 in every process."""
    cuda = FakeCuda(monkeypatch)
    gpu1 = torch.device("cuda", 1)
    builder = batch_builder(gpu1)
    thread = builder.submit(threading.get_ident).result()
    builder.shutdown()
    assert cuda.calls == [("set_device", gpu1, thread)]
    assert thread != threading.get_ident()


def test_fewer_gpus_than_processes_is_an_error_that_says_so(monkeypatch):
    FakeCuda(monkeypatch, visible=1)
    _rank(monkeypatch, rank=1, local_rank=1)
    with pytest.raises(distributed.DeviceError, match="process 1 of this node has no GPU"):
        distributed.world_and_device("cuda")
    with pytest.raises(distributed.DeviceError, match="names one GPU"):
        distributed.world_and_device("cuda:0")


def test_a_cpu_process_group_is_gloo_with_no_gpu_call(monkeypatch):
    cuda = FakeCuda(monkeypatch)
    _rank(monkeypatch, rank=2, local_rank=0)
    world, device = distributed.world_and_device("cpu")
    assert device == torch.device("cpu")
    assert world == distributed.World(2, 4, 0, None)
    assert cuda.calls == [("init_process_group", "gloo", None)]


@pytest.mark.parametrize("rank", [0, 1])
def test_the_processes_leave_together_once_the_model_is_written(monkeypatch, tmp_path, rank):
    """The end of one process of two (`xlsent train`'s own): the main one exports, then every
    process meets the others before it stops its batch thread and tears the process group
    down; a rank that left while rank 0 exported once aborted in its teardown. A training
    that fails meets no one (its peers stop on their own: the agent ends them)."""
    from xlsent.commands import train as command
    from xlsent.train import loop

    calls: list[str] = []

    class Ending:
        """A trainer of rank `rank` that records what the command asks of it."""

        def __init__(self, *_args, **_kwargs) -> None:
            self.world = distributed.World(rank, 2, rank)

        def run(self, *_args) -> dict:
            calls.append("run")
            if failing:
                raise RuntimeError("a step failed")
            return {"dev_p1": 50.0, "step": 2}

        def export(self, *_args) -> None:
            calls.append("export")

        def close(self) -> None:
            calls.append("close")

    monkeypatch.setattr(loop, "Trainer", Ending)
    monkeypatch.setattr(distributed, "barrier", lambda world: calls.append("barrier"))
    monkeypatch.setattr(distributed, "shutdown", lambda world: calls.append("shutdown"))
    args = SimpleNamespace(
        settings=json.dumps(train_settings()),
        model=json.dumps({"init": "scratch"}),
        tokenizer=str(tmp_path),
        pretrained=None,
        train=[],
        dev=[],
        negative_files=None,
        threads=1,
        checkpoints=str(tmp_path / "checkpoints"),
        log=str(tmp_path / "train.log"),
        out=str(tmp_path / "model"),
        dev_precision="fp32",
    )
    failing = False
    command._train(args)
    exported = ["export"] if rank == 0 else []
    assert calls == ["run", *exported, "barrier", "close", "shutdown"]
    calls.clear()
    failing = True
    with pytest.raises(RuntimeError, match="a step failed"):
        command._train(args)
    assert calls == ["run", "close", "shutdown"]
