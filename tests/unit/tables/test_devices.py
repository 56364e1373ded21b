"""One device per table (issue 48): every row of a table with a row per run says what the run
trained on and what encoded its sentences, and in which precision, from the records the
training, the encode job and the evaluation keep (`xlsent.devices`); the comparison table
flags a pair on different devices, and the Markdown says so under the table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from xlsent.cli import main
from xlsent.evaluate import vectors
from xlsent.evaluate.results import WORD_VECTOR_DEVICES, read_devices, write_results
from xlsent.languages import define_groups, members
from xlsent.tables.bli import bli_table
from xlsent.tables.bucc import bucc_table, write_bucc_table
from xlsent.tables.compare import compare_table, write_compare_table
from xlsent.tables.cost import cost_table, recorded_devices
from xlsent.tables.dev import dev_table, write_dev_table
from xlsent.tables.devices import COLUMNS, results_devices
from xlsent.tables.retrieval import retrieval_table
from xlsent.tables.tatoeba import ablation_table, tatoeba_tables, write_tables
from xlsent.tables.transfer import transfer_table

H100 = "NVIDIA H100 80GB HBM3"
GPU_BF16 = {"device": "cuda", "device_name": H100, "precision": "bf16"}
CPU_FP32 = {"device": "cpu", "precision": "fp32"}
# A training job's record (`xlsent.train.checkpoints.Attempts`): its device, the precision its
# passes computed in, dev P@1's, and its processes.
TRAINED_GPU = {**GPU_BF16, "dev_precision": "fp32", "processes": 1}
TRAINED_CPU = {**CPU_FP32, "dev_precision": "fp32", "processes": 1}
# The results' records: `gpu` trained on the H100 in bf16 and was encoded there in fp32
# (evaluate.precision's default); `cpu` trained and was encoded on a CPU in fp32.
ON_GPU = {
    "train": [TRAINED_GPU],
    "eval": {"device": "cuda", "device_name": H100, "precision": "fp32"},
}
ON_CPU = {"train": [TRAINED_CPU], "eval": CPU_FP32}
GPU_CELLS = {
    "train_device": f"cuda ({H100})",
    "train_precision": "bf16",
    "eval_device": f"cuda ({H100})",
    "eval_precision": "fp32",
}
CPU_CELLS = dict.fromkeys(("train_device", "eval_device"), "cpu") | dict.fromkeys(
    ("train_precision", "eval_precision"), "fp32"
)


def _tatoeba(tmp_path: Path, run: str, seed: int, scores: dict, devices: dict | None) -> Path:
    """A run's Tatoeba results file as eval-tatoeba writes it, recording `devices`."""
    rows = [
        {"lang": lang, "direction": direction, "metric": "accuracy", "value": value, "n": 1000}
        for lang, score in scores.items()
        for direction, value in (("xx2en", score + 1), ("en2xx", score - 1), ("mean", score))
    ]
    path = tmp_path / "tatoeba" / run / f"seed{seed}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_results(rows, "tatoeba", run, seed, path, devices)
    return path


def _bucc(tmp_path: Path, run: str, seed: int, f1: float, devices: dict | None) -> Path:
    rows = [
        {"lang": "de", "direction": "test", "metric": metric, "value": f1, "n": 100}
        for metric in ("precision", "recall", "f1")
    ]
    path = tmp_path / "bucc" / run / f"seed{seed}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_results(rows, "bucc", run, seed, path, devices)
    return path


SCORES = {"gpu": {"kk": 80.0, "te": 84.0, "de": 95.0}, "cpu": {"kk": 79.0, "te": 84.5, "de": 95.0}}


@pytest.fixture
def two_runs(tmp_path) -> list[Path]:
    return [
        _tatoeba(tmp_path, "gpu", 42, SCORES["gpu"], ON_GPU),
        _tatoeba(tmp_path, "cpu", 42, SCORES["cpu"], ON_CPU),
    ]


