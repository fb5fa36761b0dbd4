"""One plot path draws N runs (issue 56): the run on show and the runs beside it, live or
recorded, are layers made by the same code, differing only in colour (the colour of the
run's swatch in the Runs table); the legend names each run (shortened) and each kind of
line; a recorded run's x range ends at its data; picked runs are overlaid."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tests.core.tfevents import write_events
from tfstudio.core.locations import location
from tfstudio.core.x_axes import PER_FIT
from tfstudio.ui.plotting.style import LIVE_COLOUR, short_names

N = 20
LOSS = [float(np.float32(2.0 - 0.05 * g + 0.02 * (g % 3))) for g in range(1, N + 1)]
MEANS = {10: float(np.float32(1.7)), 20: float(np.float32(1.2))}
VAL = {10: float(np.float32(1.8)), 20: float(np.float32(1.4))}


def recorded(logdir, name, losses=LOSS, started=1.0, run_json=True):
    """A run folder as tfstudio records it: per-step loss, epoch means and val_loss."""
    path = logdir / name
    write_events(
        path,
        {
            "step/loss": [(g, v) for g, v in enumerate(losses, start=1)],
            "epoch/loss": sorted(MEANS.items()),
            "epoch/val_loss": sorted(VAL.items()),
        },
    )
    if run_json:
        info = {
            "status": "finished",
            "script": "/proj/mlp.py",
            "start_time": started,
            "steps": len(losses),
            "segments": [{"kind": "fit", "index": 0, "model": "m", "start_step": 0}],
        }
        (path / "run.json").write_text(json.dumps(info))
    return path


def loaded(window, qtbot):
    qtbot.waitUntil(lambda: not window.runs.loading(), timeout=30_000)
    window.runs.poll()
    window.bridge.flush()


def lines_of(plot):
    """layer -> its lines in ``plot`` (the run on show first)."""
    return list(plot.runs())


def look(item):
    """What an item's style is, colour left out: pen width and dash, marker and its size."""
    pen = item.opts["pen"]
    return (pen.widthF(), pen.style(), item.opts["symbol"], item.opts["symbolSize"])


def data(item):
    x, y = item.xData, item.yData
    return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)


def test_a_live_and_a_recorded_run_of_the_same_steps_are_drawn_alike_but_for_colour(
    window, run, qtbot, tmp_path
):
    recorded(tmp_path, "rec-20260101-000000")
    window.runs.set_logdir(tmp_path)
    window.metrics.set_smoothing(0.0)
    run.started().fit(epochs=2, steps_per_epoch=10)
    per_step = lambda g: {"loss": LOSS[g - 1]}  # noqa: E731
    run.steps(10, values=per_step).epoch_end(0, loss=MEANS[10], val_loss=VAL[10])
    run.steps(10, epoch=1, values=per_step, start=10)
    run.epoch_end(1, loss=MEANS[20], val_loss=VAL[20]).frame()
    window.runs.select(["rec-20260101-000000"])
    loaded(window, qtbot)
    plot = window.metrics.plots["loss"]
    qtbot.waitUntil(lambda: len(lines_of(plot)) == 2, timeout=10_000)
    (live, live_lines), (rec, rec_lines) = lines_of(plot)
    assert live is plot.own and rec.name == "rec-20260101-000000"
    # the same lines, the same points, the same look; one colour each
    assert sorted(live_lines.steps) == sorted(rec_lines.steps) == ["loss"]
    assert sorted(live_lines.epochs) == sorted(rec_lines.epochs) == ["loss", "val_loss"]
    assert not live_lines.running and not rec_lines.running
    swatch = window.runs.style_of(location(tmp_path / "rec-20260101-000000")).colour
    assert live.colour == LIVE_COLOUR and rec.colour == swatch != LIVE_COLOUR
    for table in ("steps", "epochs"):
        for key, mine in getattr(live_lines, table).items():
            theirs = getattr(rec_lines, table)[key]
            assert mine.label == theirs.label
            xa, ya = data(mine.item)
            xb, yb = data(theirs.item)
            np.testing.assert_array_equal(xa, xb, err_msg=key)
            np.testing.assert_array_equal(ya, yb, err_msg=key)
            assert look(mine.item) == look(theirs.item), (table, key)
            own_pen, other_pen = mine.item.opts["pen"].color(), theirs.item.opts["pen"].color()
            assert own_pen.alpha() == other_pen.alpha()
            if table == "steps":
                assert own_pen.name() == LIVE_COLOUR and other_pen.name() == swatch
    # each kind keeps its look in every run: val dashed with squares, the mean with dots
    val = rec_lines.epochs["val_loss"].item
    assert val.opts["pen"].style() == Qt.PenStyle.DashLine and val.opts["symbol"] == "s"
    assert rec_lines.epochs["loss"].item.opts["symbol"] == "o"
    x, y = data(rec_lines.steps["loss"].item)
    assert x[np.isfinite(y)].tolist() == list(range(1, N + 1))
    # the legend names both runs, then each kind of line once
    assert plot.legend_labels() == [
        "live run",
        "rec-20260101-000000",
        "loss (per step)",
        "loss (epoch mean)",
        "val_loss",
    ]


