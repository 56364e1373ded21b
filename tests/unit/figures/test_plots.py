"""The figures are drawn from the real table layout and training records, and a reader can
read them: every run in a style of its own, the same in both figures, legends beside the axes
and never over what they explain, every bar's value label inside the axes and over no other.
What matplotlib drew is asserted (its artists and their extents after a draw), not pixels."""

import json
from pathlib import Path

import polars as pl
import pytest
from matplotlib import colormaps
from matplotlib.colors import to_rgba

from xlsent.cli import main
from xlsent.figures import plots
from xlsent.figures.plots import bars_figure, curves_figure, dev_curves, group_bars, run_styles

PNG = b"\x89PNG\r\n\x1a\n"
GROUPS = ["low4", "low5", "low8"]
# The demo's runs (resources/demo/config.yaml) in its order, with Tatoeba accuracies of its
# ranges: the 64-wide encoders and dual-pivot heads 1 to 12 %, the word vectors 28 to 47 %,
# multilingual-e5-small 89 to 94 % (docs/results.md).
DEMO = {
    "mlm": (1.2, 1.5, 1.3),
    "tr": (10.9, 10.2, 10.6),
    "wacse": (8.3, 7.6, 8.0),
    "dap": (7.9, 8.4, 7.8),
    "tr-awp": (3.4, 2.9, 3.1),
    "tr-wtr": (3.9, 4.2, 3.8),
    "me5": (90.4, 88.9, 90.7),
    "me5-tr": (93.0, 92.1, 93.2),
    "dualpivot-sup": (9.8, 11.4, 9.6),
    "dualpivot-unsup": (9.1, 8.7, 9.1),
    "dualpivot-layer": (7.1, 6.5, 7.1),
    "bisent2vec-uni": (46.7, 29.8, 33.1),
    "fasttext-cbow": (32.7, 28.1, 30.4),
}
ENCODER_RUNS = ["mlm", "tr", "wacse", "dap", "tr-awp", "tr-wtr", "me5", "me5-tr"]


def _summary(values: dict[str, tuple[float | None, ...]]) -> pl.DataFrame:
    """The layout of `results/tables/tatoeba.csv` (`xlsent.tables.tatoeba.tatoeba_tables`)."""
    rows = [
        {"run": run, "seeds": 1, **dict(zip(GROUPS, v, strict=True))} for run, v in values.items()
    ]
    schema = {"run": pl.String, "seeds": pl.Int64, **dict.fromkeys(GROUPS, pl.Float64)}
    return pl.DataFrame(rows, schema=schema)


