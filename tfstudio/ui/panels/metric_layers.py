"""The runs a metric plot draws: one :class:`RunLayer` per run, the run on show included.

Every run, live or recorded, on show or compared, is drawn by the same code
(:meth:`~tfstudio.ui.panels.metric_plot.MetricPlot.bind`): the same lines (per step,
running mean, epoch mean, val), the same line styles and markers for each kind of
line, in the run's own colour (its :class:`~tfstudio.ui.plotting.style.RunStyle`, the
one its swatch in the Runs table shows). The run on show differs only in being drawn
on top, with its fits, epochs and marks.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import Qt

from tfstudio.core.run_store import RunStore
from tfstudio.core.x_axes import PER_FIT, XMap, x_map
from tfstudio.ui.panels.metric_style import FAINT_ALPHA, LAYER_ALPHA
from tfstudio.ui.plotting import Curve
from tfstudio.ui.plotting.curve import drawn_as_envelope
from tfstudio.ui.plotting.style import RunStyle


class RunLayer:
    """One run drawn in the metric plots, in a colour of its own.

    Args:
        store: the run.
        name: how the legend and the hover readout name it.
        colour: its colour (every line of it: per step, epoch mean, val).
        faint: drawn fainter (the previous run, behind the live one).
    """

    def __init__(self, store: RunStore | None, name: str, colour: str, faint: bool = False) -> None:
        self.store = store
        self.name = name
        self.colour = colour
        self.faint = faint
        # its per-step (or running) lines and val epoch lines, every plot's, by key: a
        # layer is shared by the plots, each drawing the lines of its own family
        self.curves: dict[str, Curve] = {}
        self.overlays: dict[tuple[str, int], pg.PlotDataItem] = {}  # step-within-fit axis

    @classmethod
    def of(cls, store: RunStore, style: RunStyle) -> RunLayer:
        """The layer of ``store`` drawn in ``style``."""
        return cls(store, style.name, style.colour, style.faint)

    @property
    def style(self) -> RunStyle:
        """Its name, colour and faintness."""
        return RunStyle(self.name, self.colour, self.faint)

    def alpha(self, alpha: int) -> int:
        """``alpha`` of a line of the run, fainter when it is the previous run."""
        return int(alpha * FAINT_ALPHA / 255) if self.faint else alpha

    def pen(self, key: str) -> object:
        """Pen of one of its overlaid fits (step-within-fit axis): val_ dashed."""
        colour = pg.mkColor(self.colour)
        colour.setAlpha(self.alpha(LAYER_ALPHA))
        style = Qt.PenStyle.DashLine if key.startswith("val_") else Qt.PenStyle.SolidLine
        return pg.mkPen(colour, width=1.2, style=style)

    def spans(self) -> list[tuple[int, float, float]]:
        """(fit index, start, end) of each of its segments."""
        if self.store is None:
            return []
        return [(fit.fit_index, start, end) for fit, start, end in self.store.spans()]


class Lines:
    """A run's curves in one plot, by key: per-step, running-mean and epoch lines."""

    __slots__ = ("steps", "running", "epochs", "xmap")

    def __init__(self) -> None:
        self.steps: dict[str, Curve] = {}
        self.running: dict[str, Curve] = {}
        self.epochs: dict[str, Curve] = {}
        self.xmap: XMap | None = None  # where its steps land on the x axis (None: the step)

    def all(self) -> list[Curve]:
        """Every curve, per-step lines first."""
        return [*self.steps.values(), *self.running.values(), *self.epochs.values()]

    def keyed(self) -> list[tuple[str, Curve]]:
        """(key, curve) of each line the readout lists: per-step (or running) lines, then
        val epoch lines (a train epoch mean is said by its per-step line)."""
        out = [*self.steps.items(), *self.running.items()]
        have = {key for key, _ in out}
        out += [(k, c) for k, c in self.epochs.items() if k not in have]
        return [(k, c) for k, c in out if c.item is not None]


class LayerLines:
    """The part of :class:`~tfstudio.ui.panels.metric_plot.MetricPlot` that keeps the
    runs beside the run on show (its ``layers``) and their overlaid fits."""

    def set_layers(self, layers: Sequence[RunLayer]) -> None:
        """The other runs this plot draws (replacing the previous list)."""
        keep = {id(layer) for layer in layers}
        for layer in self.layers:
            if id(layer) not in keep:
                self._drop_layer(layer)
        self.layers = list(layers)
        self._legend_stale = True

    def _drop_layer(self, layer: RunLayer) -> None:
        """Take the layer's lines out of this plot (the other plots keep theirs)."""
        lines = self._lines.pop(id(layer), None)
        if lines is not None:
            for curve in lines.all():
                self._remove(curve, layer)
                if layer.curves.get(_key_of(curve)) is curve:
                    del layer.curves[_key_of(curve)]
        for key, item in list(layer.overlays.items()):
            if item.getViewBox() is self.vb:
                self.remove_item(item)
                del layer.overlays[key]

    def _layer_overlays(self, layer: RunLayer) -> None:
        """Step-within-fit axis: each of the layer's segments from 0, in its colour."""
        for key, curve in self._own_layer_curves(layer):
            if curve.series is None and not key.startswith("val_"):
                continue
            source = curve.smoothed() or curve
            for index, start, end in layer.spans():
                x, y = source.segment_line(start, end)
                item = layer.overlays.get((key, index))
                if item is None:
                    if not len(x):
                        continue
                    item = pg.PlotDataItem(pen=layer.pen(key))
                    drawn_as_envelope(item)
                    item = self.add_item(item, z=0.5, ranged=not layer.faint)
                    layer.overlays[(key, index)] = item
                    self._legend_stale = True
                item.setVisible(self.x_mode == PER_FIT)
                item.setData(x - start, y, connect="finite")

    def _layers_x_mode(self) -> None:
        """The x axis changed: each compared run's lines placed anew (its own clock)."""
        along = self.x_mode != PER_FIT  # drawn along the axis, not overlaid per fit
        for layer in self.layers:
            lines = self._lines.get(id(layer))
            if lines is not None:
                lines.xmap = x_map(layer.store, self.x_mode)
                for curve in lines.all():
                    _map(curve, lines.xmap)
            for item in layer.overlays.values():
                if item.getViewBox() is self.vb:
                    item.setVisible(not along)
            if not along:
                self._layer_overlays(layer)

    def _own_layer_curves(self, layer: RunLayer) -> list[tuple[str, Curve]]:
        """The layer's lines drawn in this plot, by key (per-step lines, val epochs)."""
        lines = self._lines.get(id(layer))
        return lines.keyed() if lines is not None else []


def _key_of(curve: Curve) -> str:
    return curve.source.key if hasattr(curve.source, "key") else curve.label


def _map(curve: Curve, xmap: XMap | None) -> None:
    """Place ``curve`` (and its smoothed twin) on the axis ``xmap`` maps to; redrawn."""
    curve.xmap = xmap
    if curve.smooth is not None:
        curve.smooth.xmap = xmap
    curve.dirty = True
