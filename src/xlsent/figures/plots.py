"""Figures of the result tables and the training records (PNG, for the report and the paper):
the `plots` job's two (`draw`).

- `group_bars`: Tatoeba accuracy per language group, one bar per run (the summary table).
- `dev_curves`: dev P@1 against the training step, one line per run and seed (the records
  `results/models/{run}/seed{seed}/train_log.jsonl` that picked the best checkpoints).

A run is drawn in one style in every figure (`run_styles`): the `plots` job takes the styles
of the summary table's runs, in its order, for both figures. Legends sit outside the axes, and
the bars' value labels inside them: nothing a reader needs is drawn over.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from xlsent.io import atomic_path

# matplotlib's tab20, its ten saturated colours (tab10's hues) first, then their ten light
# partners: the first ten runs get ten clearly different hues, the next ten a lighter shade of
# one of them, which a second channel tells from its saturated partner (`RunStyle`). Written
# out rather than read from the colour cycle, which a user's matplotlibrc may change.
PALETTE = (
    *("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"),
    *("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"),
    *("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5"),
    *("#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"),
)
# The second channel, one per ten runs: bars hatched, lines dashed. The run i gets colour
# i mod 20 and pattern i div 10, so no two of the first 40 runs are drawn alike.
HATCHES = ("", "////", "\\\\\\\\", "xxxx")
LINESTYLES = ("-", "--", ":", "-.")
SEED_MARKERS = "osD^v<>P*X"  # a marker per seed, the same in every run
LEGEND_ROWS = 16  # entries a column of a legend holds beside axes 3.6 inches tall
LABEL_FONTSIZE = 7
MISSING = "n/a"  # a run without a value for a group (the table's `missing` column says why)


@dataclass(frozen=True)
class RunStyle:
    """How one run is drawn: its colour, and its hatch (bars) and line style (curves)."""

    colour: str
    hatch: str
    linestyle: str


def run_styles(runs: Iterable[str]) -> dict[str, RunStyle]:
    """A style per run, by its first position in `runs` (duplicates keep the first)."""
    return {
        run: RunStyle(
            PALETTE[i % len(PALETTE)],
            HATCHES[i // 10 % len(HATCHES)],
            LINESTYLES[i // 10 % len(LINESTYLES)],
        )
        for i, run in enumerate(dict.fromkeys(runs))
    }


def pyplot():
    """matplotlib.pyplot on the Agg backend: PNGs without a display."""
    import matplotlib

    matplotlib.use("Agg")  # no display on cluster nodes
    import matplotlib.pyplot as plt

    return plt


def draw(
    summary_csv: str | Path,
    groups: Sequence[str],
    logs: Mapping[str, str | Path],
    bars: str | Path,
    curves: str | Path,
) -> None:
    """The `plots` job's figures: the bars of `summary_csv` (`group_bars`) at `bars`, and the
    dev curves of `logs` (`dev_curves`) at `curves`, its runs in the colours the bars gave them
    (the summary's order)."""
    group_bars(summary_csv, groups, bars)
    runs = pl.read_csv(summary_csv, columns=["run"])["run"].to_list()
    dev_curves(logs, curves, runs)


def group_bars(summary_csv: str | Path, groups: Sequence[str], out: str | Path) -> None:
    """Grouped bars of `results/tables/tatoeba.csv` at `out`: groups on the x axis, a bar per
    run in the table's order and `run_styles` of it."""
    summary = pl.read_csv(summary_csv)
    save_png(bars_figure(summary, groups, run_styles(summary["run"])), out)


def bars_figure(summary: pl.DataFrame, groups: Sequence[str], styles: Mapping[str, RunStyle]):
    """The figure of `group_bars`: each bar labelled with its value (`MISSING` where the run
    has none), the legend to the right of the axes. Returns the matplotlib figure."""
    plt = pyplot()
    runs = summary["run"].to_list()
    x = np.arange(len(groups))
    width = 0.8 / max(1, len(runs))
    # About 0.2 inch a bar: room for a vertical label beside its neighbour's.
    fig, ax = plt.subplots(
        figsize=(2.4 + 0.25 * len(groups) * max(2, len(runs)), 3.6), layout="constrained"
    )
    labels = []
    for i, row in enumerate(summary.iter_rows(named=True)):
        values = [row.get(g) for g in groups]
        style = styles[row["run"]]
        bars = ax.bar(
            x + (i - (len(runs) - 1) / 2) * width,
            # A missing value stands at 0, labelled: matplotlib labels no NaN bar.
            [0.0 if v is None else v for v in values],
            width,
            label=row["run"],
            color=style.colour,
            hatch=style.hatch or None,
            edgecolor="0.2" if style.hatch else style.colour,
            linewidth=0.4 if style.hatch else 0,
        )
        text = [MISSING if v is None else f"{v:.1f}" for v in values]
        labels += ax.bar_label(bars, text, padding=2, rotation=90, fontsize=LABEL_FONTSIZE)
    ax.set_xticks(x, groups)
    ax.set_ylabel("Tatoeba accuracy (%), both directions")
    ax.set_yticks(np.arange(0, 101, 20))
    ax.set_xlim(-0.5, len(groups) - 0.5)
    _legend(fig, ax.get_legend_handles_labels()[0])
    _fit_labels(fig, ax, labels)
    return fig


def _fit_labels(fig, ax, labels: Sequence) -> None:
    """Raise the top of `ax`'s y axis (0 to 100 at least) until every value label fits inside.

    A label stands a fixed number of pixels e above its bar's top v; with the axis up to T and
    H pixels tall, it ends at H·v/T + e, inside while T ≥ v·H / (H − e). The layout is drawn
    once to measure e and H. Raising T moves no tick, so e stays, and H stays or grows (no
    label pokes above the axes any more for the layout to make room for): the labels fit."""
    ax.set_ylim(0, 100)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    height = ax.get_window_extent(renderer).height
    to_pixels = ax.transData.transform
    top = 100.0
    for label in labels:
        value = label.xy[1]
        above = label.get_window_extent(renderer).y1 - to_pixels((0, value))[1]
        top = max(top, value * height / (height - above))
    ax.set_ylim(0, 1.01 * top)


def dev_curves(logs: Mapping[str, str | Path], out: str | Path, runs: Sequence[str] = ()) -> None:
    """Dev P@1 per step from training logs given as {run/seedN: train_log.jsonl}, at `out`.

    Each run in its style of `run_styles(runs)` (the summary table's runs, so that a run looks
    as in the bars; a run not in `runs` takes the next style), each seed with its marker."""
    curves = {}
    for label, path in logs.items():
        run, _, seed = label.rpartition("/seed")
        records = [json.loads(line) for line in Path(path).read_text().splitlines() if line]
        points = [(r["step"], r["dev_p1"]) for r in records if "dev_p1" in r]
        curves[(run, seed) if run else (label, "")] = points
    styles = run_styles([*runs, *(run for run, _ in curves)])
    save_png(curves_figure(curves, styles), out)


def curves_figure(
    curves: Mapping[tuple[str, str], Sequence[tuple[int, float]]],
    styles: Mapping[str, RunStyle],
):
    """The figure of `dev_curves`: {(run, seed): [(step, dev P@1)]}, each run in its style,
    each seed ("" for none) with a marker of its own. The legend, to the right of the axes,
    names each run once and each seed once (not every run's every seed). Returns the
    matplotlib figure."""
    plt = pyplot()
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(figsize=(7.2, 3.6), layout="constrained")
    drawn = {key: points for key, points in curves.items() if points}
    markers = {
        seed: SEED_MARKERS[i % len(SEED_MARKERS)]
        for i, seed in enumerate(dict.fromkeys(seed for _, seed in drawn))
    }
    for (run, seed), points in drawn.items():
        style = styles[run]
        steps, p1 = zip(*points, strict=True)
        ax.plot(steps, p1, marker=markers[seed], linestyle=style.linestyle, color=style.colour)
    ax.set_xlabel("step")
    ax.set_ylabel("dev P@1 (%)")
    ax.grid(alpha=0.3)
    handles = [
        Line2D([], [], color=styles[run].colour, linestyle=styles[run].linestyle, label=run)
        for run in dict.fromkeys(run for run, _ in drawn)
    ] + [
        Line2D([], [], color="0.3", marker=marker, linestyle="none", label=f"seed {seed}")
        for seed, marker in markers.items()
        if seed
    ]
    if handles:
        _legend(fig, handles)
    return fig


def _legend(fig, handles: Sequence) -> None:
    """The legend of `handles` (labelled artists) to the right of the axes, in as many
    columns as keep it within the figure's height."""
    fig.legend(
        handles=handles,
        loc="outside right upper",
        fontsize=8,
        ncols=-(-len(handles) // LEGEND_ROWS),
    )


def save_png(fig, out: str | Path) -> None:
    """`fig` as a 150 dpi PNG at `out`, written atomically, and closed. Its layout is the
    figure's own (constrained: legends outside the axes get their room). The same figure
    gives the same bytes: Agg draws deterministically and its PNG records no date."""
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=150, format="png")
    pyplot().close(fig)
