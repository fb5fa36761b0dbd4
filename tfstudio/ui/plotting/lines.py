"""Vertical markers: epoch boundaries and labelled segment starts (fits, loops)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QPainter, QPen

from tfstudio.ui.plotting.style import SEGMENT_LINE

LABEL_GAP_PX = 4  # least room between two labels
LABEL_PAD_PX = 3  # label's distance from its line


class VerticalLines(pg.GraphicsObject):
    """Many full-height vertical lines drawn as one item (epoch boundaries).

    One item instead of one ``InfiniteLine`` each: a view change then costs one
    bounding-rect update, not hundreds. Lines closer than ``min_gap_px`` are
    thinned (every 2nd, 4th, ... line kept), so thousands of epochs stay legible.
    """

    def __init__(self, pen: QPen, min_gap_px: float = 6.0) -> None:
        super().__init__()
        self._pen = QPen(pen)
        self._pen.setCosmetic(True)
        self.min_gap_px = min_gap_px
        self._xs = np.empty(0)
        self.drawn = 0  # lines drawn by the last paint

    def set_positions(self, xs: Sequence[float]) -> None:
        """Replace the x positions (sorted ascending)."""
        self._xs = np.asarray(xs, dtype=np.float64)
        self.update()

    def positions(self) -> np.ndarray:
        """All x positions (drawn or thinned out)."""
        return self._xs

    def visible_positions(self) -> np.ndarray:
        """The positions a paint draws now: those in view, thinned to ``min_gap_px``."""
        vb = self.getViewBox()
        if vb is None or not len(self._xs):
            return self._xs[:0]
        (x0, x1), _ = vb.viewRange()
        lo, hi = np.searchsorted(self._xs, (x0, x1))
        shown = self._xs[lo:hi]
        width = max(1.0, vb.width())
        if len(shown) > 1 and x1 > x0:
            gap_px = float(np.min(np.diff(shown))) * width / (x1 - x0)
            stride = 1
            while gap_px * stride < self.min_gap_px and stride < len(shown):
                stride *= 2
            shown = shown[stride - 1 :: stride]
        return shown

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        """The whole view: the lines span it top to bottom."""
        vb = self.getViewBox()
        return QRectF() if vb is None else vb.viewRect()

    def dataBounds(self, axis: int, frac: float = 1.0, orthoRange: object = None) -> None:  # noqa: N802, N803
        """Never widen the auto range."""
        return None

    def viewRangeChanged(self) -> None:  # noqa: N802 (pyqtgraph hook)
        """The bounding rect follows the view."""
        self.prepareGeometryChange()

    def paint(self, painter: QPainter, *args: object) -> None:
        """Draw the visible lines."""
        xs = self.visible_positions()
        self.drawn = len(xs)
        if not len(xs):
            return
        rect = self.boundingRect()
        painter.setPen(self._pen)
        top, bottom = rect.top(), rect.bottom()
        painter.drawLines([QLineF(x, top, x, bottom) for x in xs.tolist()])


@dataclass(frozen=True, slots=True)
class Segment:
    """One labelled part of a run's x axis (a ``fit`` call, a custom loop).

    Args:
        start: x where the segment starts (its marker line).
        short: label when room is scarce, e.g. ``"3"``.
        name: label when there is room, e.g. ``"3 encoder"``.
        full: hover text, e.g. ``"fit 3: encoder (Functional)"``.
    """

    start: float
    short: str
    name: str
    full: str


class SegmentMarkers:
    """Segment starts on one plot: a dashed line each and a label that never overlaps.

    Each label shows ``name`` when there is room before the next segment, else
    ``short``, else nothing; hovering a label shows ``full`` as its tooltip. The
    layout is redone whenever the view's range or size changes.

    Args:
        view_box: the plot's ViewBox (markers are added to it, outside its bounds).
    """

    def __init__(self, view_box: pg.ViewBox, colour: str = SEGMENT_LINE) -> None:
        self.view_box = view_box
        self.colour = colour
        self.lines = VerticalLines(
            pg.mkPen(colour, width=1.5, style=Qt.PenStyle.DashDotLine), min_gap_px=3.0
        )
        self.lines.setZValue(-5)
        view_box.addItem(self.lines, ignoreBounds=True)
        self.segments: list[Segment] = []
        self.labels: list[pg.TextItem] = []
        self._texts: list[str] = []  # what each label shows now ("" = hidden)
        self.visible = True
        self._widths: dict[str, float] = {}  # label text -> pixels
        view_box.sigRangeChanged.connect(self.relayout)
        view_box.sigResized.connect(self.relayout)

    def set_segments(self, segments: Sequence[Segment]) -> None:
        """Show these segments (replaces the previous ones; starts ascending)."""
        self.segments = list(segments)
        self.lines.set_positions([s.start for s in self.segments])
        while len(self.labels) < len(self.segments):
            label = pg.TextItem("", color=self.colour, anchor=(0, 0))
            label.setZValue(20)
            self.view_box.addItem(label, ignoreBounds=True)
            self.labels.append(label)
            self._texts.append("")
        for label, segment in zip(self.labels, self.segments, strict=False):
            label.setToolTip(segment.full)
        for i in range(len(self.segments), len(self.labels)):
            self._show(i, "")
        self.relayout()

    def set_visible(self, visible: bool) -> None:
        """Show or hide every marker (e.g. when segments are overlaid instead)."""
        self.visible = visible
        self.lines.setVisible(visible)
        self.relayout()

    def shown_labels(self) -> list[pg.TextItem]:
        """The label items visible now."""
        return [label for label, text in zip(self.labels, self._texts, strict=False) if text]

    def relayout(self, *_: object) -> None:
        """Choose each label's text (name, short or none) so no two overlap."""
        vb = self.view_box
        n = len(self.segments)
        if not n or not self.visible:
            for i in range(len(self.labels)):
                self._show(i, "")
            return
        (x0, x1), (_, y1) = vb.viewRange()
        width = vb.width()
        if width <= 0 or x1 <= x0:
            return
        scale = width / (x1 - x0)
        px = [(s.start - x0) * scale for s in self.segments]
        right_of_last = -np.inf
        for i, segment in enumerate(self.segments):
            end = px[i + 1] if i + 1 < n else width
            if end <= 0 or px[i] >= width:
                self._show(i, "")
                continue
            left = max(px[i], 0.0) + LABEL_PAD_PX
            if left < right_of_last + LABEL_GAP_PX:
                self._show(i, "")
                continue
            room = min(end, width) - left - LABEL_GAP_PX
            chosen = ""
            for text in (segment.name, segment.short):
                if self._text_width(i, text) <= room:
                    chosen = text
                    break
            self._show(i, chosen)
            if chosen:
                self.labels[i].setPos(x0 + left / scale, y1)
                right_of_last = left + self._text_width(i, chosen)

    def _text_width(self, i: int, text: str) -> float:
        width = self._widths.get(text)
        if width is None:
            label = self.labels[i]
            shown = label.toPlainText()
            label.setHtml(_label_html(text))
            width = self._widths[text] = float(label.textItem.boundingRect().width())
            if shown != text:
                label.setHtml(_label_html(shown))
        return width

    def _show(self, i: int, text: str) -> None:
        label = self.labels[i]
        if text and label.toPlainText() != text:
            label.setHtml(_label_html(text))
        self._texts[i] = text
        label.setVisible(bool(text))


def _label_html(text: str) -> str:
    return f"<span style='font-size:8pt'>{html.escape(text)}</span>"
