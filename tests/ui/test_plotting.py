"""Shared plot pieces: robust range, breaks, a plot's buttons and x-link group."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

from tfstudio.ui.plotting import PlotView, XLinkGroup, robust_range
from tfstudio.ui.plotting.curve import held_steps, with_breaks


def test_robust_range_keeps_an_ordinary_loss_curve_whole():
    loss = 2.3 * np.exp(-np.arange(1000) / 100) + 0.05
    lo, hi = robust_range(loss)
    assert lo < loss.min() and hi > loss.max()  # a steep start is not an outlier


def test_robust_range_leaves_a_1000x_spike_out_unless_asked():
    values = 0.5 + 0.01 * np.sin(np.arange(2000))
    values[10] = 500.0
    lo, hi = robust_range(values)
    assert 0.45 < lo < 0.49 and 0.51 < hi < 0.55
    assert robust_range(values, show_all=True)[1] > 500
    assert robust_range(np.array([np.nan, np.inf])) is None
    lo, hi = robust_range(np.array([3.0]))
    assert lo < 3.0 < hi  # one point: a range around it


def test_robust_range_of_a_long_envelope_sorts_a_sample_and_keeps_every_extreme(monkeypatch):
    import tfstudio.ui.plotting.ranges as ranges

    rng = np.random.default_rng(1)
    steps = np.arange(20_000)
    noisy = np.exp(-steps / 6000) + 0.1 * rng.random(20_000)
    envelope = np.empty(40_000)  # a long run's line: each bucket's min, then its max
    envelope[0::2], envelope[1::2] = noisy - 0.05, noisy + 0.05
    envelope[12_345] = 40.0  # a spike: an outlier, marked, not in range
    sorted_sizes = []
    percentiles = ranges.percentiles

    def counted(values, q):
        sorted_sizes.append(len(values))
        return percentiles(values, q)

    monkeypatch.setattr(ranges, "percentiles", counted)
    lo, hi = robust_range(envelope)
    assert sorted_sizes and max(sorted_sizes) <= 2 * ranges.BULK_SAMPLE  # not all 40,000
    monkeypatch.setattr(ranges, "percentiles", percentiles)
    inliers = envelope[envelope < 10]
    pad = (inliers.max() - inliers.min()) * ranges.MARGIN
    # the range reaches every point but the spike (the extremes come from every point)
    assert lo == pytest.approx(inliers.min() - pad) and hi == pytest.approx(inliers.max() + pad)
    assert robust_range(envelope, show_all=True)[1] > 40


def test_the_ranges_percentiles_are_numpys_to_the_last_bit():
    from tfstudio.ui.plotting.ranges import percentiles

    rng = np.random.default_rng(2)
    for n in [*range(1, 40), 101, 4096, 8191]:
        for scale in (1e-6, 1.0, 1e6):
            values = rng.standard_normal(n) * scale + rng.uniform(-5, 5)
            for v in (values, np.round(values, 1), np.sort(values)[::-1].copy()):
                for qs in ((1.0, 99.0), (0.0, 50.0, 100.0), (25.0, 75.0)):
                    want = tuple(float(x) for x in np.percentile(v, qs))
                    assert percentiles(v, qs) == want, (n, qs)


def test_robust_range_of_a_metric_stuck_at_one_is_not_its_rounding_noise():
    """An accuracy at 1.0 for most of a run: float32 means scatter it by ~1e-6."""
    rng = np.random.default_rng(0)
    acc = 1.0 + rng.uniform(-3.4e-6, 3.1e-6, 1640)
    acc[:6] = [0.84375, 0.90625, 0.90625, 0.9375, 0.96875, 0.99453]  # the first steps
    lo, hi = robust_range(acc)
    assert lo < 0.97 and 1.0 < hi < 1.01  # 1.0 on a readable axis, with the end of the climb
    lo, hi = robust_range(np.full(100, 1.0) + rng.uniform(-3e-6, 3e-6, 100))
    assert lo == pytest.approx(0.9, abs=1e-4) and hi == pytest.approx(1.1, abs=1e-4)
    # a real change of 0.03% of the value is still shown at its own scale
    auc = np.linspace(0.9997, 1.0, 200)
    lo, hi = robust_range(auc)
    assert 0.9996 < lo < 0.9997 and 1.0 < hi < 1.0001


def test_with_breaks_puts_a_gap_between_points_only():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([1.0, 2.0, 3.0, 4.0])
    bx, by = with_breaks(x, y, [0.5, 2.5, 9.0])
    assert bx.tolist() == [1.0, 2.0, 2.5, 3.0, 4.0]
    assert np.isnan(by[2]) and np.isfinite(np.delete(by, 2)).all()


def test_held_values_are_steps_cut_at_breaks_and_the_last_holds_to_the_end():
    x = np.array([1.0, 5.0, 9.0])
    y = np.array([0.1, 0.05, 0.01])
    hx, hy = held_steps(x, y, 12.0)
    assert hx.tolist() == [1.0, 5.0, 5.0, 9.0, 9.0, 12.0]
    assert hy.tolist() == [0.1, 0.1, 0.05, 0.05, 0.01, 0.01]
    hx, hy = held_steps(x, y, 12.0, [3.5, 10.5])  # a restore at 3.5, a new fit at 10.5
    assert hx[:3].tolist() == [1.0, 3.5, 3.5] and np.isnan(hy[2])  # 0.1 stops at the break
    assert hx[3:].tolist() == [5.0, 9.0, 9.0, 10.5, 10.5] and np.isnan(hy[-1])
    assert hy[3:-1].tolist() == [0.05, 0.05, 0.01, 0.01]
    one_x, one_y = held_steps(np.array([0.0]), np.array([0.01]), 300.0)
    assert one_x.tolist() == [0.0, 300.0] and one_y.tolist() == [0.01, 0.01]  # a line, not a dot
    assert held_steps(x, y, 2.0)[0][-1] == 9.0  # an end before the last point: held nowhere


def test_a_legend_of_two_rows_sits_above_the_data_not_over_it(qtbot):
    view = PlotView("accuracy")
    qtbot.addWidget(view.widget)
    view.widget.resize(600, 260)
    view.widget.show()
    names = ["accuracy (per step)", "accuracy (epoch mean)", "val_accuracy", "previous run"]
    for name in names:
        item = view.add_item(pg.PlotDataItem())
        item.setData(np.arange(1.0, 101.0), np.ones(100))
        view.legend.addItem(item, name)
    view.legend.setColumnCount(2)
    qtbot.wait(20)
    legend = view.legend.sceneBoundingRect()
    assert legend.height() > 30  # two rows
    text = max(
        label.sceneBoundingRect().top() + label.item.boundingRect().height()
        for _, label in view.legend.items
    )
    assert view.vb.sceneBoundingRect().top() >= text  # below the last row of names


def test_plot_view_follows_data_and_group_shares_the_range(qtbot):
    group = XLinkGroup()
    views = [PlotView(f"p{i}", group=group) for i in range(2)]
    for view in views:
        qtbot.addWidget(view.widget)
        view.widget.resize(600, 300)
        view.widget.show()
    item = views[0].add_item(pg.PlotDataItem())
    item.setData(np.arange(1.0, 101.0), np.ones(100))
    group.follow()
    for view in views:
        x0, x1 = view.vb.viewRange()[0]
        assert x0 <= 1 and x1 >= 100
    group.show_range(20, 40)
    assert np.allclose(views[1].vb.viewRange()[0], views[0].vb.viewRange()[0])
    assert not group.following
    views[0].log_button.click()
    assert views[0].log and not views[1].log


def test_a_narrow_plot_stacks_its_legend_then_gives_the_title_row_to_it(qtbot):
    view = PlotView("accuracy")
    qtbot.addWidget(view.widget)
    for name in ("accuracy (per step)", "accuracy (epoch mean)", "val_accuracy"):
        item = view.add_item(pg.PlotDataItem([0, 1], [0, 1], name=name))
        view.legend.addItem(item, name)
    view.set_legend_columns(3)  # one row, as the metric plots lay it out
    view.widget.resize(1200, 300)
    view.widget.show()
    qtbot.waitUntil(lambda: view.plot.geometry().width() > 1000)
    assert view.title_shown() and view.legend.columnCount == 3  # room for both in one row
    view.widget.resize(700, 300)  # no room beside one row: the legend takes two rows
    qtbot.waitUntil(lambda: view.legend.columnCount < 3)
    assert view.title_shown()
    legend = view.legend.mapRectToParent(view.legend.boundingRect())
    title = view.plot.titleLabel.item
    title_right = view.plot.titleLabel.geometry().x() + title.pos().x()
    assert title_right + title.boundingRect().width() < legend.left()  # side by side
    view.widget.resize(300, 300)  # no room at all: the legend (it names the metric) wins
    qtbot.waitUntil(lambda: not view.title_shown())
    assert view.legend_labels()[0] == "accuracy (per step)"
    view.widget.resize(1200, 300)
    qtbot.waitUntil(view.title_shown)
    qtbot.waitUntil(lambda: view.legend.columnCount == 3)


def test_an_axis_asked_to_paint_with_nothing_exposed_does_no_work(qtbot, monkeypatch):
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtWidgets import QStyleOptionGraphicsItem

    from tfstudio.ui.panels.system import SystemPanel
    from tfstudio.ui.plotting.view import QuietAxis

    view = PlotView("loss")
    qtbot.addWidget(view.widget)
    system = SystemPanel()
    qtbot.addWidget(system)
    axes = [view.plot.getAxis("left"), view.plot.getAxis("bottom")]
    axes += [system.step_plot.getAxis("left"), system.memory_plot.getAxis("bottom")]
    assert all(isinstance(axis, QuietAxis) for axis in axes)
    drawn = []
    monkeypatch.setattr(pg.AxisItem, "paint", lambda self, *args: drawn.append(self))
    image = QImage(100, 100, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    option = QStyleOptionGraphicsItem()
    option.exposedRect = QRectF()  # what Qt passes when the repainted region misses it
    axes[0].paint(painter, option, None)
    assert drawn == []
    option.exposedRect = QRectF(0, 0, 10, 10)
    axes[0].paint(painter, option, None)
    painter.end()
    assert drawn == [axes[0]]
