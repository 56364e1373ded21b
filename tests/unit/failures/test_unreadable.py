"""A workflow file that broke after its job ended (a copy cut short): each reader names it and
the fix, a run sets it aside before it removes anything, `xlsent status` lists it. Every file
is real, written by the code that writes it in the workflow, then truncated (the workflow's
side: tests/workflow/test_recovery_messages.py; a checkpoint's:
tests/unit/train/test_checkpoints.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from xlsent import status
from xlsent.align.shards import iter_shards, write_manifest
from xlsent.evaluate.results import load_results, write_results
from xlsent.failures import unreadable
from xlsent.failures.unreadable import UnreadableFileError
from xlsent.io import write_json
from xlsent.train.checkpoints import save
from xlsent.train.data import load_pairs


def truncate(path: Path) -> Path:
    """Cut `path` to half its bytes, as a copy cut short leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _evaluation(path: Path, run: str = "tr") -> Path:
    rows = [
        {"lang": lang, "direction": d, "metric": "accuracy", "value": 50.0, "n": 100}
        for lang in ("kk", "te")
        for d in ("xx2en", "en2xx")
    ]
    write_results(rows, "tatoeba", run, 42, path)
    return path


def _xlsent(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xlsent.cli", *map(str, args)], capture_output=True, text=True
    )


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line.split(" ERROR xlsent: ")[1] for line in stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, stderr
    return errors[0]


def test_the_tables_job_names_a_truncated_evaluation_file_and_the_fix(tmp_path):
    """The report: polars' "File out of specification: The file must end with PAR1", no file."""
    good = _evaluation(tmp_path / "tr.parquet")
    broken = truncate(_evaluation(tmp_path / "wacse.parquet", "wacse"))
    proc = _xlsent(
        "tables", "--groups", "pair=kk,te", "--corpus-stats", "--language-directions", "mean",
        "--out", tmp_path / "tatoeba.csv", good, broken,
    )  # fmt: skip
    assert proc.returncode == 2
    assert _one_error_line(proc.stderr) == (
        f"{broken} does not read back (Parquet magic bytes not found in footer): the file is "
        "truncated or corrupt, broken after the job that wrote it ended (a copy cut short, a "
        f"full or failing disk). Remake it and what was computed from it: snakemake --forcerun "
        f"{broken} (with your other arguments)"
    )
    assert not (tmp_path / "tatoeba.csv").exists()
    assert len(load_results([good])) == 4  # the reader itself, on the good file


def test_the_subwords_job_names_a_truncated_training_split(small_corpus, small_tokenizer, tmp_path):
    """A sample job's train.parquet, cut short: the job reading it names it."""
    train = truncate(Path(shutil.copy(small_corpus["kk"]["train"], tmp_path / "train.parquet")))
    proc = _xlsent(
        "subwords", "--corpus", f"train={train}", "--tokenizer", small_tokenizer,
        "--en-prefix", "", "--xx-prefix", "", "--out", f"train={tmp_path / 'x'}",
    )  # fmt: skip
    assert proc.returncode == 2
    line = _one_error_line(proc.stderr)
    assert line.startswith(f"{train} does not read back (Parquet magic bytes not found in footer)")
    assert line.endswith(f"snakemake --forcerun {train} (with your other arguments)")


def test_the_trainer_names_a_truncated_subword_file(small_subwords, tmp_path):
    subwords = truncate(Path(shutil.copy(small_subwords["kk"]["train"], tmp_path / "kk.parquet")))
    with pytest.raises(UnreadableFileError, match=rf"^{subwords} does not read back \(Parquet"):
        load_pairs({"kk": subwords}, max_length=16)


def test_a_format_error_of_an_intact_file_is_left_as_it_is(small_subwords):
    """A missing column is a bug or the wrong file, not a broken one: not relabelled."""
    intact = small_subwords["kk"]["train"]
    with pytest.raises(pa.ArrowInvalid, match="No match for FieldRef"), unreadable.reading(intact):
        pq.read_table(intact, columns=["no_such_column"])


def _arrow(path: Path) -> Path:
    with (
        pa.OSFile(str(path), "wb") as sink,
        pa.ipc.new_file(sink, pa.schema([("x", pa.int64())])) as w,
    ):
        w.write_table(pa.table({"x": list(range(1000))}))
    return path


def _checkpoint(path: Path) -> Path:
    save({"step": 4, "model": {"w": torch.zeros(1000)}}, path)
    return path


def _json(path: Path) -> Path:
    write_json(path, {"pairs": list(range(100))})
    return path


@pytest.mark.parametrize(
    ("write", "name", "why"),
    [
        (_evaluation, "seed42.parquet", "Parquet magic bytes not found in footer"),
        (_arrow, "shard-0000.arrow", "Not an Arrow file"),
        (_checkpoint, "last.pt", "File is not a zip file"),
        (_json, "stats.json", "Expecting value: line"),
    ],
)
def test_problem_reads_what_a_cut_loses_first(tmp_path, write, name, why):
    path = write(tmp_path / name)
    assert unreadable.problem(path) is None
    assert unreadable.problem(truncate(path)).startswith(why)


