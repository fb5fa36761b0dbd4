"""The metrics view at real-world scale: many fits, metrics that come and go, outliers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QApplication

from tfstudio.core.events import LearningRate
from tfstudio.ui.main_window import MainWindow
from tfstudio.ui.panels.metrics import MANY_FAMILIES

STEPS = 40  # per fit


def keys_of_fit(f):
    """Metric names that come and go: accuracy in fits 1-2 and from fit 6 on, auc every 3rd."""
    keys = ["loss"]
    if f < 2 or f >= 5:
        keys.append("accuracy")
    if f % 3 == 0:
        keys.append("auc")
    return keys


def many_fits(run, fits=25, spike_at=None):
    """``fits`` fits of different models, each 2 epochs of STEPS/2 steps with val metrics."""
    run.started()
    for f in range(fits):
        run.fit(name=f"model_{f}", epochs=2, steps_per_epoch=STEPS // 2)
        keys = keys_of_fit(f)

        def values(g, keys=keys, f=f):
            v = {k: 0.5 + 0.01 * f + 0.001 * (g % 7) for k in keys}
            if g == spike_at:
                v["loss"] *= 1000
            return v

        for e in range(2):
            run.steps(STEPS // 2, epoch=e, values=values)
            run.epoch_end(e, **{k: 0.5 for k in keys}, val_loss=0.6)
        run.fit_end()
        run.frame()
    return run


def fit_of(x):
    """Fit index of global step x (each fit has STEPS steps, starting at 0)."""
    return (np.asarray(x) - 1) // STEPS


def joined_pairs(item):
    """Pairs of consecutive finite points that the item draws a line between."""
    x, y = item.xData, item.yData
    finite = np.isfinite(y)
    both = finite[:-1] & finite[1:]
    return x[:-1][both], x[1:][both]


def test_no_line_crosses_a_fit_boundary_or_a_gap(window, run):
    many_fits(run)
    plots = window.metrics.plots
    assert set(plots) == {"loss", "accuracy", "auc"}
    window.resize(1200, 1600)  # every plot in sight: one scrolled out is drawn when shown
    QApplication.processEvents()
    run.frame()
    checked = 0
    for plot in plots.values():
        for curve in plot.curves():
            a, b = joined_pairs(curve.item)
            assert (fit_of(a) == fit_of(b)).all(), f"{curve.label} joins two fits"
            if curve.series is not None:
                assert (b - a <= 1).all(), f"{curve.label} bridges a gap"
            checked += len(a)
    assert checked > 2000
    # accuracy: fits 1-2 and 6-25 only; its points are all there, in two runs of fits
    x = plots["accuracy"].steps["accuracy"].item.xData
    y = plots["accuracy"].steps["accuracy"].item.yData
    shown_fits = set(fit_of(x[np.isfinite(y)]).tolist())
    assert shown_fits == {0, 1, *range(5, 25)}
    # epoch means: two per fit, never joined to the next fit's
    mean = plots["loss"].epochs["loss"]
    assert len(mean.x) == 50
    a, b = joined_pairs(mean.item)
    assert len(a) == 25 and (fit_of(a) == fit_of(b)).all()


def test_a_metric_absent_for_some_steps_of_a_fit_is_cut_there(window, run):
    run.started().fit(steps_per_epoch=30)
    run.steps(10, values=lambda g: {"loss": 1.0, "lr": 0.1})
    run.steps(10, values=lambda g: {"loss": 1.0})
    run.steps(10, values=lambda g: {"loss": 1.0, "lr": 0.2}).frame()
    item = window.metrics.plots["lr"].steps["lr"].item
    a, b = joined_pairs(item)
    assert len(a) == 18 and (b - a == 1).all()  # 9 + 9 joins, none across steps 11-20


def test_fit_labels_never_overlap_and_name_the_model_when_there_is_room(window, run):
    many_fits(run)
    plot = window.metrics.plots["loss"]
    markers = plot.markers
    assert len(markers.segments) == 25
    assert markers.segments[3].full == "fit 4: model_3 (Sequential)"
    assert markers.labels[3].toolTip() == "fit 4: model_3 (Sequential)"

    def assert_apart():
        shown = markers.shown_labels()
        rects = [label.sceneBoundingRect() for label in shown]
        for r1, r2 in itertools.combinations(rects, 2):
            assert not r1.intersects(r2), "two fit labels overlap"
        return shown

    window._system_dock.hide()  # the plots' width is what this test is about
    window.inspector.model_dock.hide()
    window.resize(700, 800)
    QApplication.processEvents()
    shown = assert_apart()
    assert 3 <= len(shown) < 25  # crowded: short labels, some hidden
    assert all(label.toPlainText().isdigit() for label in shown)
    window.resize(1600, 800)
    QApplication.processEvents()
    assert len(assert_apart()) > len(shown)
    plot.group.show_range(STEPS * 3, STEPS * 6)  # zoomed in: room for the model's name
    QApplication.processEvents()  # the view's transform settles when it paints
    shown = assert_apart()
    assert "4 model_3" in [label.toPlainText() for label in shown]


def test_a_1000x_spike_leaves_the_range_on_the_bulk_and_is_marked(window, run):
    many_fits(run, fits=3, spike_at=50)
    plot = window.metrics.plots["loss"]
    _, (y0, y1) = plot.vb.viewRange()
    assert y1 < 1.0 and y0 > 0.3  # the bulk: 0.5 .. 0.53
    assert 50 in plot.outlier_xs.tolist()
    marks_x, marks_y = plot.outliers_above.getData()
    assert len(marks_x) == 1 and abs(marks_x[0] - 50) < 1 and y0 < marks_y[0] < y1

    plot.all_button.click()  # show all
    _, (y0, y1) = plot.vb.viewRange()
    assert y1 > 500 and not len(plot.outlier_xs)
    plot.all_button.click()
    plot.log_button.click()  # log scale: range in decades
    assert plot.log and plot.log_button.isChecked()
    _, (y0, y1) = plot.vb.viewRange()
    assert -0.5 < y0 < y1 < 0.1  # log10 of the bulk
    run.fit(name="more").steps(20, values=lambda g: {"loss": 0.5}).frame()
    assert plot.log and plot.vb.viewRange()[1][1] < 0.1  # the choice sticks as the run goes on


def _wheel(widget, pos, delta):
    event = QWheelEvent(
        QPointF(pos),
        QPointF(widget.mapToGlobal(pos)),
        QPoint(),
        QPoint(0, delta),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget.viewport(), event)


def _double_click(widget, pos):
    """Press, release, double-click, release: what a user's double-click sends."""
    viewport = widget.viewport()
    local = QPointF(pos)
    screen = QPointF(viewport.mapToGlobal(pos))
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    for kind, buttons in (
        (QEvent.Type.MouseButtonPress, left),
        (QEvent.Type.MouseButtonRelease, none),
        (QEvent.Type.MouseButtonDblClick, left),
        (QEvent.Type.MouseButtonRelease, none),
    ):
        event = QMouseEvent(kind, local, screen, left, buttons, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(viewport, event)


def _centre_of_view(plot):
    rect = plot.vb.sceneBoundingRect()
    return plot.widget.mapFromScene(rect.center())


def test_zooming_one_plot_moves_every_linked_plot(window, run, qtbot, settings):
    many_fits(run, fits=6)
    loss, accuracy, auc = (window.metrics.plots[f] for f in ("loss", "accuracy", "auc"))
    qtbot.waitExposed(window)
    before = loss.vb.viewRange()[0]
    _wheel(loss.widget, _centre_of_view(loss), 240)  # zoom in on loss
    after = loss.vb.viewRange()[0]
    assert after[1] - after[0] < 0.9 * (before[1] - before[0])
    for other in (accuracy, auc):
        assert np.allclose(other.vb.viewRange()[0], after)
    run.steps(5).frame()
    assert np.allclose(accuracy.vb.viewRange()[0], after)  # not following while zoomed

    _double_click(loss.widget, _centre_of_view(loss))
    for plot in (loss, accuracy, auc):
        x0, x1 = plot.vb.viewRange()[0]
        assert x0 <= 1 and x1 >= run.global_step  # reset: all the data again

    window.metrics.link_box.setChecked(False)
    assert settings.value("metrics/link_x") in (False, "false")  # a setting: it is kept
    reset = accuracy.vb.viewRange()[0]
    _wheel(loss.widget, _centre_of_view(loss), 240)
    assert not np.allclose(loss.vb.viewRange()[0], reset)
    assert np.allclose(accuracy.vb.viewRange()[0], reset)  # unlinked: stays


def test_compare_fits_overlays_each_fit_on_a_per_fit_axis(window, run):
    many_fits(run, fits=5)
    run.ended().frame()
    panel = window.metrics
    panel.x_mode_box.setCurrentIndex(panel.x_mode_box.findData("fit"))
    plot = panel.plots["loss"]
    assert plot.x_mode == "fit"
    assert plot.plot.getAxis("bottom").labelText == "step within fit"
    per_step = [item for (label, _), item in plot.overlays.items() if "per step" in label]
    assert len(per_step) == 5
    for (label, index), item in plot.overlays.items():
        if "per step" in label:
            assert item.xData.tolist() == list(range(1, STEPS + 1))  # every fit from step 1
            assert item.opts["pen"].color().name() == panel.spans()[index].colour
    assert not plot.steps["loss"].item.isVisible()  # the global-step curve is hidden
    assert not any(label.isVisible() for label in plot.markers.labels)
    assert plot.legend_labels() == [f"{i + 1} model_{i}" for i in range(5)]
    x0, x1 = plot.vb.viewRange()[0]
    assert x0 <= 1 and STEPS <= x1 <= STEPS * 1.1
    assert "step 10 of each fit" in plot.readout(10)

    panel.sidebar.fits.selectRow(2)
    panel.sidebar.isolate.setChecked(True)
    shown = [index for (label, index), item in plot.overlays.items() if item.isVisible()]
    assert set(shown) == {2}

    panel.x_mode_box.setCurrentIndex(panel.x_mode_box.findData("global"))
    assert plot.steps["loss"].item.isVisible()
    assert not any(item.isVisible() for item in plot.overlays.values())


def test_fit_list_and_jump_to_a_fit(window, run):
    many_fits(run, fits=4)
    panel = window.metrics
    assert panel.sidebar.isVisible()
    last = 3 * STEPS  # fit 3's last global step, its loss 0.5 + 0.01 * 2 + 0.001 * (last % 7)
    assert panel.sidebar.fit_row(2) == [
        "3",
        "model_2",
        f"{STEPS}",
        f"{0.52 + 0.001 * (last % 7):.4g}",
    ]
    panel.sidebar.fits.cellClicked.emit(2, 1)  # what a click on the row sends
    x0, x1 = panel.plots["loss"].vb.viewRange()[0]
    assert x0 <= 2 * STEPS + 1 and 3 * STEPS <= x1 < 3.2 * STEPS


def twelve_families(g, n=12):
    return {f"m{i:02d}" if i else "loss": 1.0 / g + i for i in range(n)}


def six_families(g):
    return twelve_families(g, 6)


def test_many_families_show_loss_and_first_metric_and_hidden_ones_are_not_redrawn(window, run):
    run.started().fit(steps_per_epoch=100).steps(20, values=twelve_families).frame()
    panel = window.metrics
    assert len(panel.plots) == 12 > MANY_FAMILIES
    assert panel.shown_families() == ["loss", "m01"]
    hidden = panel.plots["m05"]
    assert not hidden.widget.isVisible() and hidden.redraws == 0
    run.steps(20, values=twelve_families).frame()
    assert hidden.redraws == 0 and hidden.steps["m05"].item is None  # not even made
    assert hidden.steps["m05"].series.count == 40  # but every value kept
    shown = panel.plots["loss"]
    assert shown.redraws >= 2

    item = panel.sidebar._family_items["m05"]
    item.setCheckState(Qt.CheckState.Checked)  # the user ticks it
    assert hidden.widget.isVisible() and hidden.redraws == 1
    assert hidden.steps["m05"].item.xData.tolist() == list(range(1, 41))
    panel.sidebar._family_items["loss"].setCheckState(Qt.CheckState.Unchecked)
    assert panel.shown_families() == ["m01", "m05"]


def test_a_loops_gauges_neither_hide_its_metrics_nor_take_the_first_metrics_place(window, run):
    """A loop's gradient norm comes with its first step, its own metrics later: they are
    what a user looks at, so they are shown, and the gauges do not make "many"."""
    run.started().fit(steps_per_epoch=100).emit(LearningRate(0, 0.01, False))
    run.steps(5, values=lambda g: {"loss": 1.0 / g, "gradient norm": 0.5}).frame()
    mine = {"train_loss": 0.5, "train_accuracy": 0.7}
    run.steps(5, values=lambda g: {"loss": 1.0 / g, "gradient norm": 0.5, **mine}).frame()
    panel = window.metrics
    assert set(panel.shown_families()) == {
        "loss",
        "gradient norm",
        "learning_rate",
        "train_loss",
        "train_accuracy",
    }
    # with many metrics at once, the one shown beside the loss is a metric, not a gauge
    run.started("/tmp/other.py").fit(steps_per_epoch=100)
    run.steps(5, values=lambda g: {"gradient norm": 0.5, **twelve_families(g, 6)}).frame()
    shown = window.metrics.shown_families()
    assert "m01" in shown and not {"m02", "m05"} & set(shown)


def test_family_choice_is_remembered_per_script(qtbot, channel, launcher, settings, window, run):
    run.started("/tmp/a.py").fit().steps(5, values=six_families).frame()
    window.metrics.set_family_shown("m04", True)
    window.metrics.set_family_shown("loss", False)
    run.ended().frame()

    second = MainWindow(channel, launcher, settings)  # e.g. the app started again
    qtbot.addWidget(second)
    try:
        run.window = second
        run.global_step, run.fit_index = 0, -1
        run.started("/tmp/a.py").fit().steps(5, values=six_families)
        second.bridge.tick()
        second.bridge.flush()
        assert second.metrics.shown_families() == ["m01", "m04"]
        run.started("/tmp/other.py").fit().steps(5, values=six_families)
        second.bridge.tick()
        second.bridge.flush()
        assert second.metrics.shown_families() == ["loss", "m01"]  # another script: default
    finally:
        second.bridge.stop()


@pytest.mark.parametrize("mode", ["global", "fit"])
def test_hover_names_the_fit_under_the_cursor(window, run, mode):
    many_fits(run, fits=3)
    plot = window.metrics.plots["loss"]
    window.metrics.set_x_mode(mode)
    if mode == "global":
        text = plot.readout(STEPS + 5)
        assert "fit 2: model_1 (Sequential)" in text and "step 45" in text
    else:
        text = plot.readout(5)
        assert text.count("loss (per step)") == 3


def test_stacked_plots_line_up_in_x_whatever_their_tick_labels(window, run, qtbot):
    run.started().fit().steps(30, values=lambda g: {"loss": 0.5 / g, "big": 12345.0 * g}).frame()
    qtbot.waitExposed(window)
    QApplication.processEvents()
    lefts = {
        name: plot.widget.mapToGlobal(
            plot.widget.mapFromScene(plot.vb.sceneBoundingRect().topLeft())
        ).x()
        for name, plot in window.metrics.plots.items()
    }
    assert lefts["loss"] == lefts["big"]
