"""The plot of one metric family: per-step, running, epoch-mean and val curves.

Two x axes: the run's global step, where fits follow one another (each marked,
no line across a boundary), or the step within each fit, where every fit is
overlaid in its own colour to compare them.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPixmapCache
from PySide6.QtWidgets import QGraphicsItem

from tfstudio.core.exact_points import (
    ExactPoints,
    Overview,
    exact_points_for,
    overview_for,
    splice,
)
from tfstudio.core.run_store import (
    EPOCH,
    RUNNING,
    SAMPLED,
    SERIES_CAPACITY,
    STEP,
    RunStore,
    Track,
)
from tfstudio.core.smoothing import ema
from tfstudio.ui.plotting import (
    FOREGROUND,
    Curve,
    PlotView,
    Segment,
    SegmentMarkers,
    VerticalLines,
    XLinkGroup,
)
from tfstudio.ui.plotting.curve import drawn_as_envelope
from tfstudio.ui.plotting.smoothing import RAW_ALPHA, faint

EPOCH_LINE_GAP_PX = 6  # epoch boundaries closer than this are thinned (every 2^k-th drawn)
MAX_NAMED_FITS = 6  # more fits than this: the legend names them by number only
MAX_LEGEND_FITS = 12  # more than this: no legend (the fit list shows the colours)
# Zoomed in so far that the view holds fewer raw steps than this many per pixel: a
# recorded run's line shows its exact points there, read again from its folder.
EXACT_STEPS_PER_PX = 2
EXACT_POLL_MS = 30  # how often a plot looks for the exact points it waits for

STEP_ALPHA = 150  # raw per-step line when not smoothed
SMOOTH_WIDTH = 1.6
TRAIN = "#1f77b4"
TRAIN_DARK = "#0d3f73"
VAL = "#e8590c"
EPOCH_LINE = "#c4c4c4"
FIT_LINE = "#6a3d9a"

GLOBAL = "global"  # x modes
PER_FIT = "fit"
X_LABELS = {GLOBAL: "global step", PER_FIT: "step within fit"}


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


LAYER_ALPHA = 230  # a compared run's line
FAINT_ALPHA = 150  # the previous run of the same script, behind the live one


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


class MetricPlot(PlotView):
    """The plot of one metric family: per-step, running, epoch-mean and val curves.

    Args:
        family: metric name without ``val_`` (the plot's title).
        capacity: buckets per per-step series.
        paint_clock: shared paint-time accumulator.
        group: x-range group shared with the other metric plots.
        smoothing: EMA weight of the per-step curves (0: raw only); see
            :meth:`set_smoothing`.
    """

    def __init__(
        self,
        family: str,
        capacity: int = SERIES_CAPACITY,
        paint_clock: list[float] | None = None,
        group: XLinkGroup | None = None,
        smoothing: float = 0.0,
    ) -> None:
        super().__init__(family, X_LABELS[GLOBAL], "", paint_clock, group)
        self.family = family
        self.capacity = capacity
        self.smoothing = smoothing
        self.steps: dict[str, Curve] = {}
        self.running: dict[str, Curve] = {}
        self.epochs: dict[str, Curve] = {}
        self.epoch_lines = VerticalLines(
            pg.mkPen(EPOCH_LINE, width=1, style=Qt.PenStyle.DashLine), EPOCH_LINE_GAP_PX
        )
        self.epoch_lines.setZValue(-10)
        self.vb.addItem(self.epoch_lines, ignoreBounds=True)
        self._epochs_drawn: tuple[Sequence[float] | None, int] = (None, 0)  # (list, length) drawn
        self.markers = SegmentMarkers(self.vb, FIT_LINE)
        self.marks: list[tuple[str, pg.InfiniteLine]] = []  # NaN, restore (see add_mark)
        self._note = ""
        self.x_mode = GLOBAL
        self.spans: list[FitSpan] = []
        self.overlays: dict[tuple[str, int], pg.PlotDataItem] = {}
        self.isolated: frozenset[int] | None = None  # fits shown alone (per-fit x)
        self._overlays_from: int | None = 0  # overlays to redo from this fit on (None: last)
        self._markers_stale = False
        self._legend_stale = False
        self._legend_key: tuple = ()
        self.redraws = 0  # refreshes that redrew something (hidden plots do none)
        # Items of curves born while the plot is hidden: made when it is first shown.
        self._pending_items: list[tuple[Curve, Callable[[], pg.PlotDataItem]]] = []
        self.layers: list[RunLayer] = []  # other runs, drawn behind the run on show
        # Zooming in: which curves show exact points now, and what each drew last
        # (the exact points' revision, the curve's source revision, spliced or not).
        self._exact_use: dict[int, bool] = {}
        self._exact_drawn: dict[int, tuple[int, int, np.ndarray, bool]] = {}
        self._exact_timer = QTimer(self.widget)
        self._exact_timer.setInterval(EXACT_POLL_MS)
        self._exact_timer.timeout.connect(self._on_exact_poll)

    # -- curves ------------------------------------------------------------
    def bind(self, track: Track) -> Curve:
        """The curve drawing a store line of this family (made on first use)."""
        if track.kind == EPOCH:
            return self._epoch_curve(track)
        table = self.running if track.kind == RUNNING else self.steps
        curve = table.get(track.key)
        if curve is not None and curve.source is track:
            return curve
        if curve is not None:  # a new run's line of the same key
            self._remove(curve)
        if track.kind == RUNNING:
            curve = self._series_curve(track, "running", width=1.5, alpha=255)
        elif track.kind == SAMPLED:
            curve = self._series_curve(track, "optimizer", width=1.5, alpha=255)
        else:
            curve = self._series_curve(track, "per step", width=1, alpha=STEP_ALPHA)
            old = self.running.pop(track.key, None)
            if old is not None:  # per-step values beat the running mean
                self._remove(old)
        table[track.key] = curve
        self._legend_stale = True
        return curve

    def _series_curve(self, track: Track, kind: str, width: float, alpha: int) -> Curve:
        """A decimated per-step line for ``track``, labelled ``<key> (<kind>)``.

        A track with a smoothed twin gets a second curve for it (drawn on top when
        smoothing is on, the raw line then faint).
        """
        key = track.key
        colour = VAL if key.startswith("val_") else TRAIN
        curve = Curve(_labelled(key, kind), colour, track)
        if track.smooth is not None:
            curve.smooth = Curve("", colour, track.smooth)
            curve.smooth.envelope = False  # one point per bucket: a smoothed curve has no spikes
            if not self.shown:
                track.suspend_smoothing()  # smoothed when the plot is first shown

        def make() -> pg.PlotDataItem:
            twin = curve.smooth
            on = twin is not None and twin.source.on
            item = self._line(curve, width=width, alpha=RAW_ALPHA if on else alpha, z=1)
            if twin is not None:
                line = pg.PlotDataItem(pen=pg.mkPen(colour, width=SMOOTH_WIDTH))
                drawn_as_envelope(line)
                line.setVisible(on and self.x_mode == GLOBAL)
                twin.item = self.add_item(line, z=1.5, ranged=False)
                twin.dirty = True
            return item

        self._make_item(curve, make)
        return curve

    # -- other runs ------------------------------------------------------------
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
                curve.update_item(draw=self.x_mode == GLOBAL)
                curve.item.setVisible(self.x_mode == GLOBAL)
                changed = True
        if changed and self.x_mode != GLOBAL:
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
                item.setVisible(self.x_mode != GLOBAL)
                item.setData(x - start, y, connect="finite")

    def _layers_x_mode(self) -> None:
        is_global = self.x_mode == GLOBAL
        for layer in self.layers:
            for _, curve in self._own_layer_curves(layer):
                curve.item.setVisible(is_global)
            for item in layer.overlays.values():
                if item.getViewBox() is self.vb:
                    item.setVisible(not is_global)
            if not is_global:
                self._layer_overlays(layer)

    # -- smoothing -----------------------------------------------------------
    def set_smoothing(self, weight: float) -> None:
        """Show the per-step curves' smoothed twins (weight above 0, the raw line then
        faint) or the raw curves only (0). The store re-smooths; the plot restyles."""
        weight = max(0.0, float(weight))
        if weight == self.smoothing:
            return
        self.smoothing = weight
        for curve in self.steps.values():
            if curve.smooth is None:
                continue
            self._style_smoothing(curve)
            curve.dirty = True
        self._stale_from(0)
        self._legend_stale = True

    def _style_smoothing(self, curve: Curve) -> None:
        """Raw pen faint (smoothing on) or as usual; the smoothed item shown or not."""
        twin = curve.smooth
        if twin is None:
            return
        on = self.smoothing > 0
        if curve.item is not None:
            colour = faint(curve.colour) if on else faint(curve.colour, STEP_ALPHA)
            curve.item.setPen(pg.mkPen(colour, width=1))
        if twin.item is not None:
            twin.item.setVisible(on and self.x_mode == GLOBAL)
            if not on:
                twin.item.setData([], [])

    def drop_epoch_curve(self, key: str) -> None:
        """Remove the epoch curve of ``key``, if there is one (another line shows it)."""
        curve = self.epochs.pop(key, None)
        if curve is not None:
            self._remove(curve)
            self._legend_stale = True

    def _epoch_curve(self, track: Track) -> Curve:
        """Per-epoch curve: ``<key> (epoch mean)``, or ``val_<key>`` as it is."""
        key = track.key
        curve = self.epochs.get(key)
        if curve is not None and curve.source is track:
            return curve
        if curve is not None:
            self._remove(curve)
        is_val = key.startswith("val_")
        label = key if is_val else _labelled(key, "epoch mean")
        colour = VAL if is_val else TRAIN_DARK
        curve = Curve(label, colour, track)
        self._make_item(curve, lambda: self._epoch_item(colour, is_val))
        self.epochs[key] = curve
        self._legend_stale = True
        return curve

    def _epoch_item(self, colour: str, is_val: bool) -> pg.PlotDataItem:
        item = pg.PlotDataItem(
            pen=pg.mkPen(colour, width=2),
            symbol="s" if is_val else "o",
            symbolSize=7,
            symbolBrush=pg.mkBrush(colour),
            symbolPen=pg.mkPen("w", width=1),
            antialias=True,
        )
        item.setVisible(self.x_mode == GLOBAL)
        _cached(item)
        return self.add_item(item, z=3 if is_val else 2)

    def _make_item(self, curve: Curve, make: Callable[[], pg.PlotDataItem]) -> None:
        """Give ``curve`` its graphics item now, or when the plot is first shown."""
        if self.shown:
            curve.item = make()
        else:
            self._pending_items.append((curve, make))

    def _make_pending_items(self) -> None:
        live = {id(c) for c in self.curves()}
        for curve, make in self._pending_items:
            if id(curve) in live:  # not replaced meanwhile (running -> per step)
                curve.item = make()
                curve.dirty = True
        self._pending_items = []
        self._legend_stale = True

    def curves(self) -> Iterable[Curve]:
        """Every curve on the plot."""
        yield from self.steps.values()
        yield from self.running.values()
        yield from self.epochs.values()

    def _line(self, curve: Curve, width: float, alpha: int, z: int) -> pg.PlotDataItem:
        colour = pg.mkColor(curve.colour)
        colour.setAlpha(alpha)
        item = pg.PlotDataItem(pen=pg.mkPen(colour, width=width))
        drawn_as_envelope(item)
        item.setVisible(self.x_mode == GLOBAL)
        return self.add_item(item, z)

    def _remove(self, curve: Curve) -> None:
        if curve.item is not None:
            self.remove_item(curve.item)
            curve.item = None
        if curve.smooth is not None and curve.smooth.item is not None:
            self.remove_item(curve.smooth.item)
            curve.smooth.item = None
        for (label, index), item in list(self.overlays.items()):
            if label == curve.label:
                self.remove_item(item)
                del self.overlays[(label, index)]

    def _relegend(self) -> None:
        """Global x: curves in a fixed order (per step, running, epoch mean, val).

        Per-fit x: one entry per fit, in the fit's colour.
        """
        self._legend_stale = False
        if self.x_mode == GLOBAL:
            shown = [c for c in self.curves() if c.item is not None]
            shown.sort(key=lambda c: c.label.startswith("val_"))
            entries = [(_legend_item(c), c.label) for c in shown] + self._layer_entries()
            key = (GLOBAL, *((id(i), label) for i, label in entries))
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
            if self.x_mode == GLOBAL:
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

    # -- decorations -------------------------------------------------------
    def set_note(self, note: str) -> None:
        """Set the text shown after the family name in the title."""
        if note != self._note:
            self._note = note
            self.set_title(f"{self.family}  {note}" if note else self.family)

    def sync_epoch_lines(self, epoch_steps: Sequence[float]) -> None:
        """Show epoch boundaries at ``epoch_steps`` (thinned when they crowd).

        Known by the list and its length, not the length alone: a restore drops the
        boundaries after its step (the store makes a new list) and the epochs that end
        next may bring the count back within one frame."""
        if epoch_steps is self._epochs_drawn[0] and len(epoch_steps) == self._epochs_drawn[1]:
            return
        self._epochs_drawn = (epoch_steps, len(epoch_steps))
        self.epoch_lines.set_positions(epoch_steps)

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
        self.markers.set_segments([s.segment for s in self.spans] if len(self.spans) > 1 else [])

    def fit_marker_labels(self) -> list[str]:
        """Full texts of the fit markers, oldest first."""
        return [s.full for s in self.markers.segments]

    # -- marks (a NaN, a restore) -----------------------------------------------
    def add_mark(self, step: float, text: str, colour: str) -> None:
        """A labelled vertical line at ``step`` (global-step x only)."""
        line = pg.InfiniteLine(
            pos=step,
            angle=90,
            movable=False,
            pen=pg.mkPen(colour, width=1.5, style=Qt.PenStyle.DashDotLine),
            label=text,
            labelOpts={"position": 0.85, "color": colour, "anchors": [(0, 0.5), (0, 0.5)]},
        )
        line.setZValue(-4)
        line.setVisible(self.x_mode == GLOBAL)
        self.vb.addItem(line, ignoreBounds=True)
        self.marks.append((text, line))

    def mark_labels(self) -> list[str]:
        """Texts of the marks, oldest first."""
        return [text for text, _ in self.marks]

    # -- x modes -------------------------------------------------------------
    def set_x_mode(self, mode: str) -> None:
        """``"global"``: the run's global step; ``"fit"``: step within fit, fits overlaid."""
        if mode not in X_LABELS:
            raise ValueError(f"x mode must be one of {sorted(X_LABELS)}, got {mode!r}")
        if mode == self.x_mode:
            return
        self.x_mode = mode
        is_global = mode == GLOBAL
        for curve in self.curves():
            if curve.item is not None:
                curve.item.setVisible(is_global)
                curve.dirty = True
            smoothed = curve.smoothed()
            if smoothed is not None and smoothed.item is not None:
                smoothed.item.setVisible(is_global)
        self.epoch_lines.setVisible(is_global)
        self.markers.set_visible(is_global)
        for _text, line in self.marks:
            line.setVisible(is_global)
        for item in self.overlays.values():
            item.setVisible(False)
        self._stale_from(0)
        self._layers_x_mode()
        self.set_x_label(X_LABELS[mode])
        self._legend_stale = True

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

    # -- zooming in: exact points of a recorded run -----------------------------------
    def _zoomable(self) -> Iterator[tuple[Curve, Track, ExactPoints | None, Overview | None]]:
        """Drawn per-step lines of recorded runs (the run on show's and the layers'), with
        their exact points and overview."""
        curves = [
            *self.steps.values(),
            *(c for layer in self.layers for _, c in self._own_layer_curves(layer)),
        ]
        for curve in curves:
            track = curve.source
            if curve.item is None or not isinstance(track, Track) or track.kind != STEP:
                continue
            exact, overview = exact_points_for(track), overview_for(track)
            if exact is not None or overview is not None:
                yield curve, track, exact, overview

    def _on_x_range_changed(self, *args: object) -> None:
        super()._on_x_range_changed(*args)
        self.zoom_check()

    def zoom_check(self) -> None:
        """Zoomed in far enough: ask for the exact points of the view (each recorded run's
        lines); zoomed out: back to the envelope. The reads run off the UI thread."""
        if not self.shown or not hasattr(self, "_exact_timer"):  # (a range set while built)
            return
        (x0, x1), _ = self.vb.viewRange()
        budget = EXACT_STEPS_PER_PX * max(1.0, float(self.vb.width()))
        waiting = False
        for curve, track, exact, _ in self._zoomable():
            if exact is None:
                continue
            use = self.x_mode == GLOBAL and _steps_in_view(curve, track, x0, x1) <= budget
            self._exact_use[id(curve)] = use
            if use and not exact.covers(x0, x1):
                margin = (x1 - x0) / 2  # a small pan stays within what is read
                exact.want(max(0, math.floor(x0 - margin)), math.ceil(x1 + margin))
            waiting = waiting or (use and exact.pending())
        if self._draw_exact():
            self.refresh_range()
        if waiting and not self._exact_timer.isActive():
            self._exact_timer.start()

    def _on_exact_poll(self) -> None:
        if self._draw_exact():
            self.refresh_range()
        if not any(
            self._exact_use.get(id(c)) and e is not None and e.pending()
            for c, _, e, _ in self._zoomable()
        ):
            self._exact_timer.stop()

    def _draw_exact(self) -> bool:
        """Splice the exact points read into the curves that show them (or put the envelope
        back where they no longer do), and draw each run's overview beyond what its store
        holds so far; True if any curve was redrawn."""
        changed = False
        is_global = self.x_mode == GLOBAL
        for curve, track, exact, overview in self._zoomable():
            held = None
            if exact is not None and is_global and self._exact_use.get(id(curve)):
                held = exact.get(track.key)
            tail = overview.tail(track.key, track.last_x) if overview and is_global else None
            revisions = (
                -1 if exact is None else exact.revision,
                -1 if overview is None else overview.revision,
            )
            spliced = held is not None or tail is not None
            # What the curve drew last: any redraw of the envelope (new points, a forced
            # redraw) gives it new arrays, so the splice is redone then.
            before = self._exact_drawn.get(id(curve))
            if before is None and not spliced:
                continue
            if before is not None and before[2] is curve.x and before[3] == spliced:
                if before[:2] == revisions or not spliced:
                    continue
            if before is not None and not before[3] and not spliced:
                self._exact_drawn[id(curve)] = (*revisions, curve.x, False)
                continue
            curve.update_item(draw=is_global)  # the envelope, as the store holds it
            if held is not None:
                curve.x, curve.y = splice(curve.x, curve.y, held)
            if tail is not None:  # coarse first: the overview beyond what was read so far
                curve.x = np.concatenate([curve.x, tail[0]])
                curve.y = np.concatenate([curve.y, tail[1]])
                self._overview_on_twin(curve, tail)
            if spliced:
                x, y = curve.drawn()
                curve.item.setData(x, y, connect="finite")
            self._exact_drawn[id(curve)] = (*revisions, curve.x, spliced)
            changed = True
        return changed

    def _overview_on_twin(self, curve: Curve, tail: tuple[np.ndarray, np.ndarray]) -> None:
        """Smoothing on: the smoothed line carries the overview too (smoothed alike), so
        the coarse part is not only the faint raw line."""
        twin = curve.smoothed()
        if twin is None or twin.item is None or not twin.item.isVisible():
            return
        twin.x = np.concatenate([twin.x, tail[0]])
        twin.y = np.concatenate([twin.y, np.asarray(ema(tail[1], self.smoothing))])
        x, y = twin.drawn()
        twin.item.setData(x, y, connect="finite")

    def exact_shown(self) -> list[str]:
        """Labels of the curves drawing exact points read again (zoomed in), for tests."""
        return [
            c.label
            for c, t, e, _ in self._zoomable()
            if e is not None
            and self._exact_use.get(id(c))
            and e.get(t.key) is not None
            and self._exact_drawn.get(id(c), (0, 0, None, False))[3]
        ]

    def overview_shown(self) -> list[str]:
        """Labels of the curves drawing part of their run's overview (still loading)."""
        return [
            c.label
            for c, t, _, o in self._zoomable()
            if o is not None and o.tail(t.key, t.last_x) is not None and self.x_mode == GLOBAL
        ]

    # -- frame -------------------------------------------------------------
    def refresh(self) -> None:
        """``setData`` every curve that changed since the last frame (none while hidden)."""
        if not self.shown:
            return
        if self._pending_items:
            self._make_pending_items()
        changed = False
        is_global = self.x_mode == GLOBAL
        for curve in self.curves():
            if curve.dirty and curve.item is not None:
                curve.update_item(draw=is_global)
                changed = True
        if not is_global and (changed or self._overlays_from is not None):
            first = len(self.spans) - 1 if self._overlays_from is None else self._overlays_from
            self._update_overlays(max(0, first))
            self._overlays_from = None
            changed = True
        for layer in self.layers:
            changed = self._sync_layer(layer) or changed
        if changed:
            self._draw_exact()  # a redrawn envelope gets the exact points of the zoom back
        if self._legend_stale:
            self._relegend()
        if changed:
            self.redraws += 1
            self.follow()
            self.refresh_range()

    def set_shown(self, shown: bool) -> None:
        """Show or hide the plot; a hidden plot costs nothing until shown again.

        Its smoothed curves stop too, and are re-smoothed from the stores when shown.
        """
        for curve in self.steps.values():
            track = curve.source
            if curve.smooth is None:
                continue
            if not shown:
                track.suspend_smoothing()
            else:
                track.resume_smoothing()
        super().set_shown(shown)
        if shown:
            if self._markers_stale:
                self._update_markers()
            self.refresh()

    def data_x_max(self) -> float:
        """The largest x of the run on show; before it has a fit (a script just opened),
        of the runs behind it: the script's previous run, faint, is seen whole."""
        best = super().data_x_max()
        if best > 0.0 or self.spans:
            return best
        for layer in self.layers:
            for curve in layer.curves.values():
                x = curve.item.xData if curve.item is not None else None
                if x is not None and len(x) and curve.item.isVisible():
                    best = max(best, float(np.nanmax(x)))
        return best

    # -- hover -------------------------------------------------------------
    def span_at(self, x: float) -> FitSpan | None:
        """The fit whose steps include global step ``x``."""
        for span in reversed(self.spans):
            if x > span.start:
                return span
        return self.spans[0] if self.spans else None

    def readout(self, x: float) -> str:
        """HTML listing, for the step nearest ``x``, each curve's nearest value."""
        if self.x_mode == PER_FIT:
            return self._readout_per_fit(x)
        span = self.span_at(x) if len(self.spans) > 1 else None
        lo, hi = (span.start, span.end) if span is not None else (-np.inf, np.inf)
        rows: list[str] = []
        for curve in self.curves():
            if curve.item is None:
                continue
            hit = curve.nearest(x, lo, hi)
            if hit is None:
                continue
            cx, y0, y1 = hit
            where = "" if curve.series is not None else f" <i>(step {cx:,.0f})</i>"
            smoothed = curve.smoothed()
            if smoothed is not None:
                near = smoothed.nearest(x, lo, hi)
                if near is not None:
                    where += f", smoothed <b>{_fmt(near[1])}</b>"
            rows.append(_row(curve.colour, curve.label, y0, y1, where))
        for layer in self.layers:
            rows.extend(self._layer_rows(layer, x))
        if not rows:
            return ""
        rows = _cap(rows, self.max_readout_rows)
        head = f"<b>step {max(x, 0):,.0f}</b>"
        if span is not None:
            head += f" &nbsp;{html.escape(span.segment.full)}"
        return _box(head, rows)

    def _readout_per_fit(self, x: float) -> str:
        rows: list[str] = []
        for span in self.spans:
            if not self._span_shown(span):
                continue
            g = span.start + x
            for curve in self.curves():
                if (curve.label, span.index) not in self.overlays:
                    continue
                hit = curve.nearest(g, span.start, span.end)
                if hit is None:
                    continue
                label = f"{span.segment.short}: {curve.label}"
                rows.append(_row(span.colour, label, hit[1], hit[2], ""))
        for layer in self.layers:
            for index, start, end in layer.spans():
                rows.extend(self._layer_rows(layer, start + x, (start, end), f" fit {index + 1}"))
        if not rows:
            return ""
        return _box(f"<b>step {max(x, 0):,.0f} of each fit</b>", _cap(rows, self.max_readout_rows))

    def _layer_rows(
        self, layer: RunLayer, x: float, window: tuple[float, float] | None = None, fit: str = ""
    ) -> list[str]:
        """The readout row of another run at global step ``x``: run, fit, and the value of
        each of its lines in this plot's family (``loss 0.31, val_loss 0.35``)."""
        values = []
        fit_here = fit
        for key, curve in self._own_layer_curves(layer):
            if window is None:
                hit = curve.nearest(x)
            else:
                hit = curve.nearest(x, *window)
            if hit is None:
                continue
            if window is None and not fit_here and len(layer.spans()) > 1:  # which fit
                spans = reversed(layer.spans())
                fit_here = next((f" fit {i + 1}" for i, a, _ in spans if x > a), "")
            values.append(f"{html.escape(key)} <b>{_value(hit[1], hit[2])}</b>")
        if not values:
            return []
        name = layer.name if layer.name == layer.store.name else f"{layer.name} {layer.store.name}"
        return [
            f"<span style='color:{layer.colour}'>&#9632;</span> "
            f"{html.escape(name + fit_here)}: {', '.join(values)}"
        ]

    def _own_layer_curves(self, layer: RunLayer) -> list[tuple[str, Curve]]:
        """The layer's lines drawn in this plot (a layer is shared by every plot: its
        ``curves`` hold the lines of every family, each drawn in its family's plot)."""
        return [
            (key, curve)
            for key, curve in layer.curves.items()
            if curve.item is not None and curve.item.getViewBox() is self.vb
        ]


