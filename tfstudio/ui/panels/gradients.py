"""Gradients view: the global gradient norm, and per variable its norm and distribution."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from tfstudio.ui.panels.inspector_plots import HeatmapPlot, LinePlot
from tfstudio.ui.panels.inspector_store import InspectorStore

MAX_ROWS = 24


class GradientsView(QWidget):
    """Global norm on top; one row per variable: gradient heat map and norm line.

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
        self.rows: dict[str, tuple[QLabel, HeatmapPlot, LinePlot, QWidget]] = {}
        self._drawn = -1
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.info = QLabel("No gradients sampled yet.")
        self.info.setContentsMargins(8, 4, 8, 4)
        self.info.setWordWrap(True)
        outer.addWidget(self.info)
        self.global_plot = LinePlot("global gradient norm", "norm", paint_clock)
        self.global_plot.widget.setMaximumHeight(220)
        outer.addWidget(self.global_plot.widget)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        body = QWidget()
        self.body_layout = QVBoxLayout(body)
        self.body_layout.addStretch(1)
        self.scroll.setWidget(body)
        outer.addWidget(self.scroll, 1)

    def set_selection(self, path: str | None) -> None:
        """Show only the variables of ``path``; None: all."""
        self.selection = path
        self._drawn = -1
        self.refresh()

    def paths(self) -> list[str]:
        """The variables shown now."""
        known = set(self.store.gradients)
        return [p for p in self.store.variables_under(self.selection) if p in known][:MAX_ROWS]

    def refresh(self) -> None:
        """Redraw if the store changed since the last draw."""
        if self._drawn == self.store.version:
            return
        self._drawn = self.store.version
        self.global_plot.set_line("global norm", *self.store.global_norm.series("norm"), "#000000")
        self.global_plot.done()
        paths = self.paths()
        if list(self.rows) != paths:
            for *_, widget in self.rows.values():
                widget.setParent(None)
                widget.deleteLater()
            self.rows = {}
            for path in paths:
                widget = QWidget()
                layout = QVBoxLayout(widget)
                layout.setContentsMargins(0, 4, 0, 4)
                header = QLabel(path)
                layout.addWidget(header)
                plots = QHBoxLayout()
                heat = HeatmapPlot("gradient distribution", self.paint_clock, "gradient")
                norm = LinePlot("gradient norm", "", self.paint_clock)
                plots.addWidget(heat.widget, 3)
                plots.addWidget(norm.widget, 2)
                layout.addLayout(plots)
                self.body_layout.insertWidget(self.body_layout.count() - 1, widget)
                self.rows[path] = (header, heat, norm, widget)
        for path, (header, heat, norm, _) in self.rows.items():
            history = self.store.gradients[path]
            last = {k: v[-1] for k, v in history.scalars.items() if v}
            header.setText(
                f"<b>{path}</b> — gradient norm {last.get('norm', 0):.4g}, "
                f"min {last.get('min', 0):.4g}, max {last.get('max', 0):.4g}"
            )
            heat.set_history(history)
            norm.set_line("norm", *history.series("norm"))
            norm.done()
        if self.store.gradients:
            g = self.store.global_norm
            self.info.setText(
                f"Gradients the optimizer applied, sampled at {len(g.steps)} steps; "
                f"global norm now {g.scalars['norm'][-1]:.4g}. " + self.store.status_text()
            )