def test_each_row_of_the_tatoeba_tables_says_where_its_run_trained_and_was_encoded(
    tmp_path, two_runs
):
    groups = define_groups({"two": ["kk", "te"]})
    summary, per_language = tatoeba_tables(two_runs, members(["two"], groups))
    # The last columns: the columns before keep their places.
    assert summary.columns[-6:] == ["missing", "scarce", *COLUMNS]
    assert per_language.columns[-4:] == list(COLUMNS)
    for table in (summary, per_language):
        gpu, cpu = table.select("run", *COLUMNS).to_dicts()
        assert gpu == {"run": "gpu", **GPU_CELLS}
        assert cpu == {"run": "cpu", **CPU_CELLS}
    written = write_tables(
        summary, per_language, tmp_path / "tatoeba.csv", members(["two"], groups)
    )
    assert pl.read_csv(written[0]).select(COLUMNS).rows() == summary.select(COLUMNS).rows()
    for markdown in (written[1].read_text(), written[3].read_text()):
        assert "| train_device | train_precision | eval_device | eval_precision |" in markdown
        assert f"| cuda ({H100}) | bf16 | cuda ({H100}) | fp32 |" in markdown
        assert "| cpu | fp32 | cpu | fp32 |" in markdown
        # Under the table: the rows ran on different devices, and the device's own effect.
        assert "Rows trained or evaluated on different devices or precisions" in markdown
        assert "low4 79.4 and low8 83.1 on an H100 in bf16, 79.6 and 83.2 on a CPU" in markdown


def test_the_ablation_and_transfer_tables_end_with_each_runs_devices(two_runs):
    ablation = ablation_table(two_runs, ["cpu", "gpu"], members(["low4"]))
    assert ablation.columns[-4:] == list(COLUMNS)
    assert ablation.select("run", "train_device").rows() == [
        ("cpu", "cpu"),
        ("gpu", f"cuda ({H100})"),
    ]
    transfer = transfer_table(two_runs, {"gpu": "de", "cpu": "de"}, ["kk", "te"], {})
    assert transfer.columns[-4:] == list(COLUMNS)
    assert transfer.row(0, named=True) | GPU_CELLS == transfer.row(0, named=True)


def test_a_run_whose_seeds_ran_on_different_devices_gives_each(tmp_path):
    """A run resumed or re-evaluated elsewhere: its cell names every device its seeds ran on,
    and `unknown` for a seed whose results record none (written before the records)."""
    paths = [
        _tatoeba(tmp_path, "tr", 42, SCORES["gpu"], ON_GPU),
        _tatoeba(tmp_path, "tr", 0, SCORES["gpu"], ON_CPU),
        _tatoeba(tmp_path, "old", 42, SCORES["cpu"], None),
    ]
    devices = results_devices(paths)
    assert devices["tr"] == {
        "train_device": f"cpu, cuda ({H100})",
        "train_precision": "bf16, fp32",
        "eval_device": f"cpu, cuda ({H100})",
        "eval_precision": "fp32",
    }
    assert devices["old"] == dict.fromkeys(COLUMNS)  # blank: nothing recorded
    partly = results_devices([*paths[:1], _tatoeba(tmp_path, "tr", 7, SCORES["gpu"], None)])
    assert partly["tr"]["eval_precision"] == "fp32, unknown"


