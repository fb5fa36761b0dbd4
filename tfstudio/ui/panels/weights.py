"""Weights view: per variable, its distribution over steps and its statistics as lines.

Small variables (at most 16 values: a scalar W or b, a bias) show the values
themselves as lines, so a linear fit is seen converging.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from tfstudio.ui.panels.inspector_plots import HeatmapPlot, LinePlot
from tfstudio.ui.panels.inspector_store import History, InspectorStore

MAX_ROWS = 24


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


class VariableRow(QWidget):
    """One variable: a header line, its histogram heat map and a lines plot."""

    def __init__(self, path: str, paint_clock: list[float], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = path
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        self.header = QLabel(path)
        self.header.setTextFormat(self.header.textFormat().RichText)
        layout.addWidget(self.header)
        plots = QHBoxLayout()
        self.heatmap = HeatmapPlot("distribution over steps", paint_clock)
        self.lines = LinePlot("statistics", "", paint_clock)
        plots.addWidget(self.heatmap.widget, 3)
        plots.addWidget(self.lines.widget, 2)
        layout.addLayout(plots)

    def draw(self, history: History, shape: tuple[int, ...]) -> None:
        """Show the variable's history."""
        steps = np.asarray(history.steps, float)
        last = {k: v[-1] for k, v in history.scalars.items() if v}
        self.header.setText(
            f"<b>{self.path}</b> {_shape_text(shape)} — mean {last.get('mean', 0):.4g}, "
            f"std {last.get('std', 0):.4g}, min {last.get('min', 0):.4g}, "
            f"max {last.get('max', 0):.4g}, L2 norm {last.get('norm', 0):.4g}, "
            f"zeros {last.get('zero_fraction', 0):.1%}"
        )
        self.heatmap.set_history(history)
        self.heatmap.set_line("mean", *history.series("mean"))
        values = history.values
        if values and values[-1]:
            self.lines.set_title("values")
            width = len(values[-1])
            for j in range(width):
                ys = np.array([v[j] if len(v) > j else np.nan for v in values], float)
                label = "value" if width == 1 else f"[{j}]"
                self.lines.set_line(label, steps, ys)
        else:
            self.lines.set_title("L2 norm and std")
            self.lines.set_line("L2 norm", *history.series("norm"))
            self.lines.set_line("std", *history.series("std"))
        self.lines.done()


class WeightsView(QWidget):
    """Every trainable variable (or those of the selected layer), one row each.

    Args:
        store: the inspector's data.
        paint_clock: shared paint-time accumulator.
    """

    def __init__(
        self, store: InspectorStore, paint_clock: list[float], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.paint_clock = paint_clock
        self.selection: str | None = None
        self.rows: dict[str, VariableRow] = {}
        self._drawn = -1
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.info = QLabel("No weights sampled yet: run a script that calls fit().")
        self.info.setContentsMargins(8, 4, 8, 4)
        self.info.setWordWrap(True)
        outer.addWidget(self.info)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.body = QWidget()
        self.body_layout = QVBoxLayout(self.body)
        self.body_layout.addStretch(1)
        self.scroll.setWidget(self.body)
        outer.addWidget(self.scroll, 1)

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
        paths = self.paths()
        if list(self.rows) != paths:
            for row in self.rows.values():
                row.setParent(None)
                row.deleteLater()
            self.rows = {}
            for path in paths:
                row = VariableRow(path, self.paint_clock)
                self.body_layout.insertWidget(self.body_layout.count() - 1, row)
                self.rows[path] = row
        for path, row in self.rows.items():
            row.draw(self.store.weights[path], self.store.shapes.get(path, ()))
        total = len(self.store.weights)
        if total:
            shown = f"{len(paths)} of {total}" if len(paths) < total else f"all {total}"
            self.info.setText(
                f"Trainable variables: {shown}. Heat map: values over steps (brighter: more "
                "values there); white line: mean. " + self.store.status_text()
            )
