"""Gradients view: the global gradient norm, and per variable its norm and distribution."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from tfstudio.core.inspector_store import InspectorStore
from tfstudio.ui.panels.inspector_plots import LinePlot
from tfstudio.ui.panels.variable_rows import MAX_ROWS, VariableRow, VariableRowsView, one_value


class GradientsView(VariableRowsView):
    """Global norm on top; one row per variable: gradient heat map and norm line.

    Args:
        store: the inspector's data.
        paint_clock: shared paint-time accumulator.
    """

    def __init__(
        self, store: InspectorStore, paint_clock: list[float], parent: QWidget | None = None
    ) -> None:
        super().__init__(store, paint_clock, store.empty_text("gradients"), parent)
        self.global_plot = LinePlot("global gradient norm", "norm", paint_clock)
        self.global_plot.widget.setMaximumHeight(220)
        self.global_plot.widget.hide()  # an empty plot until the first gradients
        self.add_top(self.global_plot.widget)

    def paths(self) -> list[str]:
        """The variables shown now (those with a gradient)."""
        known = set(self.store.gradients)
        return [p for p in self.store.variables_under(self.selection) if p in known][:MAX_ROWS]

    def draw_top(self) -> None:
        """The global norm over steps (shown once there is one)."""
        shown = bool(self.store.gradients)
        if self.global_plot.widget.isHidden() == shown:
            self.global_plot.widget.setVisible(shown)
        if not shown:
            return
        self.global_plot.set_line("global norm", *self.store.global_norm.series("norm"), "#000000")
        self.global_plot.done()

    def make_row(self, path: str) -> VariableRow:
        """A heat map of the gradient's values and a line of its norm."""
        return VariableRow(
            path, self.paint_clock, "gradient distribution", "gradient", "gradient norm"
        )

    def draw_row(self, path: str, row: VariableRow) -> None:
        """Header with the last norm/min/max, the heat map and the norm line."""
        history = self.store.gradients[path]
        last = {k: v[-1] for k, v in history.scalars.items() if v}
        single = one_value(self.store.shapes.get(path))
        row.show_heatmap(not single)
        if single:  # a scalar's gradient is one value (min = max): its signed line
            row.set_header(f"<b>{path}</b> — gradient {last.get('min', 0):.4g}")
            row.lines.set_title("gradient")
            row.lines.set_line("gradient", *history.series("min"))
        else:
            row.set_header(
                f"<b>{path}</b> — gradient norm {last.get('norm', 0):.4g}, "
                f"min {last.get('min', 0):.4g}, max {last.get('max', 0):.4g}"
            )
            row.heatmap.set_history(history)
            row.lines.set_line("norm", *history.series("norm"))
        row.lines.done()

    def describe(self, shown: int) -> str:
        """How many steps were sampled and the global norm now (before the first: why
        there are none yet; after a run without any: why none came)."""
        if not self.store.gradients:
            return self.store.empty_text("gradients")
        g = self.store.global_norm
        return (
            f"Gradients the optimizer applied, sampled at {len(g.steps)} steps; "
            f"global norm now {g.scalars['norm'][-1]:.4g}. " + self.store.status_text()
        )