def test_the_compare_table_flags_a_pair_on_different_devices(tmp_path, two_runs):
    paths = [
        *two_runs,
        _tatoeba(tmp_path, "cpu2", 42, SCORES["cpu"], ON_CPU),
        _bucc(tmp_path, "gpu", 42, 89.0, ON_GPU),
        _bucc(tmp_path, "cpu", 42, 89.2, ON_CPU),
    ]
    out = tmp_path / "compare.csv"
    argv = ["tables-compare", "--pairs", "gpu:cpu", "cpu2:cpu", "--groups", "two=kk,te"]
    main([*argv, "--out", str(out), "--results", *map(str, paths), "--models"])
    table = pl.read_csv(out)
    pairs = [("gpu", "cpu"), ("cpu2", "cpu")]
    assert table.equals(compare_table(paths, pairs, define_groups({"two": ["kk", "te"]})))
    # Every row of the pair says it: each side's devices, and that they differ.
    across = table.filter(pl.col("a") == "gpu")
    assert set(across["task"]) == {"tatoeba", "bucc"}
    assert across["devices_differ"].to_list() == [True] * len(across)
    row = across.row(0, named=True)
    assert {c: row[f"a_{c}"] for c in COLUMNS} == GPU_CELLS
    assert {c: row[f"b_{c}"] for c in COLUMNS} == CPU_CELLS
    # Two runs on the same CPU in fp32: nothing to flag.
    same = table.filter(pl.col("a") == "cpu2")
    assert same["devices_differ"].to_list() == [False] * len(same)
    notes = [line for line in out.with_suffix(".md").read_text().splitlines() if "ran on" in line]
    assert len(notes) == 1  # the pair that differs, not the other
    assert notes[0].startswith(
        f"`gpu` and `cpu` ran on different devices or precisions (`devices_differ`): `gpu` "
        f"trained on cuda ({H100}) in bf16, encoded on cuda ({H100}) in fp32; `cpu` trained "
        "on cpu in fp32, encoded on cpu in fp32."
    )
    assert "79.6 and 83.2 on a CPU in fp32" in notes[0]


def test_the_compare_table_cannot_flag_what_was_not_recorded(tmp_path):
    paths = [
        _tatoeba(tmp_path, "a", 42, SCORES["gpu"], None),
        _tatoeba(tmp_path, "b", 42, SCORES["cpu"], ON_CPU),
    ]
    table = compare_table(paths, [("a", "b")], {})
    assert table["devices_differ"].to_list() == [None] * len(table)
    write_compare_table(table, tmp_path / "compare.csv")
    assert "ran on different devices" not in (tmp_path / "compare.md").read_text()


def test_the_mining_retrieval_and_bli_tables_carry_the_devices_too(tmp_path):
    mining = [_bucc(tmp_path, "gpu", 42, 89.0, ON_GPU), _bucc(tmp_path, "cpu", 42, 89.2, ON_CPU)]
    table = bucc_table(mining)
    assert table.select("run", "eval_device").rows() == [("gpu", f"cuda ({H100})"), ("cpu", "cpu")]
    write_bucc_table(table, tmp_path / "bucc.csv")
    assert (
        "| cpu | 1 | 89.2 | 89.2 | 89.2 | 89.2 | cpu | fp32 | cpu | fp32 |"
        in (tmp_path / "bucc.md").read_text()
    )
    # Word vectors: a CPU's fp32 by construction, as their evaluations record it.
    retrieval = []
    for run, devices in (("tr", ON_GPU), ("bisent2vec", WORD_VECTOR_DEVICES)):
        path = tmp_path / "retrieval" / f"{run}.parquet"
        rows = [
            {"lang": "de", "direction": d, "metric": "accuracy", "value": 50.0, "n": 10}
            for d in ("xx2en", "en2xx", "mean")
        ]
        write_results(rows, "retrieval", run, 42, path, devices)
        retrieval.append(path)
    table, _ = retrieval_table(retrieval, {})
    assert table.columns[-4:] == list(COLUMNS)
    assert table.row(1, named=True) | CPU_CELLS == table.row(1, named=True)
    bli = tmp_path / "bli.parquet"
    rows = [{"lang": "de", "direction": "en2xx", "metric": "p@1_nn", "value": 30.0, "n": 50}]
    write_results(rows, "bli", "bisent2vec", 42, bli, WORD_VECTOR_DEVICES)
    assert bli_table([bli])[0].select(COLUMNS).to_dicts() == [CPU_CELLS]


