"""A metric plot's legend: its lines in a fixed order, or one entry per fit.

One run: each of its lines (``loss (per step)``, ``loss (epoch mean)``, ``val_loss``).
More runs: each run by name (shortened: the start all their names share left out),
in its colour, then each kind of line once, in grey, in the style every run draws it.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from tfstudio.core.x_axes import PER_FIT
from tfstudio.ui.panels.metric_fits import MAX_LEGEND_FITS, MAX_NAMED_FITS
from tfstudio.ui.plotting import Curve
from tfstudio.ui.plotting.style import MUTED, short_names

KIND_GREY = MUTED  # the colour of a kind-of-line legend entry (every run draws it in its own)


class MetricLegend:
    """The part of :class:`~tfstudio.ui.panels.metric_plot.MetricPlot` that keeps its legend."""

    def _relegend(self) -> None:
        """Global x: curves in a fixed order (per step, running, epoch mean, val).

        Per-fit x: one entry per fit, in the fit's colour.
        """
        self._legend_stale = False
        self._short = self._short_names()
        if self.x_mode != PER_FIT:
            runs = self._runs_drawn()
            if len(runs) <= 1 and (not runs or runs[0][0] is self.own):
                shown = [c for c in self.curves() if c.item is not None]
                shown.sort(key=lambda c: c.label.startswith("val_"))
                entries = [(_legend_item(c), c.label) for c in shown] + self._layer_entries()
            else:
                entries = [
                    (self._run_sample(layer), self._short.get(id(layer), layer.name))
                    for layer, _ in runs
                ]
                entries += self._kind_entries([c for _, curves in runs for c in curves])
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
        layers = self._layer_entries()
        key = (PER_FIT, *((id(item), span.index) for item, span in entries))
        key += tuple((id(item), label) for item, label in layers)
        if key == self._legend_key:
            return
        self._legend_key = key
        self.legend.clear()
        self.legend.setVisible(True)
        if len(entries) > MAX_LEGEND_FITS or not entries:
            self.legend.setVisible(False)  # the fit list beside the plots shows the colours
            return
        named = len(entries) <= MAX_NAMED_FITS
        run = f"{self.short_name(self.own)}: " if layers else ""  # beside other runs: whose
        for item, span in entries:
            self.legend.addItem(item, run + (span.segment.name if named else span.segment.short))
        for item, label in layers:
            self.legend.addItem(item, label)
        self.set_legend_columns(_legend_columns(len(entries) + len(layers)))

    def _runs_drawn(self) -> list[tuple[object, list[Curve]]]:
        """The runs with a line drawn in this plot, the run on show first, with their lines."""
        out = []
        for layer, lines in self.runs():
            curves = [c for c in lines.all() if c.item is not None]
            if curves:
                out.append((layer, curves))
        return out

    def _short_names(self) -> dict[int, str]:
        """id(layer) -> the name the legend and readout give it (shortened together)."""
        layers = [self.own, *self.layers]
        names = short_names([layer.name for layer in layers])
        return {id(layer): name for layer, name in zip(layers, names, strict=True)}

    def short_name(self, layer: object) -> str:
        """The name ``layer``'s run goes by in this plot's legend and readout."""
        short = getattr(self, "_short", None) or self._short_names()
        return short.get(id(layer), getattr(layer, "name", ""))

    def _run_sample(self, layer: object) -> pg.PlotDataItem:
        """A legend sample in the run's colour (a thick line)."""
        samples = self._samples
        key = ("run", layer.colour, layer.faint)
        item = samples.get(key)
        if item is None:
            colour = pg.mkColor(layer.colour)
            colour.setAlpha(layer.alpha(255))
            item = samples[key] = pg.PlotDataItem(pen=pg.mkPen(colour, width=3))
        return item

    def _kind_entries(self, curves: list[Curve]) -> list[tuple[pg.PlotDataItem, str]]:
        """One grey entry per kind of line (label), in the order of a single run's legend."""
        seen: dict[str, Curve] = {}
        for curve in curves:
            seen.setdefault(curve.label, curve)
        ordered = sorted(seen.values(), key=lambda c: c.label.startswith("val_"))
        samples = self._samples
        out = []
        for curve in ordered:
            item = samples.get(("kind", curve.label))
            if item is None:
                item = samples[("kind", curve.label)] = _grey_like(_legend_item(curve))
            out.append((item, curve.label))
        return out

    def _layer_entries(self) -> list[tuple[pg.PlotDataItem, str]]:
        """One legend entry per other run: its first line, named after the run."""
        out = []
        for layer in self.layers:
            if self.x_mode != PER_FIT:
                items = [c.item for _, c in self._own_layer_curves(layer)]
            else:  # the global items are hidden
                items = [i for i in layer.overlays.values() if i.getViewBox() is self.vb]
            if items:
                out.append((items[0], self.short_name(layer)))
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


def _grey_like(item: pg.PlotDataItem) -> pg.PlotDataItem:
    """A legend sample with ``item``'s line style and marker, in grey."""
    pen = pg.mkPen(item.opts["pen"])
    colour = pg.mkColor(KIND_GREY)
    pen.setColor(colour)
    if pen.widthF() < 1.5:
        pen.setWidthF(1.5)
    opts: dict[str, object] = {"pen": pen}
    if item.opts.get("symbol") is not None:
        opts.update(
            symbol=item.opts["symbol"],
            symbolSize=item.opts.get("symbolSize", 7),
            symbolBrush=pg.mkBrush(colour),
            symbolPen=pg.mkPen("w", width=1),
        )
    if pen.style() == Qt.PenStyle.NoPen:
        pen.setStyle(Qt.PenStyle.SolidLine)
    return pg.PlotDataItem(**opts)


def _legend_columns(entries: int) -> int:
    """Legend columns: one row up to three entries, then two rows (it stays in the title row)."""
    return max(1, entries if entries <= 3 else (entries + 1) // 2)
