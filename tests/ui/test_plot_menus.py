"""A right click in a plot opens pyqtgraph's menu (View All, the axes, Export...).

The menu is built the first time it is asked for (``MenuOnDemandViewBox``), not with
every plot: these tests pin that a user's right click still gets it, in a metric plot
and in the System view.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest


def _right_click(widget, vb) -> None:
    """A right click at the middle of ``vb``, as a user gives it."""
    scene_point = vb.mapToScene(vb.boundingRect().center())
    view_point = widget.mapFromScene(scene_point)
    QTest.mouseClick(widget.viewport(), Qt.MouseButton.RightButton, pos=QPoint(view_point))


def _texts(menu) -> list[str]:
    return [a.text() for a in menu.actions()]


def test_a_right_click_in_a_metric_plot_opens_its_menu(window, run, qtbot):
    run.started().fit(epochs=1, steps_per_epoch=20)
    run.steps(20).frame()
    plot = window.metrics.plots["loss"]
    vb = plot.vb
    assert vb.menuEnabled()
    _right_click(plot.widget, vb)
    qtbot.waitUntil(lambda: vb.menu is not None and vb.menu.isVisible(), timeout=5_000)
    assert "View All" in _texts(vb.menu)
    vb.menu.hide()


def test_the_system_views_plots_offer_the_menu_too(window):
    vb = window.system.cpu_curve.getViewBox()
    assert vb.menuEnabled()
    # what a right click shows (and a child item's menu adds): built when asked for
    assert "View All" in [a.text() for a in vb.getContextMenus(None)]