def test_an_evaluation_passes_on_the_devices_its_vectors_record(tmp_path):
    """The encode job records what encoded and what the model trained on; the evaluation that
    reads the vectors writes them into its results file."""
    (tmp_path / "tatoeba.deu-eng.deu").write_text("die katze\nder hund\n")
    (tmp_path / "tatoeba.deu-eng.eng").write_text("the cat\nthe dog\n")
    sentences = {"de": ["die katze", "der hund"], "en": ["the cat", "the dog"]}

    def encode(texts: list[str], lang: str) -> np.ndarray:
        return np.array([[len(t), t.count("d") + (lang == "en")] for t in texts], np.float32)

    table = vectors.encode_sentences(encode, sentences)
    metadata = {"source": "tatoeba", "encoded_on": ON_GPU["eval"], "trained_on": [TRAINED_GPU]}
    vectors.write(tmp_path / "tatoeba.arrow", table, metadata)
    out = tmp_path / "seed42.parquet"
    main(
        [
            *("eval-tatoeba", "--vectors", str(tmp_path / "tatoeba.arrow")),
            *("--dir", str(tmp_path), "--langs", "de", "--tatoeba-text", "laser"),
            *("--run", "gpu", "--seed", "42", "--out", str(out)),
        ]
    )
    assert read_devices(out) == ON_GPU
    assert results_devices([out])["gpu"] == GPU_CELLS


def _model(root: Path, label: str, trained_on: list[dict] | None) -> Path:
    """A model directory with its records: the dev log, best.json and run.json."""
    directory = root / label
    directory.mkdir(parents=True)
    record = {"step": 100, "dev_p1": 90.0, "dev": {"de": 90.0}, "best": True}
    (directory / "train_log.jsonl").write_text(json.dumps(record) + "\n")
    (directory / "best.json").write_text(json.dumps(record))
    run = {"settings": {}, **({"trained_on": trained_on} if trained_on is not None else {})}
    (directory / "run.json").write_text(json.dumps(run))
    return directory


def test_the_dev_table_says_where_each_training_ran_and_dev_was_encoded(tmp_path):
    models = {
        "gpu/seed42": _model(tmp_path, "gpu/seed42", [TRAINED_GPU]),
        # Killed on the GPU and resumed on a CPU: both jobs.
        "mixed/seed42": _model(tmp_path, "mixed/seed42", [TRAINED_GPU, TRAINED_CPU]),
        "old/seed42": _model(tmp_path, "old/seed42", None),  # exported before the records
    }
    table = dev_table(models)
    assert table.columns[-4:] == list(COLUMNS)
    gpu, mixed, old = table.select(COLUMNS).to_dicts()
    # Dev P@1 is encoded by the training, on its device, at evaluate.precision (fp32 here).
    assert gpu == GPU_CELLS
    assert mixed == {
        "train_device": f"cpu, cuda ({H100})",
        "train_precision": "bf16, fp32",
        "eval_device": f"cpu, cuda ({H100})",
        "eval_precision": "fp32",
    }
    assert old == dict.fromkeys(COLUMNS)
    write_dev_table(table, tmp_path / "dev.csv")
    markdown = (tmp_path / "dev.md").read_text()
    assert "Rows trained or evaluated on different devices or precisions" in markdown
    assert "its results were written before the evaluations recorded them" in markdown


def test_the_cost_table_says_what_each_stage_ran_on(tmp_path):
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    benchmarks = tmp_path / "benchmarks"
    for name in (
        "train/gpu/seed42",
        "train/cpu/seed42",
        "eval/encode/gpu/seed42/tatoeba",
        "eval/tatoeba/gpu/seed42",
        "bisent2vec_train/b2v/seed42/de",
        "train_dualpivot/head/seed42",
    ):
        path = benchmarks / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + "60.0\t0:01:00\t100.0\t0\t0\t0\t0\t0\t0\t50.0\n")
    # Each training job's record (attempts.json), as the command passes them.
    jobs = {"gpu": [TRAINED_GPU], "cpu": [TRAINED_CPU]}
    trained = {
        f"train/{run}/seed42": (
            [{"seconds": 60.0, "cpu_seconds": 50.0, **job} for job in records],
            0.0,
        )
        for run, records in jobs.items()
    }
    # The encode job's vectors and the dual-pivot head's run.json (`recorded_devices`).
    vectors_dir, models_dir = tmp_path / "vectors", tmp_path / "models"
    encoded = {"device": "cuda", "device_name": H100, "precision": "fp32"}
    (vectors_dir / "gpu/seed42").mkdir(parents=True)
    table = vectors.encode_sentences(
        lambda t, lang: np.ones((len(t), 2), np.float32), {"de": ["a"]}
    )
    vectors.write(vectors_dir / "gpu/seed42/tatoeba.arrow", table, {"encoded_on": encoded})
    _model(models_dir, "head/seed42", [CPU_FP32])
    devices = recorded_devices(vectors_dir, models_dir)
    assert devices["eval/encode/gpu/seed42/tatoeba"] == [encoded]
    cost = cost_table(benchmarks, {}, None, None, trained, devices)
    assert cost.columns[-2:] == ["device", "precision"]
    rows = {(r["stage"], r["run"]): (r["device"], r["precision"]) for r in cost.to_dicts()}
    assert rows == {
        ("train", "gpu"): (f"cuda ({H100})", "bf16"),
        ("train", "cpu"): ("cpu", "fp32"),
        ("eval/encode", "gpu"): (f"cuda ({H100})", "fp32"),
        ("eval/tatoeba", "gpu"): (None, None),  # a CPU stage that chooses no device
        ("bisent2vec_train", "b2v"): ("cpu", "fp32"),  # word vectors: by construction
        ("train_dualpivot", "head"): ("cpu", "fp32"),
    }


