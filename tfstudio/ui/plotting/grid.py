"""Horizontal grid lines drawn inside a plot's view box, apart from its axis."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainter, QPen

GRID_ALPHA = 38  # what pyqtgraph's showGrid(alpha=0.15) gives major ticks


class HorizontalGrid(pg.GraphicsObject):
    """Lines across the plot at the left axis's major ticks.

    pyqtgraph draws a grid as part of its axis item, whose bounding rectangle then
    covers the whole plot: every curve update repaints the axis's tick labels too,
    and that was a third of a live plot's paint time. Drawn here, the grid costs a
    few lines per paint, and the axis repaints only when its range moves.

    Args:
        axis: the axis whose major ticks the lines follow.
        pen: the lines' pen (cosmetic: one pixel wide at any zoom).
    """

    def __init__(self, axis: pg.AxisItem, pen: QPen) -> None:
        super().__init__()
        self.axis = axis
        self.pen = pen
        self.values: list[float] = []  # y of each line, in view coordinates
        self._rect = QRectF()

    def viewRangeChanged(self) -> None:  # noqa: N802 (pyqtgraph API)
        """The view's range moved: the lines follow the axis's major ticks."""
        self._follow_view()

    def viewTransformChanged(self) -> None:  # noqa: N802 (pyqtgraph API)
        """The view was resized (same range, more or fewer ticks): follow it too."""
        super().viewTransformChanged()  # drops pyqtgraph's cached view rectangle
        self._follow_view()

    def _follow_view(self) -> None:
        view = self.getViewBox()
        if view is None:
            return
        rect = view.viewRect()
        self.prepareGeometryChange()
        self._rect = QRectF(rect)
        lo, hi = sorted((rect.top(), rect.bottom()))
        levels = self.axis.tickValues(lo, hi, max(1.0, float(view.height())))
        self.values = [v for v in levels[0][1] if lo <= v <= hi] if levels else []
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        """The view's visible rectangle: the lines span it."""
        return QRectF(self._rect)

    def paint(self, painter: QPainter, *args: object) -> None:
        """Draw one line per major tick."""
        painter.setPen(self.pen)
        left, right = self._rect.left(), self._rect.right()
        for y in self.values:
            painter.drawLine(QPointF(left, y), QPointF(right, y))


def grid_pen(colour: str) -> QPen:
    """The grid's pen: the axis colour, faint."""
    colour_ = pg.mkColor(colour)
    colour_.setAlpha(GRID_ALPHA)
    return pg.mkPen(colour_, width=1)
