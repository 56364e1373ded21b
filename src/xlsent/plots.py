"""Figures of the result tables and the training records (PNG, for the report and the paper).

- `group_bars`: Tatoeba accuracy per language group, one bar per run (the summary table).
- `dev_curves`: dev P@1 against the training step, one line per run and seed (the records
  `results/models/{run}/seed{seed}/train_log.jsonl` that picked the best checkpoints).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from xlsent.io import atomic_path


def pyplot():
    """matplotlib.pyplot on the Agg backend: PNGs without a display."""
    import matplotlib

    matplotlib.use("Agg")  # no display on cluster nodes
    import matplotlib.pyplot as plt

    return plt


def group_bars(summary_csv: str | Path, groups: Sequence[str], out: str | Path) -> None:
    """Grouped bars of `results/tables/tatoeba.csv`: groups on the x axis, a bar per run."""
    plt = pyplot()
    summary = pl.read_csv(summary_csv)
    runs = summary["run"].to_list()
    x = np.arange(len(groups))
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(1.6 + 1.2 * len(groups) * max(1, len(runs)) / 3, 3.6))
    for i, run in enumerate(runs):
        row = summary.row(i, named=True)
        values = [row.get(g) if row.get(g) is not None else np.nan for g in groups]
        bars = ax.bar(x + (i - (len(runs) - 1) / 2) * width, values, width, label=run)
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
    ax.set_xticks(x, groups)
    ax.set_ylabel("Tatoeba accuracy (%), both directions")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8, ncols=min(len(runs), 4), loc="upper left")
    save_png(fig, out)


def dev_curves(logs: dict[str, str | Path], out: str | Path) -> None:
    """Dev P@1 per step from training logs given as {label: train_log.jsonl}."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, path in logs.items():
        records = [json.loads(line) for line in Path(path).read_text().splitlines() if line]
        evals = [r for r in records if "dev_p1" in r]
        if evals:
            ax.plot([r["step"] for r in evals], [r["dev_p1"] for r in evals], "o-", label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("dev P@1 (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save_png(fig, out)


def save_png(fig, out: str | Path) -> None:
    """`fig` as a 150 dpi PNG at `out`, written atomically."""
    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=150, format="png")
    fig.clf()