def test_an_encoding_whose_vectors_are_gone_is_recorded_by_its_evaluations(tmp_path):
    """An experiment's kept files leave the vectors out: each encode job's device comes from
    the results files of the evaluations that scored its source (tatoeba's from Tatoeba's,
    mining's from BUCC's), and a vector file where there is one is read first."""
    evaluations, vectors_dir = tmp_path / "eval", tmp_path / "vectors"
    rows = [{"lang": "de", "direction": "xx2en", "metric": "p1", "value": 90.0, "n": 10}]
    on_cpu = {"train": [TRAINED_CPU], "eval": CPU_FP32}
    write_results(rows, "tatoeba", "cpu", 42, evaluations / "tatoeba/cpu/seed42.parquet", on_cpu)
    write_results(rows, "bucc", "cpu", 42, evaluations / "bucc/cpu/seed42.parquet", on_cpu)
    write_results(rows, "bucc", "gpu", 0, evaluations / "bucc/gpu/seed0.parquet", ON_GPU)
    write_results(rows, "bucc", "old", 42, evaluations / "bucc/old/seed42.parquet")  # no record
    # The GPU run's mining vectors are still there, and say another precision than its results.
    (vectors_dir / "gpu/seed0").mkdir(parents=True)
    encoded = {"device": "cuda", "device_name": H100, "precision": "bf16"}
    table = vectors.encode_sentences(
        lambda t, lang: np.ones((len(t), 2), np.float32), {"de": ["a"]}
    )
    vectors.write(vectors_dir / "gpu/seed0/mining.arrow", table, {"encoded_on": encoded})
    devices = recorded_devices(
        vectors_dir, None, evaluations, {"tatoeba": "tatoeba", "bucc": "mining"}
    )
    assert devices == {
        "eval/encode/cpu/seed42/tatoeba": [CPU_FP32],
        "eval/encode/cpu/seed42/mining": [CPU_FP32],
        "eval/encode/gpu/seed0/mining": [encoded],
    }
    # Without the tasks' sources no results file is read.
    assert recorded_devices(None, None, evaluations) == {}


def test_a_record_names_the_gpu_and_a_cpu_alone(monkeypatch):
    """The GPU's model is part of the record (its kernels round their own way); no machine
    here has one, so torch's answer is stood in for."""
    import torch

    from xlsent.devices import device_label, device_record

    names = []
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d: names.append(d) or "NVIDIA H200")
    record = device_record("cuda:1", "bf16")
    assert record == {"device": "cuda", "device_name": "NVIDIA H200", "precision": "bf16"}
    assert names == [torch.device("cuda:1")]  # the job's own GPU, not GPU 0
    assert device_label(record) == "cuda (NVIDIA H200)"
    assert device_record("cpu", "fp32") == CPU_FP32 and device_label(CPU_FP32) == "cpu"
