"""Layer outputs view: one layer's output on the probe batch, now and over steps.

Image-like outputs ``(N, H, W, C)`` show a grid of channel maps for a chosen
probe sample; ``(N, units)`` outputs a samples x units heat map. Below: the
output's distribution over steps and the share of dead units (zero for every
probe sample).
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from tfstudio.core.events import LayerOutput
from tfstudio.core.inspector_store import InspectorStore
from tfstudio.ui.panels.inspector_plots import COLORMAP, HeatmapPlot, LinePlot
from tfstudio.ui.plotting import BACKGROUND, TimedPlotWidget

GAP = 2  # pixels between channel maps


def mosaic(maps: np.ndarray, gap: int = GAP) -> np.ndarray:
    """Channel maps ``(C, h, w)`` tiled in a near-square grid (rows top-down), gaps at 40."""
    c, h, w = maps.shape
    cols = max(1, math.ceil(math.sqrt(c)))
    rows = max(1, math.ceil(c / cols))
    out = np.full((rows * (h + gap) - gap, cols * (w + gap) - gap), 40, np.uint8)
    for k in range(c):
        r, q = divmod(k, cols)
        out[r * (h + gap) : r * (h + gap) + h, q * (w + gap) : q * (w + gap) + w] = maps[k]
    return out


def channel_maps(layer: LayerOutput, sample: int) -> np.ndarray | None:
    """The 8-bit channel maps ``(C, h, w)`` of one probe sample, or None."""
    if not layer.thumbs or len(layer.thumb_shape) != 4:
        return None
    s, c, h, w = layer.thumb_shape
    maps = np.frombuffer(layer.thumbs, np.uint8).reshape(s, c, h, w)
    return maps[min(max(sample, 0), s - 1)]


def units_matrix(layer: LayerOutput) -> np.ndarray | None:
    """The samples x units matrix (8-bit) of a ``(N, units)`` output, or None."""
    if not layer.matrix or len(layer.matrix_shape) != 2:
        return None
    return np.frombuffer(layer.matrix, np.uint8).reshape(layer.matrix_shape)


class OutputsView(QWidget):
    """Layer list (forward order) on the left; the chosen layer's pictures and plots right.

    Args:
        store: the inspector's data.
        paint_clock: shared paint-time accumulator.
    """

    layer_chosen = Signal(str)  # the path of the layer picked in the list

    def __init__(
        self, store: InspectorStore, paint_clock: list[float], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.selection: str | None = None
        self._drawn = -1
        self._listed: tuple[str, ...] = ()
        split = QSplitter(Qt.Orientation.Horizontal, self)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(split)
        self.layer_list = QListWidget()
        self.layer_list.currentItemChanged.connect(self._on_current_item_changed)
        split.addWidget(self.layer_list)
        right = QWidget()
        col = QVBoxLayout(right)
        top = QHBoxLayout()
        self.header = QLabel("No layer outputs yet.")
        self.header.setWordWrap(True)
        self.header.setMinimumHeight(2 * self.header.fontMetrics().lineSpacing() + 6)
        top.addWidget(self.header, 1)
        self.sample_label = QLabel("probe sample")
        top.addWidget(self.sample_label)
        self.sample = QSpinBox()
        self.sample.setRange(0, 0)
        self.sample.valueChanged.connect(self._on_sample_changed)
        top.addWidget(self.sample)
        col.addLayout(top)
        self.picture_caption = QLabel("")
        col.addWidget(self.picture_caption)
        self.picture = TimedPlotWidget(paint_clock, background=BACKGROUND)
        self.picture.setMinimumHeight(180)  # 260 left the console 9 lines in a 1200x800 window
        self.picture_plot: pg.PlotItem = self.picture.getPlotItem()
        self.picture_plot.hideButtons()
        self.picture_plot.getViewBox().setAspectLocked(True)
        self.picture_plot.getViewBox().invertY(True)
        self.image = pg.ImageItem()
        self.picture_plot.addItem(self.image)
        col.addWidget(self.picture, 3)
        plots = QHBoxLayout()
        self.heatmap = HeatmapPlot("output distribution over steps", paint_clock, "output")
        self.dead = LinePlot("dead units", "share", paint_clock)
        plots.addWidget(self.heatmap.widget, 3)
        plots.addWidget(self.dead.widget, 2)
        col.addLayout(plots, 2)
        self._plots = (
            self.picture,
            self.heatmap.widget,
            self.dead.widget,
            self.sample_label,
            self.sample,
        )
        for widget in self._plots:  # hidden, they keep their room: the window does not jump
            policy = widget.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            widget.setSizePolicy(policy)
        self._set_plots_shown(False)  # empty axes say nothing: shown with the first outputs
        split.addWidget(right)
        split.setSizes([200, 960])

    def _set_plots_shown(self, shown: bool) -> None:
        for widget in self._plots:
            if widget.isHidden() == shown:
                widget.setVisible(shown)

    # -- selection -----------------------------------------------------------
    def set_selection(self, path: str | None) -> None:
        """Show the layer at ``path`` (from the model tree or the walk)."""
        if path == self.selection:
            return
        self.selection = path
        for i in range(self.layer_list.count()):
            item = self.layer_list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == path:
                self.layer_list.setCurrentItem(item)
                break
        self._drawn = -1
        self.refresh()

    def _on_current_item_changed(self, item: QListWidgetItem | None, _prev: object) -> None:
        if item is None:
            return
        path = item.data(Qt.ItemDataRole.UserRole)
        if path != self.selection:
            self.selection = path
            self._drawn = -1
            self.refresh()
            self.layer_chosen.emit(path)

    def _on_sample_changed(self, _value: int) -> None:
        self._drawn = -1
        self.refresh()

    # -- drawing ---------------------------------------------------------------
    def current(self) -> LayerOutput | None:
        """The shown layer's latest output summary."""
        outputs = self.store.last_outputs
        if outputs is None or not outputs.layers:
            return None
        for layer in outputs.layers:
            if layer.path == self.selection:
                return layer
        # Default: the first inner layer with feature maps, else with a matrix, else any.
        inner = [lo for lo in outputs.layers if lo.depth > 0] or list(outputs.layers)
        for wanted in (lambda lo: bool(lo.thumbs), lambda lo: bool(lo.matrix)):
            for layer in inner:
                if wanted(layer):
                    return layer
        return inner[0]

    def refresh(self) -> None:
        """Redraw if the store changed since the last draw."""
        if self._drawn == self.store.version:
            return
        self._drawn = self.store.version
        outputs = self.store.last_outputs
        if outputs is None:
            text = self.store.outputs_off or (
                self.store.empty_text("layer outputs")
                if self.store.ended
                else "No layer outputs yet."
            )
            if self.header.text() != text:
                self.header.setText(text)
            return
        self._set_plots_shown(True)
        self._fill_list(outputs.layers)
        layer = self.current()
        if layer is None:
            return
        if self.selection is None:
            self.selection = layer.path
            self._select_in_list(layer.path)
        self.header.setText(
            f"<b>{layer.path}</b> ({layer.class_name}) output {tuple(layer.shape)} {layer.dtype} "
            f"at step {outputs.step}<br>mean {layer.mean:.4g}, std {layer.std:.4g}, "
            f"min {layer.min:.4g}, max {layer.max:.4g}, zeros {layer.zero_fraction:.1%}, "
            f"dead units {layer.dead_fraction:.1%} (on {outputs.samples} probe samples)"
        )
        self._draw_picture(layer)
        history = self.store.outputs.get(layer.path)
        if history is not None:
            self.heatmap.set_history(history)
            self.heatmap.set_line("mean", *history.series("mean"))
            self.dead.set_line("dead units", *history.series("dead_fraction"), "#d62728")
            self.dead.set_line("zeros", *history.series("zero_fraction"), "#1f77b4")
            self.dead.done()

    def _draw_picture(self, layer: LayerOutput) -> None:
        maps = channel_maps(layer, self.sample.value())
        if maps is not None:
            self.sample.setEnabled(True)
            self.sample.setRange(0, layer.thumb_shape[0] - 1)
            picture = mosaic(maps)
            self.image.setColorMap(pg.colormap.get("CET-L1"))  # grey: feature maps as images
            self.image.setImage(picture.T, levels=(0, 255), autoLevels=False)
            self.picture_caption.setText(
                f"{maps.shape[0]} channel maps of probe sample {self.sample.value()} "
                "(each scaled to its own range; bright = high)"
            )
            self.picture_plot.getViewBox().setAspectLocked(True)
            self.picture_plot.showAxes(False)
            self.image.setVisible(True)
            self.picture_plot.autoRange()
            return
        self.sample.setEnabled(False)
        matrix = units_matrix(layer)
        if matrix is not None:
            self.image.setColorMap(pg.colormap.get(COLORMAP))
            self.image.setImage(matrix.T, levels=(0, 255), autoLevels=False)
            n, units = matrix.shape
            self.picture_caption.setText(
                f"probe samples (rows) x units (columns, {units} shown of "
                f"{layer.shape[-1]}): {layer.matrix_min:.3g} (dark) .. "
                f"{layer.matrix_max:.3g} (bright)"
            )
            self.picture_plot.getViewBox().setAspectLocked(False)
            self.picture_plot.showAxes(True)
            self.image.setVisible(True)
            self.picture_plot.autoRange()
            return
        self.image.setVisible(False)
        self.picture_caption.setText("no picture for an output of this shape")

    def _fill_list(self, layers: tuple[LayerOutput, ...]) -> None:
        key = tuple(f"{lo.index}:{lo.path}" for lo in layers)
        if key == self._listed:
            return
        self._listed = key
        self.layer_list.blockSignals(True)
        self.layer_list.clear()
        seen: set[str] = set()
        for lo in layers:
            if lo.path in seen:
                continue
            seen.add(lo.path)
            item = QListWidgetItem(f"{'  ' * lo.depth}{lo.name}  {tuple(lo.shape)}")
            item.setData(Qt.ItemDataRole.UserRole, lo.path)
            item.setToolTip(f"{lo.path} ({lo.class_name})")
            self.layer_list.addItem(item)
        self.layer_list.blockSignals(False)
        if self.selection:
            self._select_in_list(self.selection)

    def _select_in_list(self, path: str) -> None:
        self.layer_list.blockSignals(True)
        for i in range(self.layer_list.count()):
            item = self.layer_list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == path:
                self.layer_list.setCurrentItem(item)
        self.layer_list.blockSignals(False)
