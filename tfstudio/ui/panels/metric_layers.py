"""Other runs drawn in a metric plot: one :class:`RunLayer` per run, in a colour of its own."""

from __future__ import annotations

from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import Qt

from tfstudio.core.run_store import EPOCH, RUNNING, RunStore
from tfstudio.core.x_axes import PER_FIT, x_map
from tfstudio.ui.panels.metric_style import FAINT_ALPHA, LAYER_ALPHA, _cached
from tfstudio.ui.plotting import Curve
from tfstudio.ui.plotting.curve import drawn_as_envelope


class RunLayer:
    """Another run drawn in a plot, in a colour of its own, behind the run on show.

    It draws each per-step line of the run (its smoothed twin when smoothing is on)
    and its ``val_`` points, cut at that run's own segment boundaries; on the
    step-within-fit axis, each of its segments from 0, as the run on show does.

    Args:
        store: the run.
        name: how the legend and the hover readout name it.
        colour: its colour.
        faint: drawn fainter (the previous run, behind the live one).
    """

    def __init__(self, store: RunStore, name: str, colour: str, faint: bool = False) -> None:
        self.store = store
        self.name = name
        self.colour = colour
        self.faint = faint
        self.curves: dict[str, Curve] = {}
        self.overlays: dict[tuple[str, int], pg.PlotDataItem] = {}
        self.smoothing = -1.0  # the weight its curves were bound for

    def pen(self, key: str) -> object:
        """Pen of one of its lines: val_ dashed, faint when it is the previous run."""
        colour = pg.mkColor(self.colour)
        colour.setAlpha(FAINT_ALPHA if self.faint else LAYER_ALPHA)
        style = Qt.PenStyle.DashLine if key.startswith("val_") else Qt.PenStyle.SolidLine
        return pg.mkPen(colour, width=1.4, style=style)

    def spans(self) -> list[tuple[int, float, float]]:
        """(fit index, start, end) of each of its segments."""
        return [(fit.fit_index, start, end) for fit, start, end in self.store.spans()]


class LayerLines:
    """The part of :class:`~tfstudio.ui.panels.metric_plot.MetricPlot` that draws the
    other runs (its ``layers``)."""

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
        for key, curve in self._own_layer_curves(layer):
            self.remove_item(curve.item)
            curve.item = None
            del layer.curves[key]
        for key, item in list(layer.overlays.items()):
            if item.getViewBox() is self.vb:
                self.remove_item(item)
                del layer.overlays[key]

    def _sync_layer(self, layer: RunLayer) -> bool:
        """Make, rebind and redraw a layer's lines; True if anything was redrawn."""
        smoothing = self.smoothing > 0
        if layer.smoothing != self.smoothing:
            layer.smoothing = self.smoothing
            for curve in layer.curves.values():
                curve.dirty = True
        changed = False
        for track in layer.store.tracks(self.family):
            if track.kind == EPOCH and not track.key.startswith("val_"):
                continue  # its per-step line says it already
            if track.kind == RUNNING:
                continue
            source = track.smooth if smoothing and track.smooth is not None else track
            if source is not track and track.smooth.suspended:
                track.resume_smoothing()  # the run was on show with this plot hidden
            curve = layer.curves.get(track.key)
            if curve is None or curve.source is not source:
                if curve is None:
                    curve = Curve(f"{layer.name}: {track.key}", layer.colour, source)
                    curve.xmap = x_map(layer.store, self.x_mode)
                    item = pg.PlotDataItem(pen=layer.pen(track.key))
                    if track.kind == EPOCH:
                        item.setSymbol("s")
                        item.setSymbolSize(5)
                        item.setSymbolBrush(pg.mkBrush(layer.colour))
                        item.setSymbolPen(None)
                    else:
                        drawn_as_envelope(item)
                    _cached(item)
                    curve.item = self.add_item(item, z=0.5, ranged=not layer.faint)
                    layer.curves[track.key] = curve
                    self._legend_stale = True  # its first line here: the legend names it
                else:
                    curve.source = source
                    curve.dirty = True
                curve.envelope = source is track
            if curve.dirty:
                curve.update_item(draw=self.x_mode != PER_FIT)
                curve.item.setVisible(self.x_mode != PER_FIT)
                changed = True
        if changed and self.x_mode == PER_FIT:
            self._layer_overlays(layer)
        return changed

    def _layer_overlays(self, layer: RunLayer) -> None:
        """Step-within-fit axis: each of the layer's segments from 0."""
        for key, curve in self._own_layer_curves(layer):
            for index, start, end in layer.spans():
                x, y = curve.segment_line(start, end)
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
        is_global = self.x_mode != PER_FIT  # drawn along the axis, not overlaid per fit
        for layer in self.layers:
            xmap = x_map(layer.store, self.x_mode)
            for _, curve in self._own_layer_curves(layer):
                curve.xmap = xmap
                curve.dirty = True
                curve.item.setVisible(is_global)
            for item in layer.overlays.values():
                if item.getViewBox() is self.vb:
                    item.setVisible(not is_global)
            if not is_global:
                self._layer_overlays(layer)

    def _own_layer_curves(self, layer: RunLayer) -> list[tuple[str, Curve]]:
        """The layer's lines drawn in this plot (a layer is shared by every plot: its
        ``curves`` hold the lines of every family, each drawn in its family's plot)."""
        return [
            (key, curve)
            for key, curve in layer.curves.items()
            if curve.item is not None and curve.item.getViewBox() is self.vb
        ]
