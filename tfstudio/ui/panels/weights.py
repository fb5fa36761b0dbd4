"""Weights view: per variable, its distribution over steps and its statistics as lines.

Small variables (at most 16 values: a scalar W or b, a bias) show the values
themselves as lines, so a linear fit is seen converging; a single value (a scalar)
shows only its line, across the row (a distribution of one value says nothing).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QWidget

from tfstudio.core.inspector_store import History, InspectorStore
from tfstudio.ui.panels.variable_rows import VariableRow, VariableRowsView, one_value


def _shape_text(shape: tuple[int, ...], values: list | None = None, counted: int = 0) -> str:
    if not shape and values is not None and not any(values):  # a foreign histogram's
        if not counted:
            return "(shape not recorded)"
        return f"({counted} value{'' if counted == 1 else 's'}, shape not recorded)"
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _counted(history: History) -> int:
    """How many values the last sample's histogram counts."""
    return int(sum(history.hists[-1])) if history.hists else 0


def _figure(value: float, spec: str) -> str:
    """A statistic as text; "not recorded" where the record has none (never "nan")."""
    return "not recorded" if value != value else format(value, spec)


def _single(shape: tuple[int, ...], values: list) -> bool:
    """Whether a variable holds one value whose values came (a scalar W or b)."""
    return bool(values and len(values[-1]) == 1 and one_value(shape))


class WeightsView(VariableRowsView):
    """Every trainable variable (or those of the selected layer), one row each.

    Args:
        store: the inspector's data.
        paint_clock: shared paint-time accumulator.
    """

    def __init__(
        self, store: InspectorStore, paint_clock: list[float], parent: QWidget | None = None
    ) -> None:
        super().__init__(
            store,
            paint_clock,
            "No weights sampled yet: run a script that trains (fit or a custom loop).",
            parent,
        )

    def make_row(self, path: str) -> VariableRow:
        """A heat map of the values over steps and a lines plot."""
        return VariableRow(
            path, self.paint_clock, "distribution over steps", lines_title="statistics"
        )

    def draw_row(self, path: str, row: VariableRow) -> None:
        """Header with the last statistics; small variables plot their values."""
        history = self.store.weights[path]
        shape = self.store.shapes.get(path, ())
        steps = np.asarray(history.steps, float)
        last = {k: v[-1] for k, v in history.scalars.items() if v}
        values = history.values
        single = _single(shape, values)
        row.show_heatmap(not single)
        if single:  # one value (a scalar W or b): its line says it all
            row.set_header(f"<b>{path}</b> {_shape_text(shape)} — value {values[-1][0]:.4g}")
        else:
            row.set_header(
                f"<b>{path}</b> {_shape_text(shape, values, _counted(history))} — mean "
                f"{_figure(last.get('mean', 0), '.4g')}, "
                f"std {_figure(last.get('std', 0), '.4g')}, min {last.get('min', 0):.4g}, "
                f"max {last.get('max', 0):.4g}, L2 norm {_figure(last.get('norm', 0), '.4g')}, "
                f"zeros {_figure(last.get('zero_fraction', 0), '.1%')}"
            )
            row.heatmap.set_history(history)
            row.heatmap.set_line("mean", *history.series("mean"))
        if values and values[-1]:
            row.lines.set_title("values")
            width = len(values[-1])
            for j in range(width):
                ys = np.array([v[j] if len(v) > j else np.nan for v in values], float)
                label = "value" if width == 1 else f"[{j}]"
                row.lines.set_line(label, steps, ys)
        else:
            xs, norm = history.series("norm")
            if len(norm) and np.isnan(norm).all():  # a foreign histogram: no norm recorded
                row.lines.set_title("mean and std")
                row.lines.set_line("mean", *history.series("mean"))
            else:
                row.lines.set_title("L2 norm and std")
                row.lines.set_line("L2 norm", xs, norm)
            row.lines.set_line("std", *history.series("std"))
        row.lines.done()

    def describe(self, shown: int) -> str:
        """How many variables are shown of how many."""
        total = len(self.store.weights)
        if not total:  # after a run without any: why none came (or: being read)
            said = self.store.ended or self.store.loading
            return self.store.empty_text("weights") if said else ""
        which = f"{shown} of {total}" if shown < total else f"all {total}"
        store = self.store
        maps = any(not _single(store.shapes.get(p, ()), h.values) for p, h in store.weights.items())
        legend = (
            "Heat map: values over steps (brighter: more values there); white line: mean. "
            if maps
            else "Each holds one value: its line. "
        )
        return f"Trainable variables: {which}. " + legend + store.status_text()
