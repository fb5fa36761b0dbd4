"""A metric plot's fits and epochs: fit markers, epoch lines, NaN/restore marks, and the
step-within-fit axis where every fit is overlaid from 0 in its own colour."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from tfstudio.core.x_axes import PER_FIT
from tfstudio.ui.plotting import Segment
from tfstudio.ui.plotting.curve import drawn_as_envelope

MAX_NAMED_FITS = 6  # more fits than this: the legend names them by number only
MAX_LEGEND_FITS = 12  # more than this: no legend (the fit list shows the colours)


@dataclass(frozen=True, slots=True)
class FitSpan:
    """One fit's place on the global step axis: steps in (start, end].

    Args:
        index: 0-based fit index.
        end: ``math.inf`` while the fit may still grow.
    """

    index: int
    start: float
    end: float
    segment: Segment
    colour: str


class FitOverlays:
    """The part of :class:`~tfstudio.ui.panels.metric_plot.MetricPlot` that shows the
    run's fits, epochs and marks."""

    def sync_epoch_lines(self, epoch_steps: Sequence[float]) -> None:
        """Show epoch boundaries at ``epoch_steps`` (thinned when they crowd).

        Known by the list and its length, not the length alone: a restore drops the
        boundaries after its step (the store makes a new list) and the epochs that end
        next may bring the count back within one frame."""
        if epoch_steps is self._epochs_drawn[0] and len(epoch_steps) == self._epochs_drawn[1]:
            return
        self._epochs_drawn = (epoch_steps, len(epoch_steps))
        self.epoch_lines.set_positions(self.to_x(epoch_steps))

    def set_spans(self, spans: Sequence[FitSpan]) -> None:
        """The run's fits: markers on the global axis, overlays on the per-fit axis."""
        # The previous last fit has ended: its overlay gets its last points, the new one starts.
        self._stale_from(max(0, len(self.spans) - 1))
        self.spans = list(spans)
        self._markers_stale = True
        if self.shown:
            self._update_markers()

    def _update_markers(self) -> None:
        self._markers_stale = False
        spans = self.spans if len(self.spans) > 1 else []
        starts = self.to_x([s.segment.start for s in spans])
        segments = [replace(s.segment, start=x) for s, x in zip(spans, starts, strict=True)]
        if [(s.start, s.full) for s in segments] != [
            (s.start, s.full) for s in self.markers.segments
        ]:
            self.markers.set_segments(segments)

    def _place_decorations(self) -> None:
        """Epoch lines, fit markers and marks where the x axis puts their steps now."""
        steps = self._epochs_drawn[0]
        if steps is not None:
            xs = np.asarray(self.to_x(steps), dtype=np.float64)
            if not np.array_equal(xs, self.epoch_lines.positions()):
                self.epoch_lines.set_positions(xs)
        if self.shown:
            self._update_markers()
        else:
            self._markers_stale = True
        xs = self.to_x(self._mark_steps)
        for (_text, line), x in zip(self.marks, xs, strict=True):
            if line.value() != x:
                line.setValue(x)

    def fit_marker_labels(self) -> list[str]:
        """Full texts of the fit markers, oldest first."""
        return [s.full for s in self.markers.segments]

    def add_mark(self, step: float, text: str, colour: str) -> None:
        """A labelled vertical line at ``step`` (not on the step-within-fit axis)."""
        line = pg.InfiniteLine(
            pos=self.to_x([step])[0],
            angle=90,
            movable=False,
            pen=pg.mkPen(colour, width=1.5, style=Qt.PenStyle.DashDotLine),
            label=text,
            # on the side of the view's centre: a mark at the data's end (a NaN, a restore
            # after a stop) has its label left of the line, not cut off at the plot's edge
            labelOpts={"position": 0.85, "color": colour, "anchors": [(0, 0.5), (1, 0.5)]},
        )
        line.setZValue(-4)
        line.setVisible(self.x_mode != PER_FIT)
        self.vb.addItem(line, ignoreBounds=True)
        self.marks.append((text, line))
        self._mark_steps.append(float(step))

    def mark_labels(self) -> list[str]:
        """Texts of the marks, oldest first."""
        return [text for text, _ in self.marks]

    def set_isolated(self, fits: Iterable[int] | None) -> None:
        """Per-fit x: show only these fits (None: all)."""
        self.isolated = None if fits is None else frozenset(fits)
        self._stale_from(0)
        self._legend_stale = True
        for curve in self.curves():
            curve.dirty = True

    def _stale_from(self, index: int) -> None:
        current = self._overlays_from
        self._overlays_from = index if current is None else min(current, index)

    def _span_shown(self, span: FitSpan) -> bool:
        return self.isolated is None or span.index in self.isolated

    def _update_overlays(self, first: int) -> None:
        """Cut each curve into its fits, shifted to start at 0, one item per (curve, fit).

        Only fits from index ``first`` on are redone (the others' data did not change).
        """
        spans = self.spans[first:]
        created = False
        for curve in self.curves():
            is_val_epoch = curve.series is None and curve.label.startswith("val_")
            if curve.series is None and not is_val_epoch:
                continue  # train epoch means: the per-step line says it already
            source = curve.smoothed() or curve  # fits overlaid: the smoothed curve when on
            for span in spans:
                x, y = source.segment_line(span.start, span.end)
                key = (curve.label, span.index)
                item = self.overlays.get(key)
                if item is None:
                    if not len(x):
                        continue
                    item = self._overlay_item(span, is_val_epoch)
                    self.overlays[key] = item
                    created = True
                item.setVisible(self._span_shown(span))
                item.setData(x - span.start, y, connect="finite")
        if created or first == 0:
            self._legend_stale = True

    def _overlay_item(self, span: FitSpan, val_epoch: bool) -> pg.PlotDataItem:
        colour = pg.mkColor(span.colour)
        if val_epoch:
            colour.setAlpha(170)
            item = pg.PlotDataItem(
                pen=pg.mkPen(colour, width=1.2, style=Qt.PenStyle.DashLine),
                # point markers on dozens of overlaid fits are clutter, and slow to paint
                symbol="s" if len(self.spans) <= MAX_LEGEND_FITS else None,
                symbolSize=5,
                symbolBrush=pg.mkBrush(colour),
                symbolPen=None,
            )
            return self.add_item(item, z=3)
        colour.setAlpha(200)
        item = pg.PlotDataItem(pen=pg.mkPen(colour, width=1.2))
        drawn_as_envelope(item)
        return self.add_item(item, z=1)

    def span_at(self, x: float) -> FitSpan | None:
        """The fit whose steps include global step ``x``."""
        for span in reversed(self.spans):
            if x > span.start:
                return span
        return self.spans[0] if self.spans else None
