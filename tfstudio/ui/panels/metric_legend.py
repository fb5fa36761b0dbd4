"""A metric plot's legend: its lines in a fixed order, or one entry per fit."""

from __future__ import annotations

import pyqtgraph as pg

from tfstudio.core.x_axes import PER_FIT
from tfstudio.ui.panels.metric_fits import MAX_LEGEND_FITS, MAX_NAMED_FITS
from tfstudio.ui.plotting import Curve


class MetricLegend:
    """The part of :class:`~tfstudio.ui.panels.metric_plot.MetricPlot` that keeps its legend."""

    def _relegend(self) -> None:
        """Global x: curves in a fixed order (per step, running, epoch mean, val).

        Per-fit x: one entry per fit, in the fit's colour.
        """
        self._legend_stale = False
        if self.x_mode != PER_FIT:
            shown = [c for c in self.curves() if c.item is not None]
            shown.sort(key=lambda c: c.label.startswith("val_"))
            entries = [(_legend_item(c), c.label) for c in shown] + self._layer_entries()
            key = (self.x_mode, *((id(i), label) for i, label in entries))
            if key == self._legend_key:
                return
            self._legend_key = key
            self.legend.clear()
            self.legend.setVisible(True)
            for item, label in entries:
                self.legend.addItem(item, label)
            self.set_legend_columns(_legend_columns(len(entries)))
            return
        primary = self._primary_label()
        entries = [
            (self.overlays[(primary, s.index)], s)
            for s in self.spans
            if (primary, s.index) in self.overlays and self._span_shown(s)
        ]
        key = (PER_FIT, *((id(item), span.index) for item, span in entries))
        if key == self._legend_key:
            return
        self._legend_key = key
        self.legend.clear()
        self.legend.setVisible(True)
        if len(entries) > MAX_LEGEND_FITS or not entries:
            self.legend.setVisible(False)  # the fit list beside the plots shows the colours
            return
        named = len(entries) <= MAX_NAMED_FITS
        for item, span in entries:
            self.legend.addItem(item, span.segment.name if named else span.segment.short)
        layers = self._layer_entries()
        for item, label in layers:
            self.legend.addItem(item, label)
        self.set_legend_columns(_legend_columns(len(entries) + len(layers)))

    def _layer_entries(self) -> list[tuple[pg.PlotDataItem, str]]:
        """One legend entry per other run: its first line, named after the run."""
        out = []
        for layer in self.layers:
            if self.x_mode != PER_FIT:
                items = [c.item for _, c in self._own_layer_curves(layer)]
            else:  # the global items are hidden
                items = [i for i in layer.overlays.values() if i.getViewBox() is self.vb]
            if items:
                out.append((items[0], layer.name))
        return out

    def _primary_label(self) -> str:
        """The curve that stands for each fit in the per-fit legend."""
        for curve in self.curves():
            if curve.series is not None and not curve.label.startswith("val_"):
                return curve.label
        for curve in self.curves():
            return curve.label
        return ""


def _legend_item(curve: Curve) -> pg.PlotDataItem:
    """The item a curve's legend entry shows: the smoothed line when smoothing is on."""
    smoothed = curve.smoothed()
    if smoothed is not None and smoothed.item is not None:
        return smoothed.item
    return curve.item


def _legend_columns(entries: int) -> int:
    """Legend columns: one row up to three entries, then two rows (it stays in the title row)."""
    return max(1, entries if entries <= 3 else (entries + 1) // 2)