def test_problem_leaves_directories_missing_files_and_other_kinds_alone(tmp_path):
    (tmp_path / "table.csv").write_text("run,low4\ntr,")
    assert unreadable.problem(tmp_path / "table.csv") is None
    assert unreadable.problem(tmp_path) is None
    assert unreadable.problem(tmp_path / "gone.parquet") is None


@dataclass(frozen=True)
class _Job:
    """A job as the scheduler-plugin view shows it: its name, inputs and outputs."""

    name: str
    input: tuple[str, ...] = ()
    output: tuple[str, ...] = ()


def _job(name: str, inputs: list[Path], outputs: list[Path]) -> _Job:
    return _Job(name, tuple(map(str, inputs)), tuple(map(str, outputs)))


class _Dag:
    """The scheduler-plugin view of a DAG that `xlsent.failures.unreadable` reads."""

    def __init__(self, needrun: list, dependencies: dict):
        self._needrun, self._dependencies = needrun, dependencies

    def needrun_jobs(self) -> list:
        return self._needrun

    def job_dependencies(self, job) -> list:
        return self._dependencies.get(job.name, [])


def test_a_run_sets_aside_a_broken_input_it_does_not_rebuild_before_anything_else(tmp_path):
    """The report: the tables job was planned because the truncated evaluation file became
    newer than the table; the table was removed first and the job failed, every time."""
    broken = truncate(_evaluation(tmp_path / "tr.parquet"))
    good = _evaluation(tmp_path / "wacse.parquet", "wacse")
    rebuilt = truncate(_evaluation(tmp_path / "dap.parquet", "dap"))  # its job runs again
    table = tmp_path / "tatoeba.csv"
    table.write_text("run,low4\n")
    evals = {p: _job(f"eval {p.stem}", [], [p]) for p in (broken, good, rebuilt)}
    tables = _job("tables", [broken, good, rebuilt], [table])
    dag = _Dag(
        needrun=[tables, evals[rebuilt]],
        dependencies={"tables": list(evals.values())},
    )
    argv = ["/venv/bin/snakemake", "-n", "results/tables/tatoeba.csv", "--configfile", "my.yaml"]
    said = unreadable.set_aside_unreadable_inputs(dag, tmp_path, argv)
    command = (
        "snakemake results/tables/tatoeba.csv --configfile my.yaml --forcerun "
        f"{broken}"  # the user's command line, not a dry run
    )
    assert said == [
        f"{broken} does not read back (Parquet magic bytes not found in footer): the file is "
        "truncated or corrupt, broken after the job that wrote it ended; moved it to "
        f"{broken}.unreadable.",
        "Nothing was removed or run. The results computed from it are kept, and the same "
        "command remakes it only where a job needs it again. To remake it now, and what was "
        f"computed from it: {command}",
    ]
    assert not broken.exists() and Path(f"{broken}.unreadable").exists()
    assert good.exists() and rebuilt.exists() and table.exists()
    assert unreadable.set_aside_unreadable_inputs(dag, tmp_path, argv) == []  # nothing is left
    # Every run after names it while it is missing (the report: "Nothing to be done", and the
    # file stayed missing), and forgets it once remade.
    assert unreadable.still_set_aside(tmp_path, argv) == [
        f"{broken}, set aside as unreadable ({broken}.unreadable), is still missing; the "
        "results computed from it are kept, and a run remakes it only where a job needs it "
        f"again. To remake it now, and what was computed from it: {command}"
    ]
    _evaluation(broken)
    assert unreadable.still_set_aside(tmp_path, argv) == []
    assert not (tmp_path / unreadable.SET_ASIDE_RECORD).exists()


def test_status_lists_an_output_that_does_not_read_back_with_the_command(tmp_path):
    """From Snakemake's --detailed-summary (tab-separated, one output a row)."""
    broken = truncate(_evaluation(tmp_path / "results/eval/tatoeba/tr/seed42.parquet"))
    _evaluation(tmp_path / "results/eval/tatoeba/wacse/seed42.parquet", "wacse")
    summary = "output_file\tdate\trule\tplan\n" + "".join(
        f"{path}\t-\teval_tatoeba\tno update\n"
        for path in (
            "results/eval/tatoeba/tr/seed42.parquet",
            "results/eval/tatoeba/wacse/seed42.parquet",
            "results/eval/tatoeba/dap/seed42.parquet",  # missing: the orphans' business
        )
    )
    assert status.unreadable(summary, tmp_path) == {
        str(broken.relative_to(tmp_path)): "Parquet magic bytes not found in footer"
    }


def test_an_alignments_truncated_manifest_is_named(tmp_path):
    """The align stage's `_SUCCESS` is JSON: its readers (word spans, the figures) and the
    run's check name it like any other workflow file."""
    manifest, stats = tmp_path / "_SUCCESS", tmp_path / "shard-0000.json"
    write_json(stats, {"pairs": 120, "links": 900, "statuses": {"aligned": 120}})
    write_manifest(manifest, [stats], {"aligner": "eflomal"})
    truncate(manifest)
    why = unreadable.problem(manifest)
    assert why is not None
    with pytest.raises(UnreadableFileError) as info:
        next(iter_shards(manifest))
    assert str(info.value).startswith(f"{manifest} does not read back ({why}): the file is")