def _write_log(path: Path, points: list[tuple[int, float]]) -> Path:
    """A train_log.jsonl as the trainer writes it: loss records, then the dev evaluations."""
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [{"step": step, "loss": 3.0} for step, _ in points]
    records += [{"step": step, "dev_p1": p1, "best": True} for step, p1 in points]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _extents(fig) -> tuple:
    """(renderer, figure box, axes box, legend box) in pixels after a full draw."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    (ax,) = fig.axes
    (legend,) = fig.legends
    return renderer, fig.bbox, ax.get_window_extent(renderer), legend.get_window_extent(renderer)


def _inside(inner, outer) -> bool:
    return (
        inner.x0 >= outer.x0 - 0.5
        and inner.y0 >= outer.y0 - 0.5
        and inner.x1 <= outer.x1 + 0.5
        and inner.y1 <= outer.y1 + 0.5
    )


def _look(style: plots.RunStyle) -> tuple:
    return (to_rgba(style.colour), style.hatch)


# -- styles -------------------------------------------------------------------------------------


def test_every_run_gets_a_style_of_its_own_by_its_position():
    tab20 = [to_rgba(c) for c in colormaps["tab20"].colors]
    assert [to_rgba(c) for c in plots.PALETTE] == tab20[0::2] + tab20[1::2]
    styles = run_styles(f"run{i}" for i in range(40))
    assert len({_look(s) for s in styles.values()}) == 40
    assert len({to_rgba(s.colour) for s in list(styles.values())[:20]}) == 20  # colour alone
    # The first ten plain, the next ten hatched (bars) and dashed (lines).
    assert {(s.hatch, s.linestyle) for s in list(styles.values())[:10]} == {("", "-")}
    assert all(s.hatch and s.linestyle != "-" for s in list(styles.values())[10:20])
    # A run's style is its first position's, whatever follows.
    assert run_styles(["b", "a", "b", "c"]) == {
        run: style for run, style in zip("bac", run_styles(["x", "y", "z"]).values(), strict=True)
    }


# -- the bars -----------------------------------------------------------------------------------


def test_the_demo_bars_draw_each_run_in_its_own_style_with_every_label_readable():
    summary = _summary(DEMO)
    styles = run_styles(summary["run"])
    fig = bars_figure(summary, GROUPS, styles)
    (ax,) = fig.axes
    looks = {}
    for container in ax.containers:
        run = container.get_label()
        faces = {(tuple(bar.get_facecolor()), bar.get_hatch() or "") for bar in container}
        assert len(faces) == 1  # one look in every group
        looks[run] = faces.pop()
        assert looks[run] == _look(styles[run])
        assert [bar.get_height() for bar in container] == list(DEMO[run])
    assert list(looks) == list(DEMO)
    assert len(set(looks.values())) == len(DEMO)  # no two runs alike

    renderer, figure, axes, legend = _extents(fig)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(DEMO)
    assert not legend.overlaps(axes) and _inside(legend, figure)
    labels = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts]
    assert sorted(text for text, _ in labels) == sorted(f"{v:.1f}" for v in sum(DEMO.values(), ()))
    for i, (text, box) in enumerate(labels):
        assert _inside(box, axes), f"{text} leaves the axes"
        assert not any(box.overlaps(other) for _, other in labels[i + 1 :]), text
    # Ticks stop at 100: the room above is the labels'.
    assert ax.get_ylim()[1] >= 100 and max(ax.get_yticks()) == 100


@pytest.mark.parametrize("runs", [2, 24])
def test_a_missing_value_is_labelled_and_a_long_legend_takes_columns(runs):
    values = {f"run-{i:02d}": (99.9, 5.0, 50.0) for i in range(runs)}
    values["run-01"] = (12.5, None, 30.0)  # a run lacking a language of low5
    fig = bars_figure(_summary(values), GROUPS, run_styles(values))
    (ax,) = fig.axes
    renderer, figure, axes, legend = _extents(fig)
    missing = ax.containers[1]
    assert missing[1].get_height() == 0
    assert [t.get_text() for t in ax.texts[3:6]] == ["12.5", plots.MISSING, "30.0"]
    assert all(_inside(t.get_window_extent(renderer), axes) for t in ax.texts)
    assert not legend.overlaps(axes) and _inside(legend, figure)
    assert len(fig.legends[0].get_texts()) == runs


# -- the curves ---------------------------------------------------------------------------------


def test_curves_name_each_run_and_seed_once_beside_the_axes():
    styles = run_styles(["tr", "wacse"])
    curves = {
        ("tr", "1"): [(100, 10.0), (200, 15.0)],
        ("tr", "2"): [(100, 11.0), (200, 14.0)],
        ("wacse", "1"): [(100, 9.0), (200, 16.0)],
        ("wacse", "2"): [],  # no evaluation recorded: nothing to draw
    }
    fig = curves_figure(curves, styles)
    (ax,) = fig.axes
    drawn = [(to_rgba(line.get_color()), line.get_marker()) for line in ax.lines]
    tr, wacse = to_rgba(styles["tr"].colour), to_rgba(styles["wacse"].colour)
    assert drawn == [(tr, "o"), (tr, "s"), (wacse, "o")]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["tr", "wacse", "seed 1", "seed 2"]
    _, figure, axes, legend = _extents(fig)
    assert not legend.overlaps(axes) and _inside(legend, figure)


def test_the_plots_command_draws_a_run_alike_in_both_figures(tmp_path, monkeypatch):
    """As the `plots` rule runs it: the summary table of every run, the training logs of the
    encoder runs only (a subset, in another position): each run's colour is the bars'."""
    figures = []
    save = plots.save_png

    def capture(fig, out):
        fig.draw_without_rendering()
        figures.append(fig)
        save(fig, out)

    monkeypatch.setattr(plots, "save_png", capture)
    summary = tmp_path / "tatoeba.csv"
    _summary(DEMO).write_csv(summary)
    logs = [
        f"{run}/seed42={_write_log(tmp_path / run / 'train_log.jsonl', [(40, 5.0), (80, 9.0)])}"
        for run in ENCODER_RUNS
    ]
    bars, curves = tmp_path / "bars.png", tmp_path / "curves.png"
    outputs = ["--bars", str(bars), "--curves", str(curves)]
    main(["plots", "--summary", str(summary), "--groups", *GROUPS, "--logs", *logs, *outputs])
    bar_figure, curve_figure = figures
    colour = {c.get_label(): tuple(c[0].get_facecolor()) for c in bar_figure.axes[0].containers}
    lines = curve_figure.axes[0].lines
    assert [to_rgba(line.get_color()) for line in lines] == [colour[run] for run in ENCODER_RUNS]
    assert bars.read_bytes().startswith(PNG) and curves.read_bytes().startswith(PNG)


def test_the_same_inputs_give_the_same_bytes(tmp_path):
    summary = tmp_path / "tatoeba.csv"
    _summary(DEMO).write_csv(summary)
    log = _write_log(tmp_path / "train_log.jsonl", [(100, 10.0), (200, 15.0)])
    for name in ("a", "b"):
        group_bars(summary, GROUPS, tmp_path / f"bars_{name}.png")
        dev_curves({"tr/seed42": log}, tmp_path / f"curves_{name}.png", runs=list(DEMO))
    assert (tmp_path / "bars_a.png").read_bytes().startswith(PNG)
    assert (tmp_path / "bars_a.png").read_bytes() == (tmp_path / "bars_b.png").read_bytes()
    assert (tmp_path / "curves_a.png").read_bytes() == (tmp_path / "curves_b.png").read_bytes()
