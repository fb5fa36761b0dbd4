"""A plot over steps: robust y range, outlier marks, all/log buttons, hover readout, linked x."""

from __future__ import annotations

import html
import time
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QGraphicsItem, QToolButton

from tfstudio.ui.plotting.grid import HorizontalGrid, grid_pen
from tfstudio.ui.plotting.ranges import nice_ceiling, robust_range, settled_range
from tfstudio.ui.plotting.style import BACKGROUND, FOREGROUND, OUTLIER

PLOT_MIN_HEIGHT = 210
LEFT_AXIS_WIDTH = 62  # px: room for ticks like "-1.2e+03" and the axis label
MAX_OUTLIER_MARKS = 200
BUTTON_W = 34
TITLE_ROW = 36  # px: the title row, tall enough for a one-row legend
BUTTON_H = 18
TICK_LENGTH = 4  # px, outwards: inward ticks overlap the data area, so every update repainted them
READOUT_PT = 9  # the hover readout's font size (its HTML says it too)
READOUT_GAP = 12  # px between the cursor and the readout box
READOUT_MARGIN = 3  # px the readout box keeps from the data area's edges
MAX_READOUT_ROWS = 12  # rows of values a readout lists at most (fewer where the plot is low)


class TimedPlotWidget(pg.PlotWidget):
    """A PlotWidget that adds the time its paints take to ``paint_clock[0]``.

    The bridge reads the clock to keep redrawing within its time budget: painting
    holds the GIL, and every millisecond of it is taken from the training thread.
    """

    def __init__(self, paint_clock: list[float], **kwargs: object) -> None:
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


class QuietAxis(pg.AxisItem):
    """An axis that paints its ticks and labels only when they change.

    A curve's update repaints the data area, and Qt repaints every item that region
    touches: the left axis's rectangle reaches 15 px past its ends for tick labels,
    the bottom axis's top edge meets the data area's. Each such paint replayed all of
    the axis's ticks and labels: in a live run 3 axis paints a redraw for axes that
    had not changed. So the axis paints into a pixmap of itself (Qt's
    ``DeviceCoordinateCache``) that Qt copies for such exposures, and paints anew only
    when its range, size or style changes (pyqtgraph's ``update()`` then drops the
    pixmap). A paint asked with nothing exposed is skipped.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

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


class XLinkGroup:
    """Plots that share one x range: zoom or pan one and all follow.

    While ``following`` (the default, and again after a double-click) the range
    keeps the newest data in view, growing by half when the data reaches its end (a
    range that moved every frame would re-lay-out the axes every frame), but never
    past :attr:`planned`, where the running fit will end when that is known; once
    ``finish()`` is called the data fills the width. A plot alone has a group of its
    own, so the same code serves linked and unlinked plots.
    """

    def __init__(self) -> None:
        self.members: list[PlotView] = []
        self.following = True
        self.finished = False
        self.planned = 0.0  # x where the running fit's last step will be (0: not known)
        self._right = 0.0
        self.range: tuple[float, float] | None = None

    def add(self, plot: PlotView) -> None:
        """Make ``plot`` share this group's range (it leaves its previous group)."""
        if plot.group is not None and plot.group is not self:
            plot.group.remove(plot)
        plot.group = self
        if plot not in self.members:
            self.members.append(plot)
        if self.range is not None:
            plot.set_x_range(*self.range)

    def remove(self, plot: PlotView) -> None:
        """Take ``plot`` out of the group."""
        if plot in self.members:
            self.members.remove(plot)

    def x_max(self) -> float:
        """The largest x of the data shown by any member."""
        return max((p.data_x_max() for p in self.members if p.shown), default=0.0)

    def follow(self) -> None:
        """Keep the newest data in view (does nothing once the user zoomed or panned)."""
        if not self.following:
            return
        last = self.x_max()
        if self.finished:
            if last > 0 and last != self._right:
                self._right = last
                self._apply(0.0, last, 0.02)
            return
        if last <= self._right:
            return
        self._right = nice_ceiling(max(last * 1.5, 10.0))
        if last <= self.planned < self._right:  # no room past where the fit will end
            self._right = self.planned
        self._apply(0.0, self._right, 0.01)

    def set_planned(self, x: float) -> None:
        """Where the running fit will end (0: not known); the range is fitted to it anew
        (a compared run drawn before the fit began may have widened it)."""
        if x != self.planned:
            self.planned = x
            self._right = 0.0
            self.follow()

    def finish(self, finished: bool = True) -> None:
        """The data stopped growing: drop the head-room (or, False: it grows again)."""
        self.finished = finished
        self._right = 0.0
        self.follow()

    def reset(self) -> None:
        """Follow the data again (a double-click on any member)."""
        self.following = True
        self._right = 0.0
        self.follow()

    def user_changed(self, source: PlotView) -> None:
        """``source``'s range was zoomed or panned by the user: the others follow."""
        self.following = False
        (x0, x1), _ = source.vb.viewRange()
        self.range = (x0, x1)
        for plot in self.members:
            if plot is not source:
                plot.set_x_range(x0, x1)

    def show_range(self, x0: float, x1: float) -> None:
        """Show [x0, x1] on every member and stop following (e.g. jump to a segment)."""
        self.following = False
        self._apply(x0, x1, 0.02)

    def _apply(self, x0: float, x1: float, padding: float) -> None:
        for plot in self.members:
            plot.set_x_range(x0, x1, padding)
        if self.members:
            (a, b), _ = self.members[0].vb.viewRange()
            self.range = (a, b)


