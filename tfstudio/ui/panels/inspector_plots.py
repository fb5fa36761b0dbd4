"""Plot pieces of the inspector views: a histogram-over-time heat map and a line plot."""

from __future__ import annotations

import html
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFont, QFontMetricsF

from tfstudio.core.inspector_store import History, density_image
from tfstudio.ui.plotting import BACKGROUND, FOREGROUND, PlotView, TimedPlotWidget
from tfstudio.ui.plotting.view import BUTTON_W

HEATMAP_HEIGHT = 170
LINES_HEIGHT = 170
# a line key's layouts, in order of preference: (font size in pt, rows)
KEY_LAYOUTS = ((11.0, 1), (9.0, 1), (9.0, 2))
KEY_MORE = "<!--more-->"  # ends a key row whose "+N" stands for names left out
COLOURS = ("#1f77b4", "#e8590c", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
COLORMAP = "viridis"


def style_axes(plot: pg.PlotItem, x_label: str = "step", y_label: str = "") -> None:
    """Axis colours and labels shared by the inspector's plots."""
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        axis.setPen(pg.mkPen(FOREGROUND))
        axis.setTextPen(pg.mkPen(FOREGROUND))
        axis.enableAutoSIPrefix(False)
    plot.setLabel("bottom", x_label, color=FOREGROUND)
    if y_label:
        plot.setLabel("left", y_label, color=FOREGROUND)


class HeatmapPlot:
    """A distribution over steps: step on x, value on y, density as colour (brighter: more).

    Lines (e.g. the mean) can be drawn on top.

    Args:
        title: text above the plot.
        paint_clock: shared paint-time accumulator (the bridge budgets redraws with it).
    """

    def __init__(self, title: str, paint_clock: list[float], y_label: str = "value") -> None:
        self.widget = TimedPlotWidget(paint_clock, background=BACKGROUND)
        self.widget.setMinimumHeight(HEATMAP_HEIGHT)
        self.plot: pg.PlotItem = self.widget.getPlotItem()
        self.plot.setTitle(title, color=FOREGROUND, size="9pt")
        self.plot.hideButtons()
        style_axes(self.plot, "step", y_label)
        self.image = pg.ImageItem()
        self.image.setColorMap(pg.colormap.get(COLORMAP))
        self.plot.addItem(self.image)
        self.lines: dict[str, pg.PlotDataItem] = {}
        self.outlines: dict[str, pg.PlotDataItem] = {}  # each line's dark outline, under it
        self.has_image = False

    def set_history(self, history: History) -> None:
        """Draw the histograms of ``history`` over its steps."""
        made = density_image(history.steps, history.hists, history.ranges)
        if made is None:
            return
        image, (x0, x1, y0, y1) = made
        self.image.setImage(image, levels=(0.0, 1.0), autoLevels=False)
        self.image.setRect(QRectF(x0, y0, max(x1 - x0, 1e-9), max(y1 - y0, 1e-12)))
        self.plot.setXRange(x0, x1, padding=0)
        self.plot.setYRange(y0, y1, padding=0.02)
        self.has_image = True

    def set_line(self, label: str, xs: np.ndarray, ys: np.ndarray, colour: str = "#ffffff") -> None:
        """Draw (or update) a line over the image, on a dark outline: a white line alone
        vanished where the colour map is brightest (the bulk of the values, where a mean is)."""
        item = self.lines.get(label)
        if item is None:
            outline = pg.PlotDataItem(pen=pg.mkPen("#000000", width=3.6))
            outline.setZValue(9)
            self.plot.addItem(outline)
            self.outlines[label] = outline
            item = pg.PlotDataItem(pen=pg.mkPen(colour, width=1.4), name=label)
            item.setZValue(10)
            self.plot.addItem(item)
            self.lines[label] = item
        self.outlines[label].setData(xs, ys)
        item.setData(xs, ys)


class LinePlot(PlotView):
    """A few named lines over steps, with the shared plot's y range, buttons and hover.

    Args:
        title: text at the top left.
        y_label: left axis label.
        paint_clock: shared paint-time accumulator.
    """

    def __init__(self, title: str, y_label: str, paint_clock: list[float]) -> None:
        super().__init__(title, "step", y_label, paint_clock)
        self.widget.setMinimumHeight(LINES_HEIGHT)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self._keyed: str | None = None  # the title with its colour key, as last set
        if self.group is not None:
            self.group.finish()  # samples are sparse: let the data fill the width
        # the key takes the room it has, never more: a title wider than the plot would
        # widen the plot past its widget (its right part, newest steps, cut off)
        self.plot.titleLabel.setMinimumWidth(0)
        self.plot.geometryChanged.connect(self._show_key)

    def set_line(
        self, label: str, xs: np.ndarray, ys: np.ndarray, colour: str | None = None
    ) -> None:
        """Draw (or update) the line called ``label``; points are marked when few."""
        item = self.curves.get(label)
        if item is None:
            colour = colour or COLOURS[len(self.curves) % len(COLOURS)]
            item = pg.PlotDataItem(
                pen=pg.mkPen(colour, width=1.6),
                name=label,
                symbol="o",
                symbolSize=4,
                symbolBrush=colour,
                symbolPen=None,
            )
            self.add_item(item, z=1)
            self.curves[label] = item
        if len(xs) > 200 and item.opts["symbol"] is not None:
            item.setSymbol(None)
        item.setData(np.asarray(xs, float), np.asarray(ys, float))

    def done(self) -> None:
        """After the lines changed: follow the data and fit the y range."""
        self.follow()
        self.refresh_range()
        self._show_key()

    def set_title(self, text: str) -> None:
        """Set the title (the colour key, if any, is added again at :meth:`done`)."""
        if text != self.title():
            self._keyed = None
        super().set_title(text)

    def _show_key(self) -> None:
        """With two lines or more, the title becomes their names, each in its colour (a key):
        as many as fit left of the buttons, then ``+N`` (hovering names every line)."""
        if len(self.curves) < 2:
            return
        title = self.plot.titleLabel
        # from the title's left edge to the buttons, in the widget's pixels, less the
        # margins of the label's text item (~10 px in all) and a gap
        left = self.widget.mapFromScene(title.mapToScene(0.0, 0.0)).x()
        buttons = self.widget.width() - 10 - 2 * BUTTON_W  # where _place_buttons puts them
        room = buttons - left - 16
        entries = list(self.curves.items())
        # every name on one row at the usual size, else smaller, else on two rows, else
        # as many as fit and "+N"
        for size, rows in KEY_LAYOUTS:
            font = QFont(title.item.font())
            font.setPointSizeF(size)
            lines = self._key(entries, QFontMetricsF(font).horizontalAdvance, room, rows)
            if not lines[-1].endswith(KEY_MORE):
                break
        text = "<br>".join("&nbsp;&nbsp;" + line for line in lines if line)
        if text != self._keyed:
            self._keyed = text
            self.plot.setTitle(text, color=FOREGROUND, size=f"{size:g}pt", justify="left")
            title.setMinimumWidth(0)
            self.title_row_height()

    @staticmethod
    def _key(
        entries: list[tuple[str, pg.PlotDataItem]],
        width: Callable[[str], float],
        room: float,
        rows: int,
    ) -> list[str]:
        """The key's rows (HTML), each within ``room`` px: as many entries as fit, then
        ``+N`` (ending in :data:`KEY_MORE`) for the rest."""
        pad = width("  ")
        lines: list[str] = []
        line: list[str] = []
        used = pad
        for i, (label, item) in enumerate(entries):
            entry = width(f"\u25a0 {label}  ")
            rest = len(entries) - i - 1  # entries after this one: the last row keeps "+N"
            if line and used + entry > room and len(lines) < rows - 1:
                lines.append("&nbsp;&nbsp;".join(line))  # on the next row
                line, used = [], pad
            keep = width(f"+{rest}") if rest and len(lines) == rows - 1 else 0.0
            if used + entry + keep > room:
                more = f"+{rest + 1}"
                if line or used + width(more) <= room:  # (a plot too narrow has no key)
                    line.append(more + KEY_MORE)
                break
            used += entry
            line.append(
                f'<span style="color:{item.opts["pen"].color().name()}">'
                f"&#9632;&nbsp;{html.escape(label)}</span>"
            )
        lines.append("&nbsp;&nbsp;".join(line))
        return lines

    def readout(self, x: float) -> str:
        """Each line's value at the sample nearest ``x``."""
        rows = []
        for label, item in self.curves.items():
            xs, ys = item.xData, item.yData
            if xs is None or not len(xs):
                continue
            i = int(np.clip(np.searchsorted(xs, x), 0, len(xs) - 1))
            if i > 0 and abs(xs[i - 1] - x) < abs(xs[i] - x):
                i -= 1
            rows.append(f"{html.escape(label)}: {ys[i]:.5g}")
            step = int(xs[i])
        if not rows:
            return ""
        return f"<b>step {step}</b><br>" + "<br>".join(rows)
