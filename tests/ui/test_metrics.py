"""Metrics panel: one plot per family, per-step / running / epoch / val curves."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF

from tfstudio.core.events import EpochEnded, LearningRate, StepEnded
from tfstudio.ui.panels.metric_plot import PER_FIT
from tfstudio.ui.panels.metrics import MetricsPanel, family_of
from tfstudio.ui.plotting.curve import MAX_SYMBOLS


def curve_data(curve):
    x, y = curve.item.getData()
    return np.asarray(x), np.asarray(y)


def test_family_of():
    assert family_of("loss") == "loss"
    assert family_of("val_loss") == "loss"
    assert family_of("val_") == "val_"
    assert family_of("d_loss") == "d_loss"


def test_one_plot_per_family_holding_every_per_step_point(window, run):
    run.started().fit(epochs=1, steps_per_epoch=50).steps(50).frame()
    plots = window.metrics.plots
    assert list(plots) == ["loss", "accuracy"]
    loss = plots["loss"].steps["loss"]
    x, y = curve_data(loss)
    assert x.tolist() == list(range(1, 51))
    np.testing.assert_allclose(y, [1.0 / g for g in range(1, 51)])
    assert loss.label == "loss (per step)"
    assert "loss (per step)" in plots["loss"].legend_labels()


def test_steps_arriving_over_several_frames_extend_the_curve(window, run):
    run.started().fit()
    for _ in range(3):
        run.steps(7).frame()
    x, _ = curve_data(window.metrics.plots["loss"].steps["loss"])
    assert x.tolist() == list(range(1, 22))


def test_epoch_means_and_val_share_the_family_plot(window, run):
    run.started().fit(epochs=2, steps_per_epoch=10)
    run.steps(10, epoch=0).epoch_end(0, loss=0.5, accuracy=0.7, val_loss=0.6, val_accuracy=0.65)
    run.steps(10, epoch=1).epoch_end(1, loss=0.4, accuracy=0.8, val_loss=0.45, val_accuracy=0.7)
    run.frame()
    plot = window.metrics.plots["loss"]
    assert set(window.metrics.plots) == {"loss", "accuracy"}
    mean = plot.epochs["loss"]
    val = plot.epochs["val_loss"]
    assert mean.label == "loss (epoch mean)" and val.label == "val_loss"
    assert curve_data(mean)[0].tolist() == [10, 20]  # at each epoch's last global step
    assert curve_data(mean)[1].tolist() == [0.5, 0.4]
    assert curve_data(val)[1].tolist() == [0.6, 0.45]
    assert plot.legend_labels() == ["loss (per step)", "loss (epoch mean)", "val_loss"]
    assert plot.epoch_lines.positions().tolist() == [10, 20]


def test_gan_keys_make_two_plots_and_no_loss_plot(window, run):
    run.started().fit()
    run.steps(5, values=lambda g: {"d_loss": 0.7, "g_loss": 1.3}).frame()
    assert list(window.metrics.plots) == ["d_loss", "g_loss"]
    assert curve_data(window.metrics.plots["g_loss"].steps["g_loss"])[1].tolist() == [1.3] * 5


def test_running_only_metric_draws_its_running_mean(window, run):
    run.started().fit()
    run.steps(
        4,
        values=lambda g: {"loss": 1.0},
        running=lambda g: {"loss": 1.0, "auc": 0.5 + g / 100},
    ).frame()
    plot = window.metrics.plots["auc"]
    assert not plot.steps
    curve = plot.running["auc"]
    assert curve.label == "auc (running)"  # what it holds since its reset: not a mean (an AUC)
    np.testing.assert_allclose(curve_data(curve)[1], [0.51, 0.52, 0.53, 0.54])
    assert "loss" not in window.metrics.plots["loss"].running  # has its own per-step values


def test_a_learning_rate_holds_each_value_until_the_next_and_the_last_to_the_newest_step(
    window, run
):
    run.started().fit().emit(LearningRate(0, 0.01, False)).steps(3).frame()
    plot = window.metrics.plots["learning_rate"]
    curve = plot.steps["learning_rate"]
    x, y = curve_data(curve)
    assert curve.item.isVisible()
    assert x.tolist() == [0, 3] and y.tolist() == [0.01, 0.01]  # a line from one point
    # the title names the plot: no axis label beside ticks like 0.00105 (it overlapped them)
    assert plot.title() == "learning_rate" and plot.plot.getAxis("left").labelText == ""
    run.steps(4).frame()
    assert curve_data(curve)[0].tolist() == [0, 7]  # held as the run goes on
    run.emit(LearningRate(7, 0.001, False)).steps(3).frame()  # a step decay
    x, y = curve_data(curve)
    assert x.tolist() == [0, 7, 7, 10] and y.tolist() == [0.01, 0.01, 0.001, 0.001]
    # hovering reads the value in effect, not the nearest point's (step 6: the first rate)
    assert curve.nearest(6.0)[1] == 0.01 and curve.nearest(9.5)[1] == 0.001
    assert "0.01" in plot.readout(6.0) and curve.nearest(11.0) is None  # past the newest step


def test_a_learning_rate_keras_logs_at_epoch_ends_is_not_drawn_twice(window, run):
    run.started().fit(epochs=2, steps_per_epoch=5).emit(LearningRate(0, 0.05, False))
    run.steps(5).emit(EpochEnded(0, 0, 5, {"loss": 0.5, "learning_rate": 0.05}, 0.0))
    run.emit(LearningRate(6, 0.025, False)).steps(5)
    run.emit(EpochEnded(0, 1, 10, {"loss": 0.4, "learning_rate": 0.025}, 0.0)).frame()
    plot = window.metrics.plots["learning_rate"]
    # the held line has each value; epoch ends joined by a line drew a ramp across it
    assert plot.legend_labels() == ["learning_rate (optimizer)"] and not plot.epochs
    assert "loss" in window.metrics.plots["loss"].epochs  # other epoch means stay


def test_a_held_learning_rate_per_fit_holds_within_each_fit(window, run):
    run.started().fit().emit(LearningRate(0, 0.01, False)).steps(5)
    run.fit().emit(LearningRate(5, 0.002, False)).steps(4).emit(LearningRate(7, 0.001, False))
    run.steps(2).frame()
    plot = window.metrics.plots["learning_rate"]
    x, y = curve_data(plot.steps["learning_rate"])  # the global step: cut between the fits
    assert x.tolist() == [0, 5.5, 5.5, 5.5, 7, 7, 11] and np.isnan(y[2])
    assert np.delete(y, 2).tolist() == [0.01, 0.01, 0.002, 0.002, 0.001, 0.001]
    window.metrics.set_x_mode(PER_FIT)
    run.frame()
    label = plot.steps["learning_rate"].label
    x, y = (np.asarray(v) for v in plot.overlays[(label, 0)].getData())
    assert x.tolist() == [0, 5] and y.tolist() == [0.01, 0.01]  # fit 1: steps 1-5
    x, y = (np.asarray(v) for v in plot.overlays[(label, 1)].getData())
    # fit 2 starts with its own rate (sent at global step 5, before its first step: drawn
    # from its segment's start, half a step on), then a new one
    assert x.tolist() == [0.5, 2, 2, 6] and y.tolist() == [0.002, 0.002, 0.001, 0.001]


def test_a_key_with_parentheses_takes_its_kind_inside_them(window, run):
    run.started().fit(name="gan")
    run.steps(3, values=lambda g: {"loss (generator)": 1.0 / g}).frame()
    plot = window.metrics.plots["loss (generator)"]
    assert plot.legend_labels() == ["loss (generator, per step)"]


def test_per_step_values_replace_a_running_curve(window, run):
    run.started().fit()
    run.steps(2, values=lambda g: {}, running=lambda g: {"loss": 2.0}).frame()
    assert "loss" in window.metrics.plots["loss"].running
    run.steps(2, values=lambda g: {"loss": 1.0}, running=lambda g: {"loss": 1.5}).frame()
    plot = window.metrics.plots["loss"]
    assert "loss" not in plot.running
    assert plot.legend_labels() == ["loss (per step)"]


def test_steps_per_execution_note_in_title(window, run):
    run.started().fit(spe=8, steps_per_epoch=80).steps(3).frame()
    title = window.metrics.plots["loss"].title()
    assert "every 8 steps: steps_per_execution=8" in title
    x, _ = curve_data(window.metrics.plots["loss"].steps["loss"])
    assert x.tolist() == [8, 16, 24]


def test_no_note_when_every_step_is_reported(window, run):
    run.started().fit(spe=1).steps(3).frame()
    assert window.metrics.plots["loss"].title() == "loss"


def test_new_run_clears_all_plots(window, run):
    run.started().fit().steps(5, values=lambda g: {"d_loss": 1.0}).frame()
    assert list(window.metrics.plots) == ["d_loss"]
    run.global_step = 0
    run.fit_index = -1
    run.started().fit().steps(3).frame()
    assert list(window.metrics.plots) == ["loss", "accuracy"]
    x, _ = curve_data(window.metrics.plots["loss"].steps["loss"])
    assert x.tolist() == [1, 2, 3]


def test_second_fit_is_marked_with_its_model_name(window, run):
    run.started().fit(name="encoder").steps(5).fit_end()
    run.fit(name="classifier").steps(5).frame()
    labels = window.metrics.plots["loss"].fit_marker_labels()
    assert labels == ["fit 1: encoder (Sequential)", "fit 2: classifier (Sequential)"]
    assert window.metrics.plots["loss"].markers.segments[1].start == 5


def test_hover_readout_shows_step_and_values(window, run):
    run.started().fit(steps_per_epoch=10).steps(10).epoch_end(0, loss=0.3, val_loss=0.4).frame()
    text = window.metrics.plots["loss"].readout(4.2)
    assert "step 4" in text
    assert "loss (per step): <b>0.25</b>" in text  # 1/4 at step 4
    assert "val_loss: <b>0.4</b>" in text and "(step 10)" in text


def test_long_run_is_decimated_with_bounded_memory(qtbot):
    panel = MetricsPanel(capacity=1000)
    qtbot.addWidget(panel)
    n = 20_000
    steps = [
        StepEnded(0, g, 0, g, 1, {"loss": float(g % 97)}, {"loss": 1.0}, g * 1e-3)
        for g in range(1, n + 1)
    ]
    panel.ingest_steps(steps)
    panel.refresh()
    curve = panel.plots["loss"].steps["loss"]
    assert curve.series.count == n
    x, y = curve_data(curve)
    assert len(x) <= 2 * 1000 + 16
    assert y.max() == 96 and y.min() == 0  # the min/max envelope keeps every extreme
    smoothed = curve.smoothed()  # smoothing is on by default: its store counts too
    assert smoothed is not None and smoothed.series.count
    assert panel.series_nbytes() == curve.series.nbytes() + smoothed.series.nbytes()


def test_epoch_lines_are_thinned_for_thousands_of_epochs(qtbot):
    panel = MetricsPanel()
    qtbot.addWidget(panel)
    panel.resize(800, 400)
    panel.show()
    events = [EpochEnded(0, e, (e + 1) * 10, {"loss": 1.0}, 0.0) for e in range(5000)]
    for event in events:
        panel.ingest_event(event)
    panel.ingest_steps([StepEnded(0, 50_000, 4999, 10, 1, {"loss": 1.0}, {"loss": 1.0}, 1.0)])
    panel.refresh()
    lines = panel.plots["loss"].epoch_lines
    assert len(lines.positions()) == 5000
    drawn = lines.visible_positions()
    assert 0 < len(drawn) <= 800 / 6 + 1
    assert set(drawn.tolist()) <= set(lines.positions().tolist())


def test_val_markers_go_past_max_symbols_epochs(window, run):
    run.started().fit(steps_per_epoch=2)
    for e in range(MAX_SYMBOLS + 1):
        run.steps(2).emit(EpochEnded(0, e, 2 * (e + 1), {"val_loss": 1.0 / (e + 1)}, 0.0))
        if e == 3:
            run.frame()
            curve = window.metrics.plots["loss"].epochs["val_loss"]
            assert curve.item.opts["symbol"] == "s"  # a few epochs: each one marked
    run.frame()
    assert curve.item.opts["symbol"] is None  # hundreds: a line


def test_x_range_follows_the_newest_step(window, run):
    run.started().fit(steps_per_epoch=1000)
    run.steps(100).frame()
    (x0, x1), _ = window.metrics.plots["loss"].plot.getViewBox().viewRange()
    assert x0 <= 1 and x1 >= 100
    run.steps(900).frame()
    (x0, x1), _ = window.metrics.plots["loss"].plot.getViewBox().viewRange()
    assert x1 >= 1000
    assert x1 > 1100  # head-room while the run goes on


def test_x_range_grows_no_further_than_where_the_running_fit_will_end(window, run):
    """4 epochs of 100 steps: at step 300 the range ends at 400, where the fit will (it
    grew to 1000 before: 300 x 1.5 to a round number, 60% of the plot empty)."""

    def right():
        return window.metrics.plots["loss"].plot.getViewBox().viewRange()[0][1]

    run.started().fit(epochs=4, steps_per_epoch=100).steps(300).frame()
    assert 400 <= right() < 410
    window.metrics.xgroup.set_planned(0.0)  # as if a longer compared run had widened it
    assert right() >= 450
    window.metrics.xgroup.set_planned(400.0)  # fitted to the fit's end anew
    assert 400 <= right() < 410
    run.steps(100).fit_end().fit(epochs=2, steps_per_epoch=100).steps(150).frame()
    assert 600 <= right() < 610  # the second fit ends at 600
    # a long fit still grows by half at a time, not to its end at once
    run.fit(epochs=100, steps_per_epoch=1000).steps(200).frame()
    assert 1000 <= right() <= 1100


def test_a_finished_run_fills_the_width(window, run):
    run.started().fit(steps_per_epoch=1000).steps(1000).frame()
    run.ended().frame()
    (x0, x1), _ = window.metrics.plots["loss"].plot.getViewBox().viewRange()
    assert 1000 <= x1 <= 1060  # no empty half-plot after the last step


def test_mouse_move_over_a_plot_shows_crosshair_and_values(window, run, qtbot):
    run.started().fit(steps_per_epoch=100).steps(100).frame()
    plot = window.metrics.plots["loss"]
    qtbot.waitExposed(window)
    vb = plot.plot.getViewBox()
    scene_pos = vb.mapViewToScene(QPointF(50, 0.5))
    plot.widget.scene().sigMouseMoved.emit(scene_pos)
    assert plot._crosshair.isVisible()
    assert abs(plot._crosshair.value() - 50) < 1
    assert plot._readout.isVisible()
    assert "loss (per step)" in plot._readout.toPlainText()
    plot.widget.scene().sigMouseMoved.emit(QPointF(-100, -100))  # left the plot
    assert not plot._readout.isVisible()


def test_note_names_the_fit_when_only_one_fit_batches_steps(window, run):
    run.started().fit(spe=1).steps(3).fit_end()
    run.fit(spe=4).steps(2).frame()
    title = window.metrics.plots["loss"].title()
    assert "fit 2: every 4 steps" in title and "fit 1" not in title


def test_the_loss_plot_comes_first_whatever_order_metrics_arrive_in(window, run):
    run.started().fit()
    run.steps(3, values=lambda g: {"accuracy": 0.5, "loss": 1.0 / g}).frame()
    layout = window.metrics._layout
    order = [layout.itemAt(i).widget() for i in range(layout.count())]
    shown = [w for w in order if w is not None and w.isVisibleTo(window.metrics)]
    assert shown[0] is window.metrics.plots["loss"].widget


def test_metrics_come_before_the_learning_rate_and_the_gradient_norm(window, run):
    """The rate arrives at a fit's start, before any metric: it still goes below them."""
    run.started().fit().emit(LearningRate(0, 0.01, False))
    values = lambda g: {"loss": 1.0 / g, "gradient norm": 0.5, "accuracy": 1 - 1.0 / g}  # noqa: E731
    run.steps(5, values=values).frame()
    run.steps(5, values=lambda g: {"loss": 1.0 / g, "f1": 0.5}).frame()
    metrics = window.metrics
    order = sorted(metrics.plots, key=lambda f: metrics._layout.indexOf(metrics.plots[f].widget))
    assert order == ["loss", "accuracy", "f1", "learning_rate", "gradient norm"]
