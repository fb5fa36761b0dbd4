"""A plot over steps: robust y range, outlier marks, all/log buttons, hover readout, linked x.

Its parts live in modules of their own: the widget and axes (:mod:`.axes`), the
shared x range (:mod:`.xlink`), the title row and legend (:mod:`.legend`), the hover
readout (:mod:`.hover`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton

from tfstudio.ui.plotting.axes import QuietAxis, TimedPlotWidget, quiet_axes
from tfstudio.ui.plotting.grid import HorizontalGrid, grid_pen
from tfstudio.ui.plotting.hover import MAX_READOUT_ROWS, HoverReadout
from tfstudio.ui.plotting.legend import BUTTON_W, TITLE_ROW, TitleRow, _Legend
from tfstudio.ui.plotting.ranges import robust_range, settled_range
from tfstudio.ui.plotting.style import BACKGROUND, FOREGROUND, OUTLIER
from tfstudio.ui.plotting.xlink import XLinkGroup

__all__ = [
    "BUTTON_W",
    "TITLE_ROW",
    "PlotView",
    "QuietAxis",
    "TimedPlotWidget",
    "XLinkGroup",
    "quiet_axes",
]

PLOT_MIN_HEIGHT = 210
LEFT_AXIS_WIDTH = 62  # px: room for ticks like "-1.2e+03" and the axis label
MAX_OUTLIER_MARKS = 200
BUTTON_H = 18
TICK_LENGTH = 4  # px, outwards: inward ticks overlap the data area, so every update repainted them


class PlotView(HoverReadout, TitleRow):
    """A live plot of curves over steps, made to stay readable whatever the data.

    - The y range follows the bulk of the visible data (:func:`robust_range`);
      points that leave it are marked by triangles at the edge. The ``all`` button
      shows every point instead, the ``log`` button switches to log scale; both
      stick until clicked again.
    - Zooming or panning with the mouse moves x only, and every plot of the same
      :class:`XLinkGroup` with it; a double-click goes back to following the data.
    - Hovering shows a crosshair and the text of :meth:`readout` (override it).

    Subclasses add their data items with :meth:`add_item` and call
    :meth:`refresh_range` after giving them new data.

    Args:
        title: text at the top left.
        x_label: bottom axis label.
        y_label: left axis label.
        paint_clock: shared paint-time accumulator (see :class:`TimedPlotWidget`).
        group: x-range group; None gives the plot a group of its own.
    """

    def __init__(
        self,
        title: str = "",
        x_label: str = "step",
        y_label: str = "",
        paint_clock: list[float] | None = None,
        group: XLinkGroup | None = None,
    ) -> None:
        self.widget = TimedPlotWidget(
            paint_clock if paint_clock is not None else [0.0],
            background=BACKGROUND,
            axisItems=quiet_axes(),
        )
        self.widget.setMinimumHeight(PLOT_MIN_HEIGHT)
        self.plot: pg.PlotItem = self.widget.getPlotItem()
        self.vb: pg.ViewBox = self.plot.getViewBox()
        # Horizontal grid at major ticks only: minor grid lines (and a vertical grid) cost
        # more paint time than all the curves. It is an item of the view box, not part of
        # the axis, and the ticks point outwards: a curve's update then repaints the view
        # box alone, never the axes' tick labels (see grid.py).
        self.plot.getAxis("left").setStyle(maxTickLevel=0)
        self.grid = HorizontalGrid(self.plot.getAxis("left"), grid_pen(FOREGROUND))
        self.grid.setZValue(-20)
        self.vb.addItem(self.grid, ignoreBounds=True)
        # The same left axis width on every plot, so stacked plots line up in x.
        self.plot.getAxis("left").setWidth(LEFT_AXIS_WIDTH)
        for name in ("left", "bottom"):
            axis = self.plot.getAxis(name)
            axis.setPen(pg.mkPen(FOREGROUND))
            axis.setTextPen(pg.mkPen(FOREGROUND))
            axis.enableAutoSIPrefix(False)
            axis.setStyle(tickLength=TICK_LENGTH)
        self.plot.hideButtons()  # pyqtgraph's "A": our double-click and buttons replace it
        self.set_x_label(x_label)
        self.plot.setLabel("left", y_label, color=FOREGROUND)
        # The legend sits in the title row, right of the left-aligned title and left of
        # the buttons, so it never hides data.
        self.legend = _Legend(
            offset=None,
            brush=pg.mkBrush(255, 255, 255, 190),
            pen=pg.mkPen("#d8d8d8"),
            labelTextColor=FOREGROUND,
            labelTextSize="9pt",
            verSpacing=-8,
            horSpacing=12,
        )
        self.legend.setParentItem(self.plot)
        self.plot.legend = self.legend  # as addLegend does: named items join it
        self.legend.anchor(itemPos=(1, 0), parentPos=(1, 0), offset=(-12 - 2 * BUTTON_W, 1))
        self.legend.layout.setContentsMargins(4, 0, 4, 0)
        self._title_row = 0
        self._legend_columns = 1  # the legend's columns when the title has room beside them
        self._arranging = False
        self._fit_legend_row()  # the title row is as tall as the legend: it never hides data
        self._title = ""
        self.set_title(title)
        # A narrow plot: the legend (which names the metric too) wins over the title.
        self.plot.geometryChanged.connect(self._fit_title)
        self.legend.geometryChanged.connect(self._fit_title)
        self.legend.geometryChanged.connect(self._fit_legend_row)

        self.items: list[pg.PlotDataItem] = []
        self.unranged: list[pg.PlotDataItem] = []  # drawn, but not counted for the y range
        self.show_all = False
        self.log = False
        self.shown = True
        self.y_range: tuple[float, float] | None = None  # set by refresh_range
        self.outliers_above = pg.ScatterPlotItem(
            symbol="t1", size=9, pen=pg.mkPen("w", width=0.5), brush=pg.mkBrush(OUTLIER)
        )
        self.outliers_below = pg.ScatterPlotItem(
            symbol="t", size=9, pen=pg.mkPen("w", width=0.5), brush=pg.mkBrush(OUTLIER)
        )
        for marks in (self.outliers_above, self.outliers_below):
            marks.setZValue(50)
            marks.setVisible(False)  # until there are points to mark
            self.vb.addItem(marks, ignoreBounds=True)
        self.outlier_xs = np.empty(0)  # x of every point left out of the y range
        self.all_button = self._button(
            "all",
            "Show every point (the default range follows the bulk of the data and marks outliers)",
        )
        self.log_button = self._button("log", "Log scale")
        self.all_button.toggled.connect(self.set_show_all)
        self.log_button.toggled.connect(self.set_log)
        self.plot.ctrl.logYCheck.toggled.connect(self._on_menu_log_toggled)
        self.widget.resized.append(self._place_buttons)
        self._place_buttons()

        self._crosshair = pg.InfiniteLine(
            angle=90, movable=False, pen=pg.mkPen("#888888", style=Qt.PenStyle.DotLine)
        )
        self._crosshair.setVisible(False)
        self.vb.addItem(self._crosshair, ignoreBounds=True)
        # The readout is placed in the plot's own pixels (not the view's data coordinates):
        # it is kept inside the data area whatever the plot's size and the cursor's place.
        self._readout = pg.TextItem(
            "", anchor=(0, 0), fill=pg.mkBrush(255, 255, 255, 235), border=pg.mkPen("#bbbbbb")
        )
        self._readout.setParentItem(self.plot)
        self._readout.setZValue(1000)
        self._readout.setVisible(False)
        self.max_readout_rows = MAX_READOUT_ROWS  # what readout() may list now (see _place)
        self.widget.left.append(self.hide_readout)
        self.widget.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.widget.scene().sigMouseClicked.connect(self._on_mouse_clicked)

        self.vb.setMouseEnabled(x=True, y=False)  # y is the buttons' business
        self.vb.enableAutoRange(x=False, y=False)
        self.vb.sigRangeChangedManually.connect(self._on_range_changed_manually)
        self.vb.sigXRangeChanged.connect(self._on_x_range_changed)
        self.group: XLinkGroup | None = None
        (group if group is not None else XLinkGroup()).add(self)

    def add_item(self, item: pg.PlotDataItem, z: float = 0, ranged: bool = True) -> pg.PlotDataItem:
        """Add a data item: it follows log scale and (``ranged``) counts for the y range.

        A smoothed curve is not ranged: it lies within its raw curve's envelope, and
        the tail it draws after a spike must not widen the bulk the range follows.
        """
        item.setZValue(z)
        item.setLogMode(False, self.log)
        self.vb.addItem(item)
        (self.items if ranged else self.unranged).append(item)
        return item

    def remove_item(self, item: pg.PlotDataItem) -> None:
        """Remove a data item added with :meth:`add_item`."""
        for items in (self.items, self.unranged):
            if item in items:
                items.remove(item)
                self.vb.removeItem(item)

    def visible_items(self) -> Iterator[pg.PlotDataItem]:
        """Data items shown now."""
        return (i for i in self.items if i.isVisible() and i.xData is not None)

    def set_shown(self, shown: bool) -> None:
        """Show or hide the plot; a hidden plot skips its redraws (see subclasses)."""
        self.shown = shown
        if not shown:
            self.hide_readout()
        self.widget.setVisible(shown)
        if shown and self.group is not None and self.group.range is not None:
            self.set_x_range(*self.group.range)

    def set_x_range(self, x0: float, x1: float, padding: float = 0.0) -> None:
        """Show [x0, x1] (padding as a share of the width)."""
        self.vb.setXRange(x0, x1, padding=padding)

    def data_x_max(self) -> float:
        """The largest finite x among the data shown."""
        best = 0.0
        for item in self.visible_items():
            x = item.xData
            if len(x):
                best = max(best, float(x[-1]))
        return best

    def x_origin(self) -> float:
        """Where the x range starts when it follows the data (0: steps, seconds, epochs)."""
        return 0.0

    def follow(self) -> None:
        """Let the x group keep the newest data in view."""
        if self.group is not None:
            self.group.follow()

    def _on_range_changed_manually(self, mask: object) -> None:
        if self.group is not None:
            self.group.user_changed(self)

    def _on_x_range_changed(self, *_: object) -> None:
        if self.shown:
            self.refresh_range()

    def visible_points(self) -> tuple[np.ndarray, np.ndarray]:
        """x and y (log10 in log scale) of every finite point in the visible x range."""
        (x0, x1), _ = self.vb.viewRange()
        xs: list[np.ndarray] = []
        ys: list[np.ndarray] = []
        for item in self.visible_items():
            x, y = item.xData, item.yData
            a, b = np.searchsorted(x, (x0, x1))
            xs.append(x[a:b])
            ys.append(y[a:b])
        if not xs:
            return np.empty(0), np.empty(0)
        x = np.concatenate(xs)
        y = np.concatenate(ys)
        if self.log:
            with np.errstate(divide="ignore", invalid="ignore"):
                y = np.where(y > 0, np.log10(np.where(y > 0, y, 1.0)), np.nan)
        keep = np.isfinite(y)
        return x[keep], y[keep]

    def refresh_range(self) -> None:
        """Set the y range from the visible data and mark the points it leaves out."""
        x, y = self.visible_points()
        bounds = robust_range(y, self.show_all)
        if bounds is None:
            self.outliers_above.clear()
            self.outliers_below.clear()
            self.outlier_xs = np.empty(0)
            return
        lo, hi = settled_range(self.y_range, bounds)
        if (lo, hi) != self.y_range:  # a still range leaves the axis as it is: no repaint
            self.y_range = (lo, hi)
            self.vb.setYRange(lo, hi, padding=0)
        above, below = y > hi, y < lo
        self.outlier_xs = np.sort(x[above | below])
        inset = (hi - lo) * 0.035
        self._mark(self.outliers_above, x[above], hi - inset)
        self._mark(self.outliers_below, x[below], lo + inset)

    def _mark(self, marks: pg.ScatterPlotItem, xs: np.ndarray, y: float) -> None:
        if not len(xs):
            if len(marks.data):
                marks.clear()
                marks.setVisible(False)  # an empty scatter item still paints
            return
        (x0, x1), _ = self.vb.viewRange()
        px = max(1.0, (x1 - x0) / max(1.0, self.vb.width()) * 6)  # one mark per 6 px
        xs = np.unique(np.round(xs / px)) * px
        xs = xs[:MAX_OUTLIER_MARKS]
        old_x, old_y = marks.getData()
        if len(old_x) == len(xs) and np.array_equal(old_x, xs) and (not len(xs) or old_y[0] == y):
            return  # the same marks: setData would repaint them for nothing
        marks.setData(xs, np.full(len(xs), y))
        marks.setVisible(True)

    def set_show_all(self, show_all: bool) -> None:
        """Show every point (True) or the bulk with outliers marked (False)."""
        self.show_all = bool(show_all)
        if self.all_button.isChecked() != self.show_all:
            self.all_button.setChecked(self.show_all)
        self.y_range = None  # the user asked: fit the data again, with no slack
        self.refresh_range()

    def set_log(self, log: bool) -> None:
        """Log scale on y (True) or linear (False)."""
        log = bool(log)
        if log == self.log:
            return
        self.log = log
        if self.log_button.isChecked() != log:
            self.log_button.setChecked(log)
        x_range = self.vb.viewRange()[0]
        self.plot.setLogMode(y=log)  # axis ticks; re-enables pyqtgraph's auto range
        self.vb.enableAutoRange(x=False, y=False)
        for item in (*self.items, *self.unranged):
            item.setLogMode(False, log)
        self.vb.setXRange(*x_range, padding=0)
        self.y_range = None  # the old range is in the other scale
        self.refresh_range()

    def _on_menu_log_toggled(self, on: bool) -> None:
        self.set_log(on)

    def _button(self, text: str, tip: str) -> QToolButton:
        button = QToolButton(self.widget)
        button.setText(text)
        button.setToolTip(tip)
        button.setCheckable(True)
        button.setFixedSize(BUTTON_W, BUTTON_H)
        button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        button.setStyleSheet(
            "QToolButton { font-size: 8pt; color: #505050; background: #f4f4f4;"
            " border: 1px solid #cfcfcf; border-radius: 3px; }"
            "QToolButton:checked { background: #d0e2f5; border-color: #5b8fc7; color: #0d3f73; }"
            "QToolButton:hover { border-color: #888888; }"
        )
        return button

    def _place_buttons(self) -> None:
        right = self.widget.width() - 6
        self.log_button.move(right - BUTTON_W, 6)
        self.all_button.move(right - 2 * BUTTON_W - 4, 6)

    def _on_mouse_clicked(self, event: object) -> None:
        if event.double() and self.vb.sceneBoundingRect().contains(event.scenePos()):
            self.reset_view()

    def reset_view(self) -> None:
        """Back to the default view: follow the data in x, y from the data."""
        if self.group is not None:
            self.group.reset()
        self.y_range = None
        self.refresh_range()
