"""The printed report of a training benchmark: one row per run."""

from __future__ import annotations

import harness


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _cell(value, fmt) -> str:
    if value is None:
        return "–"
    return fmt(value) if callable(fmt) else fmt.format(value)


def table(result: dict) -> str:
    """The runs' rows; columns that no run has (CPU time, MFU, memory) are left out."""
    runs = result["runs"]
    columns = [("run", "run", "{}")]
    if any("freeze" in r for r in runs):
        columns.append(("freeze", "freeze", "{}"))
    options = len({r.get("options") for r in runs}) > 1
    if options:
        columns.append(("options", "options", "{}"))
    if len({r["batch_pairs"] for r in runs}) > 1:
        columns.append(("batch", "batch_pairs", "{:,}"))
    columns += [
        ("ms/step", "ms_per_step", "{:,.1f}"),
        ("median ms", "ms_per_step_median", "{:,.1f}"),
        ("fastest ms", "ms_per_step_fastest", "{:,.1f}"),
        ("ms/pair", "ms_per_pair", "{:.3f}"),
        ("pairs/s", "pairs_per_s", _count),
    ]
    if any(r.get("cpu_ms_per_step") is not None for r in runs):
        columns.append(("CPU ms/step", "cpu_ms_per_step", "{:,.1f}"))
    columns += [
        ("tokens/s", "tokens_per_s", _count),
        ("padding", "padding_share", "{:.0%}"),
        ("×tr", "ratio_to_tr", "{:.2f}"),
        *([("×default", "ratio_to_default", "{:.2f}")] if options else []),
        ("fastest ×tr", "fastest_ratio_to_tr", "{:.2f}"),
        ("paper ×tr", "paper_ratio_to_tr", "{:.2f}"),
        ("FLOPs ×tr", "flops_ratio_to_tr", "{:.2f}"),
        ("RTL rows", "rtl_rows", "{:,}"),
        ("build ms/µb", "build_ms_per_micro_batch", "{:.1f}"),
        ("TFLOP/s", "achieved_tflops", "{:.3g}"),
    ]
    if "build_batch_pairs" in result:
        build = f"build ms @{result['build_batch_pairs']}"
        columns.append((build, "build_ms_at_build_batch", "{:.1f}"))
    if any(r["mfu"] is not None for r in runs):
        columns.append(("MFU", "mfu", "{:.1%}"))
    if any("peak_rss_mb" in r for r in runs):
        columns += [
            ("peak MB", "peak_rss_mb", "{:,.0f}"),
            ("train MB", "training_rss_mb", "{:,.0f}"),
        ]
    if any("peak_gpu_mb" in r for r in runs):
        columns.append(("peak GPU MB", "peak_gpu_mb", "{:,.0f}"))
    rows = [[_cell(r.get(key), fmt) for _, key, fmt in columns] for r in runs]
    return harness.table([name for name, _, _ in columns], rows)


def report(result: dict) -> str:
    """The shape and batch, the table, and what its columns compare with."""
    paper = result["paper_dap_over_tr"]
    batches = ", ".join(f"{n:,}" for n in dict.fromkeys(r["batch_pairs"] for r in result["runs"]))
    return "\n".join(
        [
            f"\n{result['shape']}, {result['device']}, {batches} pairs per step\n",
            table(result),
            f"\nDAP paper: TR {paper['ms_per_sample']['tr']} ms/sample, DAP "
            f"{paper['ms_per_sample']['dap']} ms/sample, ratio {paper['ratio']:.2f}. "
            "`build ms/µb`: building a micro-batch on the CPU (in a background thread in "
            "training). `padding`: the share of the padded sentences' positions that are "
            "padding (each micro-batch padded to its longest sentence); tokens/s and MFU "
            "count real tokens only.",
        ]
    )