class PlotView:
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

    _hovered: weakref.ref | None = None  # the plot whose readout shows (one at a time)

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

    # -- items ---------------------------------------------------------------
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

    # -- text ----------------------------------------------------------------
    def set_title(self, text: str) -> None:
        """Set the title at the top left."""
        if text != self._title:
            self._title = text
            self.plot.setTitle(
                "&nbsp;&nbsp;" + html.escape(text), color=FOREGROUND, size="11pt", justify="left"
            )
            self.title_row_height()

    def title(self) -> str:
        """The title text."""
        return self._title

    def title_shown(self) -> bool:
        """False while the legend needs the title's room (a narrow plot)."""
        return self.plot.titleLabel.item.isVisible()

    def set_legend_columns(self, columns: int) -> None:
        """The legend's columns when the title has room beside it; when it has not, the
        legend takes more rows (up to three) before the title gives way."""
        self._legend_columns = max(1, int(columns))
        if self.legend.columnCount != self._legend_columns:
            self.legend.setColumnCount(self._legend_columns)
        self._fit_title()

    def _legend_width(self, columns: int) -> float:
        """The legend's width in ``columns`` columns (rows filled first, as pyqtgraph does)."""
        items = self.legend.items
        spacing = self.legend.layout.horizontalSpacing()
        left, _, right, _ = self.legend.layout.getContentsMargins()
        total = left + right + spacing * (2 * columns - 1)
        for c in range(columns):
            column = items[c::columns]
            if column:
                total += max(sample.boundingRect().width() for sample, _ in column)
                total += max(label.boundingRect().width() for _, label in column)
        return total

    def _fit_title(self) -> None:
        """Keep the title beside the legend: the legend in more rows if that makes room,
        else (a narrow plot) the legend, which names the metric too, wins."""
        if self._arranging:
            return
        label = self.plot.titleLabel
        text = label.item
        title_right = label.geometry().x() + text.pos().x() + text.boundingRect().width()
        room = self.plot.geometry().width() - 12 - 2 * BUTTON_W - (title_right + 6)
        items = self.legend.items
        fits = True
        if items:
            n = len(items)
            wanted = min(self._legend_columns, n)
            options = [wanted] + [c for c in (-(-n // 2), -(-n // 3)) if c < wanted]
            chosen = next((c for c in options if self._legend_width(c) <= room), wanted)
            fits = self._legend_width(chosen) <= room
            if chosen != self.legend.columnCount:
                self._arranging = True
                try:
                    self.legend.setColumnCount(chosen)
                finally:
                    self._arranging = False
                self._fit_legend_row()
        if fits != text.isVisible():
            text.setVisible(fits)

    def _fit_legend_row(self) -> None:
        """The title row takes the legend's height (two rows of entries in a narrow plot),
        so the legend sits above the view box instead of over the newest data."""
        # the bottom of its last row of text (its box and label items are taller: pyqtgraph
        # sizes them without the negative row spacing)
        legend = self.legend
        bottom = max(
            (
                label.mapRectToParent(
                    label.item.mapRectToParent(label.item.boundingRect())
                ).bottom()
                for _, label in legend.items
            ),
            default=0.0,
        )
        if bottom != legend.text_bottom:
            legend.text_bottom = bottom
            legend.update()
        need = max(TITLE_ROW, int(np.ceil(legend.pos().y() + bottom)) + 2)
        if need != self._title_row:
            self._title_row = need
            self.title_row_height()

    def title_row_height(self) -> None:
        """Give the title row its height again (pyqtgraph's ``setTitle`` fixes it at 30 px)."""
        self.plot.titleLabel.setMaximumHeight(self._title_row)
        self.plot.layout.setRowFixedHeight(0, self._title_row)

    def set_x_label(self, text: str) -> None:
        """Set the bottom axis label."""
        self.plot.setLabel("bottom", text, color=FOREGROUND)

    def legend_labels(self) -> list[str]:
        """Legend texts in the order shown."""
        return [label.text for _, label in self.legend.items]

    # -- showing -------------------------------------------------------------
    def set_shown(self, shown: bool) -> None:
        """Show or hide the plot; a hidden plot skips its redraws (see subclasses)."""
        self.shown = shown
        if not shown:
            self.hide_readout()
        self.widget.setVisible(shown)
        if shown and self.group is not None and self.group.range is not None:
            self.set_x_range(*self.group.range)

    # -- x -------------------------------------------------------------------
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

    # -- y -------------------------------------------------------------------
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

    # -- mouse ---------------------------------------------------------------
    def _on_mouse_clicked(self, event: object) -> None:
        if event.double() and self.vb.sceneBoundingRect().contains(event.scenePos()):
            self.reset_view()

    def reset_view(self) -> None:
        """Back to the default view: follow the data in x, y from the data."""
        if self.group is not None:
            self.group.reset()
        self.y_range = None
        self.refresh_range()

    def _on_mouse_moved(self, pos: QPointF) -> None:
        if not self.shown or not self.vb.sceneBoundingRect().contains(pos):
            self.hide_readout()
            return
        point = self.vb.mapSceneToView(pos)
        area = self.readout_area()
        rows = min(MAX_READOUT_ROWS, max(1, int((area.height() - 8) / _readout_line()) - 1))
        text = self._readout_text(point.x(), rows)
        if not text:
            self.hide_readout()
            return
        self._crosshair.setValue(point.x())
        self._crosshair.setVisible(True)
        # Too tall for the data area (long lines wrapped): fewer rows, the rest counted.
        while self._readout_size(text, area).height() > area.height() and rows > 1:
            rows -= 1
            text = self._readout_text(point.x(), rows)
        self._place_readout(self.plot.mapFromScene(pos).x(), area)
        self._readout.setVisible(True)
        active = PlotView._hovered() if PlotView._hovered is not None else None
        if active is not None and active is not self:
            active.hide_readout()  # one readout at a time, in the plot under the cursor
        PlotView._hovered = weakref.ref(self)

    def _readout_text(self, x: float, rows: int) -> str:
        self.max_readout_rows = rows
        try:
            return self.readout(x)
        finally:
            self.max_readout_rows = MAX_READOUT_ROWS

    def readout_area(self) -> QRectF:
        """The data area (the view box) in the plot's pixels, less a small margin."""
        rect = self.vb.mapRectToItem(self.plot, self.vb.boundingRect())
        m = READOUT_MARGIN
        return rect.adjusted(m, m, -m, -m)

    def _readout_size(self, text: str, area: QRectF) -> QRectF:
        """Set the readout's text, wrapped to the area's width if wider; its size in px."""
        item = self._readout
        item.setTextWidth(-1)
        item.setHtml(text)
        if item.boundingRect().width() > area.width():
            item.setTextWidth(max(40.0, area.width() - 2))
        return item.boundingRect()

    def _place_readout(self, cursor_x: float, area: QRectF) -> None:
        """Beside the cursor (right of it, or left where the right has no room), at the
        top of the data area, never past its edges."""
        size = self._readout.boundingRect()
        w = size.width()
        left = cursor_x + READOUT_GAP
        if left + w > area.right():
            left = cursor_x - READOUT_GAP - w
        left = min(max(left, area.left()), max(area.left(), area.right() - w))
        self._readout.setPos(left, area.top())

    def readout_rect(self) -> QRectF:
        """Where the readout is drawn, in the plot's pixels (for tests and tools)."""
        return self._readout.mapRectToItem(self.plot, self._readout.boundingRect())

    def readout_shown(self) -> bool:
        """Whether the hover readout is visible now."""
        return self._readout.isVisible()

    def hide_readout(self) -> None:
        """Hide the hover readout and the crosshair (the mouse left the plot)."""
        self._crosshair.setVisible(False)
        self._readout.setVisible(False)
        if PlotView._hovered is not None and PlotView._hovered() is self:
            PlotView._hovered = None

    def readout(self, x: float) -> str:
        """HTML shown while hovering at ``x`` (empty: nothing shown). Override this."""
        return ""


def _readout_line() -> float:
    """The height of one readout row in px (the readout's font)."""
    font = QFont()
    font.setPointSizeF(READOUT_PT)
    return QFontMetricsF(font).lineSpacing()


class _Legend(pg.LegendItem):
    """pyqtgraph's legend, its box drawn to the bottom of its last row of text: pyqtgraph
    sizes its rows without their negative spacing, so the box ran ~15 px lower, over
    the data the title row keeps clear."""

    text_bottom = 0.0  # in its own coordinates (0: unknown, the whole box)

    def paint(self, p: object, *args: object) -> None:
        """Draw the frame (the labels and samples are items of their own); an empty
        legend (a line plot's key is in its title) draws nothing, not a dash."""
        if not self.frame or not self.items:
            return
        rect = self.boundingRect()
        if self.text_bottom > 0:
            rect.setHeight(min(rect.height(), self.text_bottom + 3))
        p.setPen(self.opts["pen"])
        p.setBrush(self.opts["brush"])
        p.drawRect(rect)
