"""A plot's hover readout: a crosshair and a box of values beside the cursor."""

from __future__ import annotations

import weakref

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QFont, QFontMetricsF

READOUT_PT = 9  # the hover readout's font size (its HTML says it too)
READOUT_GAP = 12  # px between the cursor and the readout box
READOUT_MARGIN = 3  # px the readout box keeps from the data area's edges
MAX_READOUT_ROWS = 12  # rows of values a readout lists at most (fewer where the plot is low)


class HoverReadout:
    """The part of :class:`~tfstudio.ui.plotting.view.PlotView` that shows what is under the
    cursor: :meth:`readout` (override it) in a box beside a crosshair, one plot at a time."""

    _hovered: weakref.ref | None = None  # the plot whose readout shows (one at a time)

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
        active = HoverReadout._hovered() if HoverReadout._hovered is not None else None
        if active is not None and active is not self:
            active.hide_readout()  # one readout at a time, in the plot under the cursor
        HoverReadout._hovered = weakref.ref(self)

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
        if HoverReadout._hovered is not None and HoverReadout._hovered() is self:
            HoverReadout._hovered = None

    def readout(self, x: float) -> str:
        """HTML shown while hovering at ``x`` (empty: nothing shown). Override this."""
        return ""


def _readout_line() -> float:
    """The height of one readout row in px (the readout's font)."""
    font = QFont()
    font.setPointSizeF(READOUT_PT)
    return QFontMetricsF(font).lineSpacing()