def _steps_in_view(curve: Curve, track: Track, x0: float, x1: float) -> float:
    """About how many raw steps of a decimated line lie in [x0, x1] (inf: not decimated,
    or none there: nothing to read again)."""
    series = track.series
    if series is None or series.width <= 1 or not len(curve.x) or track.last_x is None:
        return math.inf
    first, last = float(curve.x[0]), track.last_x
    overlap = min(x1, last) - max(x0, first)
    if overlap <= 0 or last <= first:
        return math.inf
    return track.count() * overlap / (last - first)


def _legend_item(curve: Curve) -> pg.PlotDataItem:
    """The item a curve's legend entry shows: the smoothed line when smoothing is on."""
    smoothed = curve.smoothed()
    if smoothed is not None and smoothed.item is not None:
        return smoothed.item
    return curve.item


def _legend_columns(entries: int) -> int:
    """Legend columns: one row up to three entries, then two rows (it stays in the title row)."""
    return max(1, entries if entries <= 3 else (entries + 1) // 2)


def _cap(rows: list[str], most: int) -> list[str]:
    """At most ``most`` lines: the rows, or as many as fit and then how many more."""
    most = max(1, most)
    if len(rows) <= most:
        return rows
    keep = most - 1
    return rows[:keep] + [f"<i>… {len(rows) - keep} more</i>"]


def _value(lo: float, hi: float) -> str:
    """A value, or the span of a decimated bucket."""
    return _fmt(lo) if lo == hi or lo != lo else f"{_fmt(lo)} … {_fmt(hi)}"


def _row(colour: str, label: str, lo: float, hi: float, where: str) -> str:
    value = _value(lo, hi)
    return (
        f"<span style='color:{colour}'>&#9632;</span> {html.escape(label)}: <b>{value}</b>{where}"
    )


def _box(head: str, rows: list[str]) -> str:
    return f"<div style='color:{FOREGROUND}; font-size:9pt'>{head}<br>{'<br>'.join(rows)}</div>"


def _fmt(v: float) -> str:
    return f"{v:.5g}"


def _labelled(key: str, kind: str) -> str:
    """A line's legend label: ``loss (per step)``; a key that ends in parentheses takes
    the kind inside them: ``loss (generator, per step)``, ``gradient norm (sampled, per
    step)``, not two pairs."""
    return f"{key[:-1]}, {kind})" if key.endswith(")") else f"{key} ({kind})"


PIXMAP_CACHE_KB = 64 * 1024  # Qt keeps item caches in QPixmapCache: 10 MB by default


def _cached(item: pg.PlotDataItem) -> None:
    """Paint ``item`` from a pixmap of itself while neither it nor the view changed.

    For lines that change seldom (an earlier run's, epoch means): a live curve's
    update repaints the whole data area, and these were drawn again with it. Qt
    keeps the pixmaps in ``QPixmapCache``, whose default 10 MB a maximised window
    with a few compared runs outgrows (a pixmap dropped is painted again): 64 MB.
    """
    if QPixmapCache.cacheLimit() < PIXMAP_CACHE_KB:
        QPixmapCache.setCacheLimit(PIXMAP_CACHE_KB)
    for part in (item.curve, item.scatter):
        part.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
