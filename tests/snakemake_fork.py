"""Snakemake's command line in a process forked from one that has imported Snakemake already.

A test's Snakemake dry run (`support.snakemake`) started a new interpreter that imported
Snakemake and its plugins before it read the workflow: 1.3 of the 1.9 CPU-s of the median
run in the suite (0.4 of it pandas, through the Slurm executor plugin), some 200 runs a
suite, many of them dry runs. A fork server (this file run as a script, one per pytest
worker, started at the worker's first run) imports them once; each run is a child forked
from it that calls the same `snakemake.cli.main` with the same arguments: a process of its
own, with its own environment, standard input, output and error, and exit status, whose jobs
are its children. The workflow's own modules are imported in the child, after its
environment is set, as in a new process.

Only dry runs are forked (`forks`): there Snakemake's start is most of the cost (a dry run
of the demo config, one after the other on 2 cores: 2.4-2.5 CPU-s as a new process, 1.2-1.3
forked). A run of jobs stays a new process: the demo's whole run forked cost 746 CPU-s
against 655 as a new process, one pair run one after the other on the same quiet machine, a
difference left unexplained. And what only a new interpreter gives is left to one: an
environment that sets a `PYTHON*` variable (read at interpreter start: `PYTHONPATH`,
`PYTHONPROFILEIMPORTTIME`). The children are the server's, not the test's: the server
reports each one's CPU seconds with its jobs' (`wait4`), and `cpu_seconds` sums them for
tests/conftest.py's accounting.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile

_server: subprocess.Popen | None = None
_cpu_seconds = 0.0


def cpu_seconds() -> float:
    """The CPU seconds of this process's forked runs so far, each with the jobs it waited for."""
    return _cpu_seconds


def forks(args: tuple[str, ...], env: dict[str, str]) -> bool:
    """Whether `support.snakemake` forks the run of `args` in `env`: a dry run, in an
    environment whose `PYTHON*` variables are this process's."""
    fresh = any(key.startswith("PYTHON") and os.environ.get(key) != env[key] for key in env)
    return not fresh and ("--dry-run" in args or "-n" in args)


def _readline(pipe) -> str:
    """One line from the server's unbuffered pipe (byte by byte: nothing read beyond it)."""
    line = pipe.readline()
    if not line:
        raise RuntimeError("the Snakemake fork server exited")
    return line.decode()


def _start_server(env: dict[str, str]) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, __file__],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        bufsize=0,
        env=env,
    )
    atexit.register(server.stdin.close)  # its loop ends, and it exits
    return server


def run(command: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`python -m snakemake ARGS` (`command`) forked from the server, as
    `subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)`."""
    global _server, _cpu_seconds
    assert command[1:3] == ["-m", "snakemake"], command
    if _server is None or _server.poll() is not None:
        _server = _start_server(env)
    with tempfile.TemporaryDirectory(prefix="snakemake-fork-") as tmp:
        paths = {name: os.path.join(tmp, name) for name in ("stdout", "stderr")}
        request = {"argv": command[3:], "env": env, "cwd": os.getcwd(), **paths}
        _server.stdin.write((json.dumps(request) + "\n").encode())
        pid = int(_readline(_server.stdout))
        if not select.select([_server.stdout], [], [], timeout)[0]:
            os.kill(pid, signal.SIGKILL)
            _readline(_server.stdout)
            raise subprocess.TimeoutExpired(command, timeout)
        returncode, cpu = _readline(_server.stdout).split()
        _cpu_seconds += float(cpu)
        output = {}
        for name, path in paths.items():
            with open(path, errors="replace") as file:
                output[name] = file.read()
    return subprocess.CompletedProcess(command, int(returncode), **output)


def _child(argv: list[str], env: dict[str, str], cwd: str, stdout: str, stderr: str) -> None:
    """The forked run: the caller's environment and working directory, its files as 0, 1 and
    2, Snakemake's `main`; the exit handlers and flushes of a normal exit, then the exit with
    main's status."""
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        file = os.open(path, flags, 0o644)
        os.dup2(file, fd)
        os.close(file)
    import snakemake
    from snakemake.cli import main

    # As `python -m snakemake` sets it: Snakemake records the command in its log.
    sys.argv = [os.path.join(os.path.dirname(snakemake.__file__), "__main__.py"), *argv]
    code = 1
    try:
        main(argv)
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (exit.code is not None)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _serve() -> None:
    """Import Snakemake's command line and the executor plugin its registry imports at every
    start; then, for each request line, fork a run, answer its pid, wait for it, and answer
    its exit status and its CPU seconds with its jobs'."""
    import snakemake.cli  # noqa: F401
    import snakemake_executor_plugin_slurm  # noqa: F401

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for line in iter(stdin.readline, b""):
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(**request)
        stdout.write(f"{pid}\n".encode())
        stdout.flush()
        _, status, usage = os.wait4(pid, 0)
        cpu = usage.ru_utime + usage.ru_stime
        stdout.write(f"{os.waitstatus_to_exitcode(status)} {cpu}\n".encode())
        stdout.flush()


if __name__ == "__main__":
    _serve()
