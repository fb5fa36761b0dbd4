"""The plot of one metric family: per-step, running, epoch-mean and val curves.

x axes (:mod:`tfstudio.core.x_axes`): the run's global step, where fits follow one
another (each marked, no line across a boundary); the step within each fit, where
every fit is overlaid in its own colour to compare them; the time since the run
started; the clock time; epochs. The concerns live in modules of their own, joined
here: other runs (:mod:`.metric_layers`), fits, epochs and marks
(:mod:`.metric_fits`), zooming in to exact points (:mod:`.metric_zoom`), the hover
readout (:mod:`.metric_readout`) and the legend (:mod:`.metric_legend`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer

from tfstudio.core.run_store import EPOCH, RUNNING, SAMPLED, SERIES_CAPACITY, RunStore, Track
from tfstudio.core.x_axes import GLOBAL, LABELS, PER_FIT, WALL, XMap, axis_of, x_map
from tfstudio.ui.panels.metric_fits import FitOverlays, FitSpan
from tfstudio.ui.panels.metric_layers import LayerLines, RunLayer
from tfstudio.ui.panels.metric_legend import MetricLegend
from tfstudio.ui.panels.metric_readout import Readout
from tfstudio.ui.panels.metric_style import (
    EPOCH_LINE,
    FIT_LINE,
    SMOOTH_WIDTH,
    STEP_ALPHA,
    TRAIN,
    TRAIN_DARK,
    VAL,
    _cached,
    _labelled,
)
from tfstudio.ui.panels.metric_zoom import EXACT_POLL_MS, ExactZoom
from tfstudio.ui.plotting import Curve, PlotView, SegmentMarkers, VerticalLines, XLinkGroup
from tfstudio.ui.plotting.curve import drawn_as_envelope
from tfstudio.ui.plotting.smoothing import RAW_ALPHA, faint

__all__ = ["GLOBAL", "PER_FIT", "X_LABELS", "FitSpan", "MetricPlot", "RunLayer"]

EPOCH_LINE_GAP_PX = 6  # epoch boundaries closer than this are thinned (every 2^k-th drawn)
X_LABELS = LABELS  # x axis -> its label


class MetricPlot(Readout, ExactZoom, MetricLegend, FitOverlays, LayerLines, PlotView):
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
        self._mark_steps: list[float] = []  # the step of each mark
        self._note = ""
        self.x_mode = GLOBAL
        self.store: RunStore | None = None  # the run on show (its clock places time axes)
        self.xmap: XMap | None = None  # where its steps land on the x axis (None: the step)
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
        _map_curve(curve, self.xmap)
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
                line.setVisible(on and self.x_mode != PER_FIT)
                twin.item = self.add_item(line, z=1.5, ranged=False)
                twin.dirty = True
            return item

        self._make_item(curve, make)
        return curve

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
            twin.item.setVisible(on and self.x_mode != PER_FIT)
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
        _map_curve(curve, self.xmap)
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
        item.setVisible(self.x_mode != PER_FIT)
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
        item.setVisible(self.x_mode != PER_FIT)
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

    def set_note(self, note: str) -> None:
        """Set the text shown after the family name in the title."""
        if note != self._note:
            self._note = note
            self.set_title(f"{self.family}  {note}" if note else self.family)

    def set_run(self, store: RunStore | None) -> None:
        """The run on show: its clock and epochs place its lines on the time and epoch axes."""
        if store is self.store:
            return
        self.store = store
        self._remap()

    def set_x_mode(self, mode: str) -> None:
        """The x axis (:data:`~tfstudio.core.x_axes.AXES`, or a ``--x-axis`` name):
        ``"global"`` the run's global step; ``"fit"`` step within fit, fits overlaid;
        ``"relative"`` seconds since each run started; ``"wall"`` the clock time;
        ``"epoch"`` epochs. Every point of every run is kept; only where it lands moves."""
        mode = mode if mode in X_LABELS else axis_of(mode)
        if mode == self.x_mode:
            return
        self.x_mode = mode
        along = mode != PER_FIT
        for curve in self.curves():
            if curve.item is not None:
                curve.item.setVisible(along)
                curve.dirty = True
            smoothed = curve.smoothed()
            if smoothed is not None and smoothed.item is not None:
                smoothed.item.setVisible(along)
        self.epoch_lines.setVisible(along)
        self.markers.set_visible(along)
        for _text, line in self.marks:
            line.setVisible(along)
        for item in self.overlays.values():
            item.setVisible(False)
        self._stale_from(0)
        self._remap()
        self._layers_x_mode()
        self.set_x_label(X_LABELS[mode])
        self.plot.getAxis("bottom").set_dates(mode == WALL)
        self._legend_stale = True

    def _remap(self) -> None:
        """Place every line and mark on the x axis anew (the axis or the run changed)."""
        self.xmap = x_map(self.store, self.x_mode) if self.store is not None else None
        for curve in self.curves():
            _map_curve(curve, self.xmap)
            curve.dirty = True
        self._place_decorations()

    def to_x(self, steps: Sequence[float]) -> list[float]:
        """Where steps of the run on show land on the x axis now."""
        if self.xmap is None:
            return [float(s) for s in steps]
        return [float(v) for v in self.xmap.to_x(np.asarray(steps, dtype=np.float64))]

    def refresh(self) -> None:
        """``setData`` every curve that changed since the last frame (none while hidden)."""
        if not self.shown:
            return
        if self._pending_items:
            self._make_pending_items()
        changed = False
        along = self.x_mode != PER_FIT
        for curve in self.curves():
            if curve.dirty and curve.item is not None:
                curve.update_item(draw=along)
                changed = True
        if changed and along and self.xmap is not None:
            self._place_decorations()  # the run's clock (or epochs) moved on
        if not along and (changed or self._overlays_from is not None):
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

    def x_origin(self) -> float:
        """On the clock-time axis the earliest x drawn (inf: none yet); else 0."""
        if self.x_mode != WALL:
            return 0.0
        items = [*self.visible_items()]
        for layer in self.layers:
            items += [c.item for _, c in self._own_layer_curves(layer) if c.item.isVisible()]
        firsts = [float(np.nanmin(i.xData)) for i in items if i.xData is not None and len(i.xData)]
        return min(firsts, default=float("inf"))

    def data_x_max(self) -> float:
        """The largest x of the run on show; before it has a fit (a script just opened),
        of the runs behind it: the script's previous run, faint, is seen whole."""
        best = super().data_x_max()
        if (best > 0.0 or self.spans) and self.x_mode != WALL:  # clock times: every run's
            return best
        for layer in self.layers:
            for curve in layer.curves.values():
                x = curve.item.xData if curve.item is not None else None
                if x is not None and len(x) and curve.item.isVisible():
                    best = max(best, float(np.nanmax(x)))
        return best


def _map_curve(curve: Curve, xmap: XMap | None) -> None:
    """Place ``curve`` (and its smoothed twin) on the axis ``xmap`` maps to."""
    curve.xmap = xmap
    if curve.smooth is not None:
        curve.smooth.xmap = xmap
