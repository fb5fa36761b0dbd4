"""What the window paints during a run: only what is in sight, only what changed, and
less often when the machine has no core to spare (issue 21: the window's cost to training)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

import tfstudio.ui.bridge as bridge_module
from tfstudio.core.system import SystemSample
from tfstudio.ui.bridge import FULL_REDRAW_HZ, LOW_REDRAW_HZ, choose_redraw_hz
from tfstudio.ui.panels.visibility import out_of_sight
from tfstudio.ui.plotting.ranges import settled_range


def _newest_drawn(curve) -> float:
    return float(np.nanmax(curve.x)) if len(curve.x) else 0.0


# -- hidden panels ------------------------------------------------------------------------
def test_metrics_behind_another_tab_do_not_redraw_and_catch_up_when_shown(window, run):
    run.started().fit(epochs=1, steps_per_epoch=1000).steps(20).frame()
    plot = window.metrics.plots["loss"]
    curve = plot.steps["loss"]
    assert _newest_drawn(curve) == 20
    redraws = plot.redraws

    window.show_view("weights")  # the metrics tab goes behind
    assert out_of_sight(window.metrics)
    run.steps(30, start=20).frame()
    run.frame()
    assert plot.redraws == redraws  # data arrived, nothing was drawn
    assert _newest_drawn(curve) == 20
    assert window.metrics.store.tracks("loss")  # ... but the store has it all

    window.show_view("metrics")
    assert plot.redraws > redraws
    assert _newest_drawn(curve) == 50  # everything that arrived meanwhile


def test_plots_scrolled_out_of_view_wait_and_catch_up_when_scrolled_to(window, run):
    # four families (not "many": all shown), one plot each: more than the view holds
    families = ("loss", "accuracy", "precision", "recall")
    values = lambda g: {f: 1.0 / g + i for i, f in enumerate(families)}  # noqa: E731
    window.resize(1200, 807)
    run.started().fit(epochs=1, steps_per_epoch=1000).steps(20, values=values).frame()
    panel = window.metrics
    assert all(panel.plots[f].shown for f in families)
    top, bottom = panel.plots["loss"], panel.plots["recall"]
    panel.scroll.verticalScrollBar().setValue(0)
    QApplication.processEvents()
    assert panel._in_view(top) and not panel._in_view(bottom)  # below the fold
    top_curve, bottom_curve = top.steps["loss"], bottom.steps["recall"]
    bottom_redraws = bottom.redraws

    run.steps(30, start=20, values=values).frame()
    run.frame()
    assert _newest_drawn(top_curve) == 50  # in view: drawn as the steps come
    assert bottom.redraws == bottom_redraws  # out of view: nothing drawn ...
    assert _newest_drawn(bottom_curve) == 20
    assert len(panel.store.tracks("recall"))  # ... the store has it all

    bar = panel.scroll.verticalScrollBar()
    bar.setValue(bar.maximum())  # scrolled to: drawn at once, no redraw of the window needed
    assert panel._in_view(bottom)
    assert bottom.redraws > bottom_redraws
    assert _newest_drawn(bottom_curve) == 50
    assert top.y_range is not None and bottom.y_range is not None


def test_new_families_behind_another_tab_get_their_plots_when_shown(window, run):
    window.show_view("gradients")
    run.started().fit(epochs=1, steps_per_epoch=1000).steps(10).frame()
    assert window.metrics.plots == {}  # not even made while out of sight
    window.show_view("metrics")
    assert set(window.metrics.plots) == {"loss", "accuracy"}
    assert _newest_drawn(window.metrics.plots["accuracy"].steps["accuracy"]) == 10


def test_console_behind_another_dock_waits_and_writes_when_raised(window, run):
    console = window.console
    run.started().frame()
    window.runs_dock.raise_()  # the console's dock is tabbed behind the runs dock now
    assert out_of_sight(console)  # moved out of the window, still isVisible()
    inserts = console.inserts
    run.console("stdout", "written while hidden\n").frame()
    assert console.inserts == inserts
    assert "written while hidden" not in console.view.toPlainText()

    window._console_dock.raise_()
    assert not out_of_sight(console)
    assert console.inserts == inserts + 1  # one edit for all that waited
    assert "written while hidden" in console.view.toPlainText()


def test_console_text_includes_what_waits_behind_another_dock(window, run):
    run.started().frame()
    window.notices_dock.raise_()
    assert out_of_sight(window.console)
    run.console("stdout", "still to be shown\n").frame()
    assert "still to be shown" in window.console.text()  # what tests and copying read


def test_system_figures_wait_while_the_dock_is_hidden(window, run):
    panel = window.system
    run.started().frame()
    window.inspector.model_dock.raise_()  # the model tree in front of the system view
    assert out_of_sight(panel)
    before = panel.figures.text()
    panel.add_sample(1.0, _sample(machine_cpu=42.0), ())
    assert panel.figures.text() == before  # not rendered behind the model tree
    window._system_dock.raise_()
    assert not out_of_sight(panel)
    assert panel.figures.text() != before
    assert "42" in panel.summary()


# -- the y range moves only when it must ------------------------------------------------------
def test_settled_range_keeps_a_range_that_still_fits():
    shown = settled_range(None, (0.0, 1.0))
    assert shown[0] < 0.0 and shown[1] > 1.0  # room each side when it moves
    assert settled_range(shown, (0.01, 0.99)) == shown  # a small drift: unchanged
    assert settled_range(shown, (0.0, 1.2))[1] >= 1.2  # the data left it: it grows
    narrow = settled_range(shown, (0.4, 0.5))  # the data fills too little of it
    assert narrow[0] >= 0.35 and narrow[1] <= 0.55


def test_a_live_plot_keeps_its_y_range_while_the_data_stays_inside(window, run):
    values = lambda g: {"loss": 1.0 + 0.01 * np.sin(g)}  # noqa: E731
    run.started().fit(epochs=1, steps_per_epoch=1000).steps(40, values=values).frame()
    plot = window.metrics.plots["loss"]
    y_range = plot.vb.viewRange()[1]
    run.steps(40, values=values, start=40).frame()
    assert _newest_drawn(plot.steps["loss"]) == 80  # redrawn ...
    assert plot.vb.viewRange()[1] == y_range  # ... on the same axis
    run.steps(10, values=lambda g: {"loss": 1.5}, start=80).frame()
    assert plot.vb.viewRange()[1][1] > 1.5  # the data left the range: it moved


def test_a_settled_range_moved_by_the_data_leaving_one_side_leaves_more_room_there():
    shown = settled_range(None, (1.0, 2.0))
    falling = settled_range(shown, (0.9, 2.0))  # a loss going down leaves by the bottom
    below, above = 0.9 - falling[0], falling[1] - 2.0
    assert below > 2 * above > 0  # room to fall further before the axis moves again
    assert settled_range(falling, (0.9, 2.0)) == falling  # not too wide to keep at once
    rising = settled_range(shown, (1.0, 2.1))  # an accuracy going up leaves by the top
    assert rising[1] - 2.1 > 2 * (1.0 - rising[0]) > 0


def test_an_axis_that_did_not_change_is_not_painted_again_when_its_curve_is(window, run):
    import pyqtgraph as pg

    values = lambda g: {"loss": 1.0 + 0.01 * np.sin(g)}  # noqa: E731
    run.started().fit(epochs=1, steps_per_epoch=1000).steps(40, values=values).frame()
    plot = window.metrics.plots["loss"]
    plot.widget.grab()  # the axes paint once, into pixmaps of themselves
    axes = {plot.plot.getAxis("left"), plot.plot.getAxis("bottom")}
    painted = []
    original = pg.AxisItem.paint

    def paint(axis, *args):
        if axis in axes:
            painted.append(axis.orientation)
        return original(axis, *args)

    pg.AxisItem.paint = paint
    try:
        for start in (40, 50, 60):
            run.steps(10, values=values, start=start).frame()
            plot.widget.grab()  # the curve moved: the plot is painted again ...
    finally:
        pg.AxisItem.paint = original
    assert _newest_drawn(plot.steps["loss"]) == 70
    assert painted == []  # ... its axes copied from their pixmaps, not replayed
    run.steps(10, values=lambda g: {"loss": 1.5}, start=70).frame()  # the range moves
    pg.AxisItem.paint = paint
    try:
        plot.widget.grab()
    finally:
        pg.AxisItem.paint = original
    assert "left" in painted  # new ticks: painted anew


# -- the redraw rate adapts to the machine's idle CPU ----------------------------------------
@pytest.mark.parametrize(
    ("cpu_count", "busy", "current", "expected"),
    [
        (2, 1.0, None, LOW_REDRAW_HZ),  # two cores, training uses one: paint less
        (2, 0.1, None, FULL_REDRAW_HZ),  # two idle cores
        (16, 4.0, None, FULL_REDRAW_HZ),  # cores to spare
        (16, 15.5, None, LOW_REDRAW_HZ),  # a big machine, every core training
        (2, None, None, LOW_REDRAW_HZ),  # not measured yet: few cores count as busy
        (8, None, None, FULL_REDRAW_HZ),
        (4, 2.3, LOW_REDRAW_HZ, LOW_REDRAW_HZ),  # 1.7 spare: not enough to climb back
        (4, 2.3, FULL_REDRAW_HZ, FULL_REDRAW_HZ),  # ... but enough to stay
    ],
)
def test_choose_redraw_hz(cpu_count, busy, current, expected):
    assert choose_redraw_hz(cpu_count, busy, current) == expected


def test_the_system_sampler_sets_the_live_redraw_rate(window, run, monkeypatch):
    monkeypatch.setattr(bridge_module, "MIN_LOAD_INTERVAL_S", 0.01)
    bridge = window.bridge
    run.started().frame()
    panel = window.system
    panel.add_sample(1.0, _sample(cpu_count=2, machine_cpu=95.0), ())  # sets the mark only
    time.sleep(0.05)
    panel.add_sample(2.0, _sample(cpu_count=2, machine_cpu=95.0), ())
    assert bridge.redraw_hz == LOW_REDRAW_HZ
    assert bridge.min_redraw_s() == pytest.approx(1 / LOW_REDRAW_HZ)
    time.sleep(0.05)
    panel.add_sample(3.0, _sample(cpu_count=32, machine_cpu=5.0), ())
    assert bridge.redraw_hz == FULL_REDRAW_HZ
    assert bridge.min_redraw_s() == pytest.approx(1 / FULL_REDRAW_HZ)


def _sample(cpu_count: int = 4, machine_cpu: float = 50.0) -> SystemSample:
    return SystemSample(
        wall_time=time.time(),
        pid=0,
        alive=True,
        process_cpu=90.0,
        process_rss=100_000_000,
        machine_cpu=machine_cpu,
        machine_memory_used=4_000_000_000,
        machine_memory_total=16_000_000_000,
        cpu_count=cpu_count,
    )


def test_the_grid_follows_the_axis_major_ticks_from_inside_the_data_area(window, run):
    run.started().fit(epochs=1, steps_per_epoch=1000).steps(40).frame()
    QApplication.processEvents()  # the window's layout settles (the status bar grew)
    plot = window.metrics.plots["loss"]
    axis = plot.plot.getAxis("left")
    assert axis.grid is False  # the axis no longer spans the data area
    lo, hi = plot.vb.viewRange()[1]
    major = [v for v in axis.tickValues(lo, hi, plot.vb.height())[0][1] if lo <= v <= hi]
    assert plot.grid.values == pytest.approx(major) and len(major) >= 2
    assert plot.grid.getViewBox() is plot.vb


def test_an_axis_sets_its_label_only_when_the_text_changes(qtbot):
    from tfstudio.ui.plotting.view import QuietAxis

    axis = QuietAxis("left")
    axis.setLabel("time", units="s")
    set_html: list[str] = []
    original = axis.label.setHtml
    axis.label.setHtml = lambda html: (set_html.append(html), original(html))
    axis.setRange(0.0, 0.002)  # milliseconds
    assert len(set_html) == 1 and "(ms)" in set_html[0]
    for top in (0.003, 0.004, 0.005):  # a live plot's ranges: the same label
        axis.setRange(0.0, top)
    assert len(set_html) == 1
    axis.setRange(0.0, 2.0)  # seconds: the text changed, so it is set
    assert len(set_html) == 2 and "(s)" in set_html[1]
    assert axis.label.toPlainText() == "time (s)"


def test_a_long_line_is_drawn_from_one_min_max_pair_a_pixel_and_keeps_its_spike(window, run):
    n = 20_000

    def loss(g: int) -> dict[str, float]:  # a noisy fall, with one spike at step 7,000
        return {"loss": 1.0 / (1 + g / 5000) + 0.1 * ((g * 7919) % 13) / 13 + 5.0 * (g == 7000)}

    run.started().fit(epochs=1, steps_per_epoch=n).steps(n, values=loss).frame()
    plot = window.metrics.plots["loss"]
    item = plot.steps["loss"].item
    assert len(item.xData) >= n // 2  # the item holds the store's whole envelope ...
    shown_x, shown_y = item.curve.xData, item.curve.yData  # ... pyqtgraph draws this
    columns = plot.vb.width()
    # one (min, max) pair per pixel column of the data area (pyqtgraph's default drew
    # five), and the spike is among them; pyqtgraph rounds its step down (26 points a
    # pair for 26.4 a pixel when the line fills the width): a few % more pairs
    assert len(shown_x) <= 2.1 * columns, (len(shown_x), columns)
    assert np.nanmax(shown_y) == pytest.approx(np.nanmax(item.yData)) and np.nanmax(shown_y) > 5
