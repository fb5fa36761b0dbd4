"""The plot widget that times its paints, and axes that paint only when they change."""

from __future__ import annotations

import time
from typing import Any

import pyqtgraph as pg
from pyqtgraph.graphicsItems.ViewBox.ViewBoxMenu import ViewBoxMenu
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QGraphicsItem


class MenuOnDemandViewBox(pg.ViewBox):
    """A ViewBox whose right-click menu (View All, axes, export...) is built when first
    asked for: pyqtgraph builds it with every plot (~3 ms each, a sixth of the window's
    construction), and most plots are never right-clicked."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(enableMenu=False, **kwargs)
        self.state["enableMenu"] = True  # on; self.menu stays None until asked for

    def getMenu(self, ev: Any) -> Any:  # noqa: N802 (pyqtgraph API)
        """The menu, built now if it was never asked for."""
        if self.menu is None and self.menuEnabled():
            self.menu = ViewBoxMenu(self)
            self.updateViewLists()
        return self.menu

    def getContextMenus(self, event: Any) -> list[Any]:  # noqa: N802 (pyqtgraph API)
        """The menu's actions (a child item's menu shows them too)."""
        menu = self.getMenu(event)
        return menu.actions() if menu is not None else []


class TimedPlotWidget(pg.PlotWidget):
    """A PlotWidget that adds the time its paints take to ``paint_clock[0]``.

    The bridge reads the clock to keep redrawing within its time budget: painting
    holds the GIL, and every millisecond of it is taken from the training thread.
    """

    def __init__(self, paint_clock: list[float], **kwargs: object) -> None:
        kwargs.setdefault("viewBox", MenuOnDemandViewBox())
        super().__init__(**kwargs)
        self._paint_clock = paint_clock
        self.paints = 0
        self.resized: list = []  # callables run after each resize
        self.left: list = []  # callables run when the mouse leaves the widget

    def paintEvent(self, event: object) -> None:  # noqa: N802 (Qt API)
        """Paint, and account for the time it took."""
        t0 = time.perf_counter()
        super().paintEvent(event)
        self.paints += 1
        self._paint_clock[0] += time.perf_counter() - t0

    def resizeEvent(self, event: object) -> None:  # noqa: N802 (Qt API)
        """Resize, then let the owner re-place its overlay buttons."""
        super().resizeEvent(event)
        for callback in getattr(self, "resized", ()):  # none during __init__
            callback()

    def leaveEvent(self, event: object) -> None:  # noqa: N802 (Qt API)
        """The mouse left the plot: its owner hides what hovering showed."""
        super().leaveEvent(event)
        for callback in self.left:
            callback()


class QuietAxis(pg.DateAxisItem):
    """An axis that paints its ticks and labels only when they change.

    A curve's update repaints the data area, and Qt repaints every item that region
    touches: the left axis's rectangle reaches 15 px past its ends for tick labels,
    the bottom axis's top edge meets the data area's. Each such paint replayed all of
    the axis's ticks and labels: in a live run 3 axis paints a redraw for axes that
    had not changed. So the axis paints into a pixmap of itself (Qt's
    ``DeviceCoordinateCache``) that Qt copies for such exposures, and paints anew only
    when its range, size or style changes (pyqtgraph's ``update()`` then drops the
    pixmap). A paint asked with nothing exposed is skipped.

    With :meth:`set_dates` on, its ticks are times of day and dates (x is a clock
    time, ``time.time()``), as pyqtgraph's ``DateAxisItem`` labels them; off, numbers.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.autoSIPrefix = True  # a plain axis's default (pyqtgraph's date axis turns it off)
        self._si = True  # the SI prefix setting while dates are off
        self.dates = False
        # what pyqtgraph's date ticks measure their labels with (set again at each paint)
        self.fontMetrics = QFontMetrics(self.style.get("tickFont") or QFont())
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def set_dates(self, dates: bool) -> None:
        """Label the ticks as clock times (True) or as numbers (False)."""
        dates = bool(dates)
        if dates != self.dates:
            self.dates = dates
            if dates:
                self._si, self.autoSIPrefix = self.autoSIPrefix, False
            else:
                self.autoSIPrefix = self._si
            self.picture = None
            self.update()

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list:  # noqa: N802, N803
        """Where the ticks go: at round times (dates) or round numbers."""
        if self.dates:
            return pg.DateAxisItem.tickValues(self, minVal, maxVal, size)
        return pg.AxisItem.tickValues(self, minVal, maxVal, size)

    def tickStrings(self, values: list, scale: float, spacing: float) -> list[str]:  # noqa: N802
        """The ticks' texts."""
        if self.dates:
            return pg.DateAxisItem.tickStrings(self, values, scale, spacing)
        return pg.AxisItem.tickStrings(self, values, scale, spacing)

    def linkToView(self, view: Any) -> None:  # noqa: N802 - pyqtgraph's name
        """Link to the view as a plain axis does (no date limits on the view's range)."""
        self._linkToView_internal(view)

    def paint(self, painter: Any, option: Any, widget: Any = None) -> None:
        """Paint, unless none of the axis is exposed."""
        if option.exposedRect.isEmpty():
            return
        super().paint(painter, option, widget)

    def _updateLabel(self) -> None:  # noqa: N802 - pyqtgraph's name
        """Lay out and repaint as pyqtgraph does, but set the label's HTML only when its
        text changed: pyqtgraph sets it at every range change (through the SI prefix),
        the same text on a live plot's every redraw (~1% of the window's CPU)."""
        html = self.labelString()
        if html != getattr(self, "_label_html", None):
            self._label_html = html
            self.label.setHtml(html)
        self._adjustSize()
        self.picture = None
        self.update()


def quiet_axes() -> dict[str, QuietAxis]:
    """``axisItems`` for a plot: left and bottom axes that skip empty paints."""
    return {"left": QuietAxis("left"), "bottom": QuietAxis("bottom")}
