"""Recorded runs in the metrics view: picked runs and the live one, drawn by the same views."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from tests.core.tfevents import write_events
from tfstudio.core.events import RunStarted
from tfstudio.core.smoothing import ema
from tfstudio.ui.panels.metric_plot import PER_FIT


def recorded(logdir, name, losses, script="/proj/train.py", started=1_700_000_000.0):
    """A run folder of two fits (the second from the middle step), as tfstudio records."""
    half = len(losses) // 2
    path = logdir / name
    write_events(
        path,
        {
            "step/loss": [(g, v) for g, v in enumerate(losses, start=1)],
            "epoch/val_loss": [(half, losses[half - 1] + 0.1), (len(losses), losses[-1] + 0.1)],
        },
    )
    info = {
        "status": "finished",
        "script": script,
        "start_time": started,
        "steps": len(losses),
        "final_loss": losses[-1],
        "segments": [
            {"kind": "fit", "index": 0, "model": "first", "class": "Sequential", "start_step": 0},
            {"kind": "fit", "index": 1, "model": "second", "start_step": half},
        ],
    }
    (path / "run.json").write_text(json.dumps(info))
    return path


def f32(values):
    return [float(np.float32(v)) for v in values]


def item_data(item):
    x, y = item.getData()
    keep = np.isfinite(y)
    return x[keep], y[keep]


def loaded(window, qtbot):
    qtbot.waitUntil(lambda: not window.runs.loading(), timeout=30_000)
    window.runs.poll()
    window.bridge.flush()


A = [2.0 - 0.05 * i for i in range(20)]
B = [3.0 - 0.1 * i for i in range(20)]


def test_picked_runs_show_in_the_metrics_view_with_every_tool(window, qtbot, tmp_path):
    recorded(tmp_path, "a-20260101-000000", A, started=2.0)  # the newer: listed first
    recorded(tmp_path, "b-20260101-000001", B, started=1.0)
    window.runs.set_logdir(tmp_path)
    window.runs.select(["a-20260101-000000", "b-20260101-000001"])
    loaded(window, qtbot)
    metrics = window.metrics
    qtbot.waitUntil(lambda: "loss" in metrics.plots, timeout=10_000)
    plot = metrics.plots["loss"]
    # the first picked run in the list (the newest) is on show, with its fits and markers
    assert metrics.store.name == "a-20260101-000000"
    assert plot.fit_marker_labels() == ["fit 1: first (Sequential)", "fit 2: second ()"]
    x, y = item_data(plot.steps["loss"].item)
    assert x.tolist() == list(range(1, 21)) and y.tolist() == pytest.approx(f32(A))
    # the second beside it, in its own colour, cut at its own fit boundary
    [layer] = plot.layers
    assert layer.name == "b-20260101-000001"
    curve = layer.curves["loss"]
    x, y = curve.item.getData()
    assert np.isnan(y[10]) and x[10] == 10.5  # no line across its fits
    assert curve.item.opts["pen"].color().name() == layer.colour != plot.steps["loss"].colour
    assert "b-20260101-000001" in plot.legend_labels()
    # smoothing applies to it too: its smoothed twin, restarted at its second fit, drawn
    # over its faint raw line as the run on show's is (one plot path for every run)
    metrics.set_smoothing(0.8)
    window.bridge.flush()
    _, y = item_data(layer.curves["loss"].smooth.item)
    b = f32(B)
    assert y.tolist() == pytest.approx(ema(b[:10], 0.8) + ema(b[10:], 0.8))
    # the hover readout names run, fit and value
    text = plot.readout(15)
    assert "b-20260101-000001 fit 2: loss" in text
    # the run on show's lines are named as its legend entry (not listed as another run)
    assert "a-20260101-000000 · loss (per step)" in text and "a-20260101-000000:" not in text
    # step within fit: each of its fits from 0
    metrics.set_x_mode(PER_FIT)
    window.bridge.flush()
    second = layer.overlays[("loss", 1)]
    x, _ = item_data(second)
    assert x[0] == pytest.approx(1.0) and x[-1] == pytest.approx(10.0)
    assert "fit 2: loss" in plot.readout(3)
    window.grab().save(str(tmp_path / "picked.png"))


def test_the_live_run_shows_with_its_previous_run_faint_behind_it(window, run, qtbot, tmp_path):
    recorded(tmp_path, "train-20260101-000000", B, script="/tmp/train.py", started=1.0)
    recorded(tmp_path, "other-20260101-000000", A, script="/tmp/other.py", started=2.0)
    window.runs.set_logdir(tmp_path)
    run.emit(RunStarted("/tmp/train.py", ("train.py",), "/tmp", time.time()))
    run.fit(epochs=1, steps_per_epoch=20).steps(20).frame()
    loaded(window, qtbot)
    metrics = window.metrics
    assert metrics.previous_box.isVisible() and metrics.previous_box.isChecked()
    plot = metrics.plots["loss"]
    [layer] = plot.layers
    assert layer.faint and layer.name == "previous run"
    qtbot.waitUntil(lambda: "loss" in layer.curves, timeout=10_000)
    _, y = item_data(layer.curves["loss"].smooth.item)  # over its raw line, as the live one's
    assert y.tolist() == pytest.approx(ema(f32(B[:10]), 0.6) + ema(f32(B[10:]), 0.6))
    # the live run stays the run on show, with its own fit
    assert metrics.store.fits[0].model.name == "mlp"
    assert plot.steps["loss"].count() == 20
    # one click hides it; a picked run joins, in its own colour
    metrics.previous_box.setChecked(False)
    assert plot.layers == []
    window.runs.select(["other-20260101-000000"])
    loaded(window, qtbot)
    [picked] = plot.layers
    assert picked.name == "other-20260101-000000" and not picked.faint
    metrics.previous_box.setChecked(True)
    assert [lay.name for lay in plot.layers] == [
        "previous run",
        "other-20260101-000000",
    ]


def test_a_constant_learning_rate_of_a_recorded_run_is_drawn_on_its_own_scale(
    window, qtbot, tmp_path
):
    path = recorded(tmp_path, "lr-20260101-000000", A, started=1.0)
    write_events(path, {"learning_rate": [(g, 0.001) for g in (5, 10, 15, 20)]})
    window.runs.set_logdir(tmp_path)
    window.runs.select(["lr-20260101-000000"])
    loaded(window, qtbot)
    qtbot.waitUntil(lambda: "learning_rate" in window.metrics.plots, timeout=10_000)
    plot = window.metrics.plots["learning_rate"]
    window.metrics.set_family_shown("learning_rate", True)
    window.bridge.flush()
    _, (y0, y1) = plot.vb.viewRange()
    assert y0 < 0.001 < y1 and y1 - y0 < 0.001  # around the value, not -0.4..0.4


def test_the_segment_training_now_is_always_in_view(window, run, settings):
    """A run with many families shows few by default; a later segment's primary families
    (a GAN loop's two losses) are shown when it starts; a family the user hid stays hidden."""
    many = {f"m{i}": 0.5 for i in range(6)}
    run.started().fit(epochs=1, steps_per_epoch=10)
    run.steps(10, values=lambda g: {"loss": 1.0 / g, **many}).frame()
    metrics = window.metrics
    assert metrics.shown_families() == ["loss", "m0"]  # the default for many families
    run.fit(epochs=1, steps_per_epoch=10, name="gan")
    values = {"loss (discriminator)": 0.7, "loss (generator)": 1.2, "m4": 0.2}
    run.steps(10, values=values).frame()
    shown = metrics.shown_families()
    assert "loss (discriminator)" in shown and "loss (generator)" in shown  # it trains now
    assert "m4" not in shown  # not one of its primary families: the default holds
    metrics.set_family_shown("m3", True)
    metrics.set_family_shown("m3", False)  # the user's choice: hidden
    run.fit(epochs=1, steps_per_epoch=10, name="probe")
    run.steps(10, values={"m3": 0.1, "m2": 0.3}).frame()
    shown = metrics.shown_families()
    assert "m2" in shown  # hidden by default before; its segment trains now
    assert "m3" not in shown  # hidden by the user: stays hidden


def test_a_previous_runs_line_is_not_painted_again_when_only_the_live_line_moves(
    window, run, qtbot, tmp_path, monkeypatch
):
    """Lines that change seldom (an earlier run's, epoch means) paint from a cached pixmap."""
    import pyqtgraph as pg

    previous = [1.0 - 0.009 * i for i in range(100)]  # within the live run's y range
    recorded(tmp_path, "train-20260101-000000", previous, script="/tmp/train.py", started=1.0)
    window.runs.set_logdir(tmp_path)
    run.emit(RunStarted("/tmp/train.py", ("train.py",), "/tmp", time.time()))
    run.fit(epochs=1, steps_per_epoch=100).steps(20).frame()
    loaded(window, qtbot)
    plot = window.metrics.plots["loss"]
    [layer] = plot.layers
    qtbot.waitUntil(lambda: "loss" in layer.curves, timeout=10_000)
    painted: list[object] = []
    paint = pg.PlotCurveItem.paint

    def counted(self, *args):
        painted.append(self)
        return paint(self, *args)

    monkeypatch.setattr(pg.PlotCurveItem, "paint", counted)
    window.bridge.flush()
    plot.widget.viewport().repaint()
    earlier = layer.curves["loss"].item.curve
    live = plot.steps["loss"].item.curve
    assert earlier.isVisible() and live in painted
    painted.clear()
    run.steps(3, start=20, values=lambda g: {"loss": 0.5}).frame()  # x and y stay put
    plot.widget.viewport().repaint()
    assert live in painted and earlier not in painted
