"""A scatter of one metric against one hyperparameter across the listed runs.

Opened from the Runs panel ("Scatter…"): each run the table lists (its filter applied)
is a point, labelled with its name; a hyperparameter holding words (``optimizer``) is
drawn as categories. It follows the table: runs listed, read or filtered later show.
"""

from __future__ import annotations

import math
import os

import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QDialog, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from tfstudio.core.run_table import Column, RunRow
from tfstudio.ui.panels.runs_table import RunsTable

MIN_PREFIX = 8  # a prefix every run's name shares, this long or longer, is left out of labels
LOG_RATIO = 20.0  # x values spanning this factor or more are drawn on a log axis


def _number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(float(value)) else None
    try:
        return float(str(value))
    except ValueError:
        return None


class RunsScatter(QDialog):
    """Metric (y) against hyperparameter or metric (x), one point per listed run."""

    def __init__(self, table: RunsTable, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Runs: a metric against a hyperparameter")
        self.table = table
        self.x_box = QComboBox()
        self.y_box = QComboBox()
        self.log_x = False
        self.plot = pg.PlotWidget(background="w")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        for side in ("left", "bottom"):  # 0.25, not 250 (x0.001)
            self.plot.getAxis(side).enableAutoSIPrefix(False)
        self.plot.getViewBox().setDefaultPadding(0.12)
        self.points = pg.ScatterPlotItem(size=10, brush=pg.mkBrush("#1f77b4"), pen=pg.mkPen("w"))
        self.plot.addItem(self.points)
        self.labels: list[pg.TextItem] = []
        self.note = QLabel()
        self.note.setStyleSheet("color: #808080;")
        top = QHBoxLayout()
        top.addWidget(QLabel("y"))
        top.addWidget(self.y_box, 1)
        top.addWidget(QLabel("against x"))
        top.addWidget(self.x_box, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.note)
        self.x_box.currentIndexChanged.connect(self.redraw)
        self.y_box.currentIndexChanged.connect(self.redraw)
        table.columns_changed.connect(self.refresh_choices)
        self.refresh_choices()
        self.resize(640, 440)

    def _column(self, box: QComboBox) -> Column | None:
        i = self.table.index_of(box.currentText()) if box.currentText() else -1
        return self.table.columns[i] if i >= 0 else None

    def refresh_choices(self) -> None:
        """The metrics and hyperparameters the table has now (the choices kept)."""
        metrics = [c.title for c in self.table.columns if c.kind == "metric" and c.part == "last"]
        hparams = [c.title for c in self.table.columns if c.kind == "hparam"]
        xs = hparams + [c.title for c in self.table.columns if c.kind == "metric"]
        for box, titles, prefer in (
            (self.y_box, metrics, ("val_loss", "loss")),
            (self.x_box, xs, ("optimizer.learning_rate", "batch_size")),
        ):
            current = box.currentText()
            box.blockSignals(True)
            box.clear()
            box.addItems(titles)
            keep = current if current in titles else next((p for p in prefer if p in titles), "")
            if keep:
                box.setCurrentText(keep)
            box.blockSignals(False)
        self.redraw()

    def choose(self, y: str, x: str) -> None:
        """Plot ``y`` against ``x`` (column titles)."""
        self.y_box.setCurrentText(y)
        self.x_box.setCurrentText(x)
        self.redraw()

    def series(self) -> tuple[list[float], list[float], list[str], list[str]]:
        """(x, y, run names, x categories) of the runs drawn (categories empty when x holds
        numbers)."""
        xc, yc = self._column(self.x_box), self._column(self.y_box)
        if xc is None or yc is None:
            return [], [], [], []
        rows: list[RunRow] = self.table.visible_rows()
        pairs = [(xc.value(r), _number(yc.value(r)), r.run.name) for r in rows]
        pairs = [(x, y, n) for x, y, n in pairs if x is not None and y is not None]
        numeric = all(_number(x) is not None for x, _, _ in pairs)
        if numeric:
            return (
                [_number(x) for x, _, _ in pairs],
                [y for _, y, _ in pairs],
                [  # type: ignore[misc]
                    n for _, _, n in pairs
                ],
                [],
            )
        categories = sorted({str(x) for x, _, _ in pairs})
        xs = [float(categories.index(str(x))) for x, _, _ in pairs]
        return xs, [y for _, y, _ in pairs], [n for _, _, n in pairs], categories  # type: ignore[misc]

    def redraw(self) -> None:
        """Draw the listed runs as they are now."""
        xs, ys, names, categories = self.series()
        for label in self.labels:
            self.plot.removeItem(label)
        self.labels = []
        positive = bool(xs) and not categories and min(xs) > 0
        spread = positive and max(xs) / min(xs) >= LOG_RATIO  # a learning-rate sweep: log x
        self.log_x = spread
        shown_x = [math.log10(x) for x in xs] if spread else xs
        self.points.setData(shown_x, ys, data=names)
        common = os.path.commonprefix(names) if len(names) > 1 else ""
        common = common[: max(common.rfind(c) for c in "-_/.") + 1]  # whole words only
        cut = len(common) if len(common) >= MIN_PREFIX else 0
        for x, y, name in zip(shown_x, ys, names, strict=True):
            label = pg.TextItem(("…" if cut else "") + name[cut:], color="#404040")
            label.setAnchor((0.5, 1.15))  # centred above its point
            label.setPos(x, y)
            self.plot.addItem(label)
            self.labels.append(label)
        axis = self.plot.getAxis("bottom")
        if categories:
            axis.setTicks([list(enumerate(categories))])
        elif spread:  # log10 of the values drawn: label the decades with the values
            low, high = math.floor(min(shown_x)), math.ceil(max(shown_x))
            axis.setTicks([[(d, f"{10.0**d:g}") for d in range(low, high + 1)], []])
        else:
            axis.setTicks(None)
        scale = " (log)" if spread else ""
        self.plot.setLabel("bottom", self.x_box.currentText() + scale)
        self.plot.setLabel("left", self.y_box.currentText())
        missing = len(self.table.visible_rows()) - len(xs)
        text = f"{len(xs)} runs" + (f"; {missing} without both values not drawn" if missing else "")
        self.note.setText(text + (f"; names shown without {common!r}" if cut else ""))
