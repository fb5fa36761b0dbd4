"""Smoothing applies to every run drawn, whatever was picked, dropped or finished before.

Issue 52: at 0.99 a just-finished run was once left raw while older picked runs were
smoothed. The cause found: a run's lines are kept per plot, but taking a run out of the
view (the "previous run" box unticked, a run unpicked) cleared them for every plot from
the first plot's side, so the other plots kept that run's lines as they were drawn, never
updated again (raw, or smoothed with an older weight), under the run drawn anew.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from tests.ui.test_metrics_smoothing import noisy
from tests.ui.test_readout import recorded
from tfstudio.core.events import RunStarted
from tfstudio.core.smoothing import ema


def finite(item):
    x, y = item.getData()
    if x is None:  # nothing drawn
        return np.empty(0), np.empty(0)
    keep = np.isfinite(y)
    return x[keep], y[keep]


def layer_lines(plot):
    """Every line item of another run in ``plot``'s view (whoever made it)."""
    own = {id(c.item) for c in plot.curves() if c.item is not None}
    own |= {id(c.smooth.item) for c in plot.curves() if c.smooth is not None and c.smooth.item}
    return [
        item
        for item in plot.vb.addedItems
        if type(item).__name__ == "PlotDataItem" and id(item) not in own and item.isVisible()
    ]


@pytest.fixture
def finished_run(window, run, qtbot, tmp_path):
    """A run just finished, its previous run behind it and two older runs picked."""
    recorded(tmp_path, "train-20260101-000000", 3.0, "/tmp/train.py", time.time() - 60)
    recorded(tmp_path, "alpha-20260101-000001", 4.0, "/tmp/alpha.py", 2.0)
    recorded(tmp_path, "beta-20260101-000002", 5.0, "/tmp/beta.py", 3.0)
    window.runs.set_logdir(tmp_path)
    run.emit(RunStarted("/tmp/train.py", ("train.py",), "/tmp", time.time()))
    run.fit(epochs=1, steps_per_epoch=40).steps(40, values=noisy).frame()
    window.runs.select(["alpha-20260101-000001", "beta-20260101-000002"])
    qtbot.waitUntil(lambda: not window.runs.loading(), timeout=30_000)
    window.runs.poll()
    run.ended().frame()
    window.bridge.flush()
    return window.metrics


def test_every_run_is_smoothed_after_runs_were_dropped_and_drawn_again(finished_run, qtbot):
    metrics = finished_run
    # the previous run taken out and put back, a picked run unpicked and picked again
    metrics.previous_box.setChecked(False)
    metrics.previous_box.setChecked(True)
    runs = metrics.window().runs
    runs.select(["alpha-20260101-000001"])
    runs.select(["alpha-20260101-000001", "beta-20260101-000002"])
    qtbot.waitUntil(lambda: not runs.loading(), timeout=30_000)
    runs.poll()
    metrics.smoothing_slider.set_weight(0.99)
    for _ in range(2):
        metrics.window().bridge.flush()
        QApplication.processEvents()
    for family in ("loss", "accuracy"):
        plot = metrics.plots[family]
        # the finished run on show: its smoothed line drawn, the EMA of its points
        curve = plot.steps[family]
        _, raw = finite(curve.item)
        assert curve.smooth.item.isVisible()
        np.testing.assert_allclose(finite(curve.smooth.item)[1], ema(raw.tolist(), 0.99))
        # each other run: one line per key, and its per-step key's smoothed line over the
        # faint raw one, as the run on show's (no stale line left behind)
        lines = layer_lines(plot)
        keys = ["loss", "val_loss"] if family == "loss" else ["accuracy"]
        assert len(lines) == 3 * (len(keys) + 1), family
        for layer in plot.layers:
            track = layer.store.steps[family]
            _, y = finite(layer.curves[family].smooth.item)
            _, raw = track.points()
            np.testing.assert_allclose(y, ema(raw.tolist(), 0.99), rtol=1e-6)
            assert y.tolist() != pytest.approx(raw.tolist())


def test_a_run_shown_with_a_plot_hidden_is_smoothed_when_drawn_behind_a_live_run(
    window, run, qtbot, tmp_path
):
    recorded(tmp_path, "alpha-20260101-000001", 4.0, "/tmp/alpha.py", 2.0)
    window.runs.set_logdir(tmp_path)
    window.runs.select(["alpha-20260101-000001"])  # no live run: alpha is the run on show
    qtbot.waitUntil(lambda: not window.runs.loading(), timeout=30_000)
    window.runs.poll()
    window.bridge.flush()
    metrics = window.metrics
    metrics.set_family_shown("accuracy", False)  # its smoothing stops while hidden
    alpha = metrics.store
    assert alpha.steps["accuracy"].smooth.suspended
    metrics.smoothing_slider.set_weight(0.99)
    # a run starts: alpha is drawn behind it, accuracy shown again
    run.emit(RunStarted("/tmp/train.py", ("train.py",), "/tmp", time.time()))
    run.fit(epochs=1, steps_per_epoch=20).steps(20, values=noisy).frame()
    metrics.set_family_shown("accuracy", True)
    window.bridge.flush()
    plot = metrics.plots["accuracy"]
    [layer] = plot.layers
    assert layer.store is alpha
    _, y = finite(layer.curves["accuracy"].smooth.item)  # over its raw line
    _, raw = alpha.steps["accuracy"].points()
    assert len(y) == len(raw) == 20
    np.testing.assert_allclose(y, ema(raw.tolist(), 0.99), rtol=1e-6)
