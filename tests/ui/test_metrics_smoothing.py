"""Smoothing in the live metrics view: one slider, the EMA on top, the raw curve faint."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtCore import QSettings

from tfstudio.core.smoothing import ema
from tfstudio.ui.main_window import MainWindow
from tfstudio.ui.panels.metric_plot import STEP_ALPHA
from tfstudio.ui.plotting.smoothing import RAW_ALPHA


def noisy(g):
    """A falling loss with deterministic noise, and an accuracy."""
    return {"loss": 2.0 / (1 + 0.05 * g) + 0.3 * math.sin(g * 1.7), "accuracy": g / (g + 10)}


def data(item):
    x, y = item.getData()
    return np.asarray(x), np.asarray(y)


def pen_alpha(item):
    return item.opts["pen"].color().alpha()


def test_smoothed_curve_is_the_debiased_ema_drawn_over_a_faint_raw_curve(window, run):
    window.metrics.set_smoothing(0.8)
    run.started().fit(epochs=2, steps_per_epoch=30)
    for _ in range(6):  # arrives over several frames: smoothed as it comes
        run.steps(10, values=noisy).frame()
    plot = window.metrics.plots["loss"]
    curve = plot.steps["loss"]
    raw_x, raw_y = data(curve.item)
    assert raw_x.tolist() == list(range(1, 61))
    np.testing.assert_allclose(raw_y, [noisy(g)["loss"] for g in range(1, 61)])
    smooth_item = curve.smooth.item
    x, y = data(smooth_item)
    assert x.tolist() == raw_x.tolist()
    np.testing.assert_allclose(y, ema(raw_y.tolist(), 0.8), rtol=1e-12)
    assert smooth_item.isVisible() and curve.item.isVisible()
    assert pen_alpha(curve.item) == RAW_ALPHA < pen_alpha(smooth_item) == 255
    assert smooth_item.opts["pen"].color().name() == curve.item.opts["pen"].color().name()
    assert smooth_item.zValue() > curve.item.zValue()
    assert plot.legend.items[0][0].item is smooth_item  # the legend shows the solid line
    # one slider for every per-step plot
    acc = window.metrics.plots["accuracy"].steps["accuracy"]
    np.testing.assert_allclose(data(acc.smooth.item)[1], ema(data(acc.item)[1], 0.8))


def test_epoch_and_val_curves_are_not_smoothed(window, run):
    window.metrics.set_smoothing(0.9)
    run.started().fit(epochs=2, steps_per_epoch=10)
    run.steps(10, values=noisy).epoch_end(0, loss=1.0, val_loss=1.2)
    run.steps(10, epoch=1, values=noisy).epoch_end(1, loss=0.5, val_loss=0.9).frame()
    plot = window.metrics.plots["loss"]
    assert plot.epochs["loss"].smooth is None and plot.epochs["val_loss"].smooth is None
    assert data(plot.epochs["val_loss"].item)[1].tolist() == [1.2, 0.9]


def test_slider_moves_resmooth_and_zero_shows_raw_only(window, run, settings):
    run.started().fit(epochs=1, steps_per_epoch=80).steps(80, values=noisy).frame()
    panel = window.metrics
    curve = panel.plots["loss"].steps["loss"]
    raw = data(curve.item)[1].tolist()
    panel.smoothing_slider.set_weight(0.95)  # what dragging the slider does
    assert panel.smoothing == pytest.approx(0.95)
    np.testing.assert_allclose(data(curve.smooth.item)[1], ema(raw, 0.95), rtol=1e-12)
    assert settings.value("metrics/smoothing") == pytest.approx(0.95)

    panel.smoothing_slider.set_weight(0.0)
    assert not curve.smooth.item.isVisible()
    assert pen_alpha(curve.item) == STEP_ALPHA  # the raw curve as it was without smoothing
    assert data(curve.item)[1].tolist() == raw
    assert panel.plots["loss"].legend.items[0][0].item is curve.item
    run.steps(5, values=noisy).frame()  # new points at weight 0: nothing smoothed
    assert not curve.smooth.series.count

    panel.smoothing_slider.set_weight(0.5)  # back on: the whole curve, from the store
    raw = data(curve.item)[1].tolist()
    assert len(raw) == 85
    np.testing.assert_allclose(data(curve.smooth.item)[1], ema(raw, 0.5), rtol=1e-12)


def test_the_ema_restarts_at_each_fit(window, run):
    window.metrics.set_smoothing(0.9)
    run.started()
    run.fit(name="a", epochs=1, steps_per_epoch=20).steps(20, values={"loss": 5.0}).fit_end()
    run.fit(name="b", epochs=1, steps_per_epoch=20).steps(20, values={"loss": 1.0}).frame()
    curve = window.metrics.plots["loss"].steps["loss"]
    x, y = data(curve.smooth.item)
    finite = np.isfinite(y)
    assert np.isnan(y).sum() == 1  # the break between the fits
    # the second fit's smoothed curve starts at its own first value, not dragged from 5.0
    second = y[finite][x[finite] > 20]
    np.testing.assert_allclose(second, 1.0)
    np.testing.assert_allclose(y[finite][x[finite] <= 20], 5.0)


def test_per_fit_axis_overlays_the_smoothed_curves(window, run):
    window.metrics.set_smoothing(0.7)
    run.started()
    for name in ("a", "b"):
        run.fit(name=name, epochs=1, steps_per_epoch=30).steps(30, values=noisy).fit_end()
    run.frame()
    panel = window.metrics
    panel.set_x_mode("fit")
    plot = panel.plots["loss"]
    overlay = plot.overlays[("loss (per step)", 1)]
    _, y = data(overlay)
    raw = [noisy(g)["loss"] for g in range(31, 61)]
    np.testing.assert_allclose(y, ema(raw, 0.7), rtol=1e-12)


def test_long_runs_stay_bounded_and_resmooth_from_bucket_means(window, run):
    panel = window.metrics
    panel.set_smoothing(0.0)
    n = 3 * panel.capacity  # the store decimates: raw points are merged into buckets
    run.started().fit(epochs=1, steps_per_epoch=n)
    rng = np.random.default_rng(0)
    values = 1.0 + 0.1 * rng.standard_normal(n + 1)
    run.steps(n, values=lambda g: {"loss": float(values[g])}).frame()
    panel.set_smoothing(0.99)
    curve = panel.plots["loss"].steps["loss"]
    x, y = data(curve.smooth.item)
    assert len(x) <= 2 * panel.capacity + 4
    exact = np.asarray(ema(values[1:].tolist(), 0.99))
    # from bucket means: close to the EMA of every raw point (noise 0.1, EMA noise ~0.007)
    at = np.searchsorted(np.arange(1, n + 1), x[len(x) // 2 :])
    assert np.max(np.abs(y[len(y) // 2 :] - exact[at])) < 0.02


def test_smoothing_is_remembered_by_the_next_window(qtbot, channel, launcher, settings):
    first = MainWindow(channel, launcher, settings)
    qtbot.addWidget(first)
    first.metrics.smoothing_slider.set_weight(0.33)
    first.bridge.stop()
    again = MainWindow(
        channel, launcher, QSettings(settings.fileName(), QSettings.Format.IniFormat)
    )
    qtbot.addWidget(again)
    assert again.metrics.smoothing == pytest.approx(0.33)
    assert again.metrics.smoothing_slider.weight() == pytest.approx(0.33)
    again.bridge.stop()


def test_a_hidden_plot_smooths_nothing_until_shown_then_catches_up(window, run):
    window.metrics.set_smoothing(0.7)
    run.started().fit(epochs=1, steps_per_epoch=100).steps(40, values=noisy).frame()
    panel = window.metrics
    panel.set_family_shown("accuracy", False)
    run.steps(30, values=noisy).frame()
    acc = panel.plots["accuracy"].steps["accuracy"]
    assert acc.smooth.source.suspended and not acc.smooth.series.count  # no work while hidden
    panel.set_smoothing(0.9)  # moved while hidden: applied when shown
    run.steps(30, values=noisy).frame()
    panel.set_family_shown("accuracy", True)
    raw = [noisy(g)["accuracy"] for g in range(1, 101)]
    np.testing.assert_allclose(data(acc.smooth.item)[1], ema(raw, 0.9), rtol=1e-12)
    run.steps(5, values=noisy).frame()  # and goes on point by point
    raw += [noisy(g)["accuracy"] for g in range(101, 106)]
    np.testing.assert_allclose(data(acc.smooth.item)[1], ema(raw, 0.9), rtol=1e-12)