def test_picked_runs_are_overlaid_in_their_swatch_colours_and_named_shortly(
    window, qtbot, tmp_path
):
    recorded(tmp_path, "mlp-20261203-194601", started=2.0)  # the newer: listed first
    recorded(tmp_path, "mlp-20261203-194512", [v + 1.0 for v in LOSS], started=1.0)
    window.runs.set_logdir(tmp_path)
    window.metrics.set_smoothing(0.0)
    window.runs.select(["mlp-20261203-194601", "mlp-20261203-194512"])
    loaded(window, qtbot)
    metrics = window.metrics
    qtbot.waitUntil(lambda: "loss" in metrics.plots, timeout=10_000)
    plot = metrics.plots["loss"]
    qtbot.waitUntil(lambda: len(lines_of(plot)) == 2, timeout=10_000)
    (first, first_lines), (second, second_lines) = lines_of(plot)
    # both drawn, each with its own values
    for lines, losses in ((first_lines, LOSS), (second_lines, [v + 1.0 for v in LOSS])):
        x, y = data(lines.steps["loss"].item)
        keep = np.isfinite(y)
        assert x[keep].tolist() == list(range(1, N + 1))
        assert y[keep].tolist() == pytest.approx([float(np.float32(v)) for v in losses])
    # the run on show is drawn in its swatch's colour, not the live run's blue
    for layer, name in ((first, "mlp-20261203-194601"), (second, "mlp-20261203-194512")):
        swatch = window.runs.style_of(location(tmp_path / name)).colour
        assert layer.colour == swatch != LIVE_COLOUR
    assert first_lines.steps["loss"].item.opts["pen"].color().name() == first.colour
    assert first.colour != second.colour
    # the legend names each run, less the start their names share, and each kind of line
    assert plot.legend_labels() == [
        "194601",
        "194512",
        "loss (per step)",
        "loss (epoch mean)",
        "val_loss",
    ]
    # the readout names the other run as the legend does
    text = plot.readout(15).replace("<b>", "").replace("</b>", "")
    assert f"194512: loss {LOSS[14] + 1.0:.5g}" in text
    assert f"194601 · loss (per step): {LOSS[14]:.5g}" in text  # and the run on show
    # step within fit: the run on show's one fit keeps its run's colour, named by run
    metrics.set_x_mode(PER_FIT)
    window.bridge.flush()
    overlay = plot.overlays[("loss (per step)", 0)]
    assert overlay.opts["pen"].color().name() == first.colour
    assert plot.legend_labels() == ["194601: 1 m", "194512"]


def test_a_recorded_runs_x_range_ends_at_its_last_step(window, qtbot, tmp_path):
    """A folder with no run.json (as Keras's TensorBoard callback writes): the x range
    ended at 200 for 100 steps (room to grow kept for a run that will never grow)."""
    losses = [1.0 / g for g in range(1, 101)]
    path = recorded(tmp_path, "logs", losses, run_json=False)
    window.runs.open_folder(str(path))
    loaded(window, qtbot)
    qtbot.waitUntil(lambda: "loss" in window.metrics.plots, timeout=10_000)
    window.bridge.flush()
    plot = window.metrics.plots["loss"]
    (x0, x1), _ = plot.vb.viewRange()
    assert plot.data_x_max() == 100.0
    assert 100.0 <= x1 <= 100.0 + 0.03 * (100.0 - x0)  # the data fills the width


def test_short_names_strip_what_every_name_shares_to_a_separator():
    assert short_names(["mlp-20261203-194512", "mlp-20261203-194601"]) == ["194512", "194601"]
    assert short_names(["alpha-1", "beta-1"]) == ["alpha-1", "beta-1"]
    assert short_names(["run-a", "run-a"]) == ["run-a", "run-a"]  # nothing would be left
    assert short_names(["only-one"]) == ["only-one"]


def test_a_legend_filled_as_runs_come_in_keeps_rows_as_tall_as_its_text(qtbot):
    """The legend is made again as each run comes in (one run's lines, then each run
    named and each kind of line); every row stays one line of text, its sample beside
    its label (pyqtgraph sized the legend from its rows' current, stretched heights: on
    the wall-time screenshot its rows stayed twice as tall, samples under the labels)."""
    import pyqtgraph as pg

    from tfstudio.ui.plotting import PlotView

    view = PlotView("loss")
    qtbot.addWidget(view.widget)
    view.widget.resize(1400, 300)
    view.widget.show()
    qtbot.waitUntil(lambda: view.plot.geometry().width() > 1200)
    kinds = ["loss (per step)", "loss (epoch mean)", "val_loss"]
    runs = ["191846", "191636", "191542"]
    for shown in (kinds, runs[:2] + kinds, runs + kinds):
        view.legend.clear()
        for name in shown:
            view.legend.addItem(pg.PlotDataItem(pen="k"), name)
        view.set_legend_columns(len(shown) if len(shown) <= 3 else (len(shown) + 1) // 2)
        qtbot.wait(20)
    for sample, label in view.legend.items:
        hint = label.effectiveSizeHint(Qt.SizeHint.PreferredSize).height()
        assert label.geometry().height() <= hint + 1, label.text
        assert abs(sample.geometry().top() - label.geometry().top()) < hint / 2, label.text
