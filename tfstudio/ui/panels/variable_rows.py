"""What the weights and gradients views share: a row per variable in a scrolled list.

A :class:`VariableRow` is a header line, a histogram heat map over steps and a
lines plot; a :class:`VariableRowsView` keeps one row per variable shown (all,
or those under the layer selected in the model tree), rebuilt only when that
list changes and redrawn only when the inspector's store has new data, and then only
the rows in the scrolled view: the others are drawn as they are scrolled to (24 rows of
a large model took ~70 ms a sample, of which the ~5 in view take a fifth).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from tfstudio.core.inspector_store import InspectorStore
from tfstudio.ui.panels.inspector_plots import HeatmapPlot, LinePlot
from tfstudio.ui.panels.visibility import in_scroll_view

MAX_ROWS = 24  # rows drawn at most (a large model lists its first 24 variables)


def one_value(shape: tuple[int, ...] | None) -> bool:
    """Whether a variable of this shape holds a single value (``()``, ``(1,)``, ``(1, 1)``);
    False when the shape is not known (a recorded run's foreign histograms)."""
    return shape is not None and all(d == 1 for d in shape)


class VariableRow(QWidget):
    """One variable: a header line, its histogram heat map and a lines plot.

    Args:
        path: the variable's path.
        paint_clock: shared paint-time accumulator.
        heat_title: the heat map's title.
        heat_unit: the heat map's value axis label.
        lines_title: the lines plot's title.
    """

    def __init__(
        self,
        path: str,
        paint_clock: list[float],
        heat_title: str,
        heat_unit: str = "value",
        lines_title: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.path = path
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        self.header = QLabel(path)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        # In a narrow view (the Model dock open) its statistics are cut at the right edge
        # (hover for them all): as the row's minimum width they pushed the lines plot out
        # of sight. (Wrapped, the label's height-for-width stretched every row.)
        self.header.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.header)
        plots = QHBoxLayout()
        self.heatmap = HeatmapPlot(heat_title, paint_clock, heat_unit)
        self.lines = LinePlot(lines_title, "", paint_clock)
        plots.addWidget(self.heatmap.widget, 3)
        plots.addWidget(self.lines.widget, 2)
        layout.addLayout(plots)

    def show_heatmap(self, shown: bool) -> None:
        """Show or hide the heat map (a single value has no distribution to show: its
        lines plot then takes the row's width)."""
        if self.heatmap.widget.isVisibleTo(self) != shown:
            self.heatmap.widget.setVisible(shown)

    def set_header(self, text: str) -> None:
        """The header line (rich text); its tooltip has it whole when a narrow view cuts it."""
        if text != self.header.text():
            self.header.setText(text)
            self.header.setToolTip(text)


class VariableRowsView(QWidget):
    """An info line, an optional plot above the rows, and one row per variable shown.

    Subclasses say which variables have data (:meth:`paths`), make a row
    (:meth:`make_row`), draw it (:meth:`draw_row`) and word the info line
    (:meth:`describe`).

    Args:
        store: the inspector's data.
        paint_clock: shared paint-time accumulator.
        empty_text: the info line before any data arrived.
    """

    def __init__(
        self,
        store: InspectorStore,
        paint_clock: list[float],
        empty_text: str,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.paint_clock = paint_clock
        self.selection: str | None = None
        self.rows: dict[str, VariableRow] = {}
        self._drawn = -1
        self._row_drawn: dict[str, int] = {}  # the store version each row was drawn at
        self.outer = QVBoxLayout(self)
        self.outer.setContentsMargins(0, 0, 0, 0)
        self.info = QLabel(empty_text)
        self.info.setContentsMargins(8, 4, 8, 4)
        self.info.setWordWrap(True)
        self.outer.addWidget(self.info)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.body = QWidget()
        self.body_layout = QVBoxLayout(self.body)
        self.body_layout.addStretch(1)
        self.scroll.setWidget(self.body)
        self.outer.addWidget(self.scroll, 1)
        # Scrolling or resizing brings rows into view: they are drawn at once.
        bar = self.scroll.verticalScrollBar()
        bar.valueChanged.connect(self._draw_in_view)
        bar.rangeChanged.connect(self._draw_in_view)

    def add_top(self, widget: QWidget) -> None:
        """Put ``widget`` between the info line and the rows."""
        self.outer.insertWidget(1, widget)

    def set_selection(self, path: str | None) -> None:
        """Show only the variables of ``path`` (a layer or a variable); None: all."""
        self.selection = path
        self._drawn = -1
        self.refresh()

    def paths(self) -> list[str]:
        """The variables shown now."""
        return self.store.variables_under(self.selection)[:MAX_ROWS]

    def refresh(self) -> None:
        """Redraw if the store changed since the last draw."""
        if self._drawn == self.store.version:
            return
        self._drawn = self.store.version
        self.draw_top()
        paths = self.paths()
        if list(self.rows) != paths:
            for row in self.rows.values():
                row.setParent(None)
                row.deleteLater()
            self.rows = {}
            self._row_drawn = {}
            for path in paths:
                row = self.make_row(path)
                self.body_layout.insertWidget(self.body_layout.count() - 1, row)
                self.rows[path] = row
        self._draw_in_view()
        text = self.describe(len(paths))
        if text:
            self.info.setText(text)

    def _draw_in_view(self, *_: object) -> None:
        """Draw the rows in the scrolled view that missed the last refresh (marked with its
        store version: a row scrolled to before the next refresh is drawn again by it, with
        what :meth:`draw_top` set up for the same data)."""
        version = self._drawn
        for path, row in self.rows.items():
            if self._row_drawn.get(path) != version and in_scroll_view(row, self.scroll):
                self.draw_row(path, row)
                self._row_drawn[path] = version

    def draw_top(self) -> None:
        """Draw what sits above the rows (nothing by default)."""

    def make_row(self, path: str) -> VariableRow:  # pragma: no cover - overridden
        """A new row for ``path``."""
        raise NotImplementedError

    def draw_row(self, path: str, row: VariableRow) -> None:  # pragma: no cover - overridden
        """Draw ``row`` from the store."""
        raise NotImplementedError

    def describe(self, shown: int) -> str:  # pragma: no cover - overridden
        """The info line for ``shown`` rows ("" keeps the current text)."""
        raise NotImplementedError
