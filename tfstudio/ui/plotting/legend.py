"""A plot's title row: the title at the left, the legend beside it, never over the data."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from tfstudio.ui.plotting.style import FOREGROUND

BUTTON_W = 34
TITLE_ROW = 36  # px: the title row, tall enough for a one-row legend


class TitleRow:
    """The part of :class:`~tfstudio.ui.plotting.view.PlotView` that lays out its title
    and legend in one row."""

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
            # none fits: the narrowest (labels squeezed into a narrower room wrap, and
            # wrapped labels make every row twice as tall)
            narrowest = min(options, key=self._legend_width)
            chosen = next((c for c in options if self._legend_width(c) <= room), narrowest)
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


class _Legend(pg.LegendItem):
    """pyqtgraph's legend, its box drawn to the bottom of its last row of text: pyqtgraph
    sizes its rows without their negative spacing, so the box ran ~15 px lower, over
    the data the title row keeps clear."""

    text_bottom = 0.0  # in its own coordinates (0: unknown, the whole box)

    def updateSize(self) -> None:  # noqa: N802 (pyqtgraph API)
        """Its size from its entries' preferred sizes. pyqtgraph sums their current
        sizes, which the layout had stretched to the size set before: a legend that was
        once taller (entries wrapped, more rows while runs came in) kept rows twice as
        tall as their text, the samples drawn below their labels."""
        if self.size is not None:
            return
        layout = self.layout
        heights: list[float] = []
        width = 0.0
        for row in range(layout.rowCount()):
            hints = [
                item.effectiveSizeHint(Qt.SizeHint.PreferredSize)
                for col in range(layout.columnCount())
                if (item := layout.itemAt(row, col))
            ]
            if hints:
                heights.append(max(h.height() for h in hints))
                gaps = layout.horizontalSpacing() * (len(hints) - 1)
                width = max(width, sum(h.width() for h in hints) + gaps)
        left, top, right, bottom = layout.getContentsMargins()
        height = sum(heights) + layout.verticalSpacing() * max(0, len(heights) - 1)
        self.setGeometry(0, 0, width + left + right, max(0.0, height) + top + bottom)

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
