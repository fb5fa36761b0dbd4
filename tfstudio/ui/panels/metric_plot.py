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
from tfstudio.ui.panels.metric_layers import LayerLines, Lines, RunLayer
from tfstudio.ui.panels.metric_legend import MetricLegend
from tfstudio.ui.panels.metric_readout import Readout
from tfstudio.ui.panels.metric_style import (
    EPOCH_DARKER,
    EPOCH_LINE,
    FIT_LINE,
    SMOOTH_WIDTH,
    STEP_ALPHA,
    _cached,
    _labelled,
)
from tfstudio.ui.panels.metric_zoom import EXACT_POLL_MS, ExactZoom
from tfstudio.ui.plotting import Curve, PlotView, SegmentMarkers, VerticalLines, XLinkGroup
from tfstudio.ui.plotting.curve import drawn_as_envelope
from tfstudio.ui.plotting.smoothing import RAW_ALPHA, faint
from tfstudio.ui.plotting.style import LIVE_COLOUR, RunStyle

__all__ = ["GLOBAL", "PER_FIT", "X_LABELS", "FitSpan", "MetricPlot", "RunLayer"]

EPOCH_LINE_GAP_PX = 6  # epoch boundaries closer than this are thinned (every 2^k-th drawn)
X_LABELS = LABELS  # x axis -> its label
LIVE_NAME = "live run"  # the legend's name of a run on show that has none (the live run's)


class MetricPlot(Readout, ExactZoom, MetricLegend, FitOverlays, LayerLines, PlotView):
    """The plot of one metric family: per-step, running, epoch-mean and val curves of
    every run shown (the run on show and the runs beside it), each run in its colour.

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
        # Every run shown is a layer drawn by the same code (bind); ``own`` is the run on
        # show, whose lines are also ``steps``, ``running`` and ``epochs``.
        self.own = RunLayer(None, "", LIVE_COLOUR)
        own = Lines()
        self._lines: dict[int, Lines] = {id(self.own): own}
        self.steps: dict[str, Curve] = own.steps
        self.running: dict[str, Curve] = own.running
        self.epochs: dict[str, Curve] = own.epochs
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
        self._short: dict[int, str] = {}  # id(layer) -> its name in the legend and readout
        self._samples: dict[tuple, pg.PlotDataItem] = {}  # legend samples (not drawn)
        # Zooming in: which curves show exact points now, and what each drew last
        # (the exact points' revision, the curve's source revision, spliced or not).
        self._exact_use: dict[int, bool] = {}
        self._exact_drawn: dict[int, tuple[int, int, np.ndarray, bool]] = {}
        self._exact_timer = QTimer(self.widget)
        self._exact_timer.setInterval(EXACT_POLL_MS)
        self._exact_timer.timeout.connect(self._on_exact_poll)

    def bind(self, track: Track, layer: RunLayer | None = None) -> Curve:
        """The curve drawing a store line of this family (made on first use), of the run
        on show or of ``layer``: every run's lines are made here, alike but for colour."""
        layer = self.own if layer is None else layer
        lines = self._lines_of(layer)
        if track.kind == EPOCH:
            return self._epoch_curve(track, layer, lines)
        table = lines.running if track.kind == RUNNING else lines.steps
        curve = table.get(track.key)
        if curve is not None and curve.source is track:
            return curve
        if curve is not None:  # a new run's line of the same key
            self._remove(curve, layer)
        if track.kind == RUNNING:
            curve = self._series_curve(track, "running", 1.5, 255, layer)
        elif track.kind == SAMPLED:
            curve = self._series_curve(track, "optimizer", 1.5, 255, layer)
        else:
            curve = self._series_curve(track, "per step", 1, STEP_ALPHA, layer)
            old = lines.running.pop(track.key, None)
            if old is not None:  # per-step values beat the running mean
                self._remove(old, layer)
        table[track.key] = curve
        if layer is not self.own:
            layer.curves[track.key] = curve
        _map_curve(curve, lines.xmap)
        self._legend_stale = True
        return curve

    def bind_run(self, layer: RunLayer | None = None) -> None:
        """Bind every line of this family of the run on show (or of ``layer``)."""
        layer = self.own if layer is None else layer
        store = layer.store
        if store is None:
            return
        for track in store.tracks(self.family):
            held = store.steps.get(track.key)
            if track.kind == EPOCH and held is not None and held.kind == SAMPLED:
                # a learning rate Keras logs at epoch ends (ReduceLROnPlateau): the held
                # line has each value already, and a line joining epoch ends drew ramps
                self.drop_epoch_curve(track.key, layer)
                continue
            if self.shown and track.smooth is not None and track.smooth.suspended:
                track.resume_smoothing()  # shown before in a plot that was hidden
            self.bind(track, layer)

    def _lines_of(self, layer: RunLayer) -> Lines:
        lines = self._lines.get(id(layer))
        if lines is None:
            lines = self._lines[id(layer)] = Lines()
            lines.xmap = x_map(layer.store, self.x_mode) if layer.store is not None else None
        return lines

    def runs(self) -> list[tuple[RunLayer, Lines]]:
        """Every run drawn here with its lines: the run on show first."""
        out = [(self.own, self._lines[id(self.own)])]
        out += [
            (layer, self._lines[id(layer)]) for layer in self.layers if id(layer) in self._lines
        ]
        return out

    def _series_curve(
        self, track: Track, kind: str, width: float, alpha: int, layer: RunLayer
    ) -> Curve:
        """A decimated per-step line for ``track``, labelled ``<key> (<kind>)``, in the
        run's colour (a ``val_`` line dashed).

        A track with a smoothed twin gets a second curve for it (drawn on top when
        smoothing is on, the raw line then faint).
        """
        key = track.key
        colour = layer.colour
        curve = Curve(_labelled(key, kind), colour, track)
        if track.smooth is not None:
            curve.smooth = Curve("", colour, track.smooth)
            curve.smooth.envelope = False  # one point per bucket: a smoothed curve has no spikes
            if not self.shown:
                track.suspend_smoothing()  # smoothed when the plot is first shown
        behind = layer is not self.own
        dash = key.startswith("val_")

        def make() -> pg.PlotDataItem:
            twin = curve.smooth
            on = twin is not None and twin.source.on
            a = layer.alpha(RAW_ALPHA if on else alpha)
            item = self._line(curve, width, a, 0.5 if behind else 1, dash, not layer.faint)
            if behind:
                _cached(item)  # an earlier run's line changes seldom
            if twin is not None:
                pen = pg.mkPen(faint(colour, layer.alpha(255)), width=SMOOTH_WIDTH)
                if dash:
                    pen.setStyle(Qt.PenStyle.DashLine)
                line = pg.PlotDataItem(pen=pen)
                drawn_as_envelope(line)
                line.setVisible(on and self.x_mode != PER_FIT)
                twin.item = self.add_item(line, z=0.6 if behind else 1.5, ranged=False)
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
        for layer, curve in self._step_curves():
            if curve.smooth is None:
                continue
            self._style_smoothing(curve, layer)
            curve.dirty = True
        self._stale_from(0)
        self._legend_stale = True

    def _style_smoothing(self, curve: Curve, layer: RunLayer) -> None:
        """Raw pen faint (smoothing on) or as usual; the smoothed item shown or not."""
        twin = curve.smooth
        if twin is None:
            return
        on = self.smoothing > 0
        if curve.item is not None:
            pen = pg.mkPen(curve.item.opts["pen"])
            pen.setColor(faint(curve.colour, layer.alpha(RAW_ALPHA if on else STEP_ALPHA)))
            curve.item.setPen(pen)
        if twin.item is not None:
            twin.item.setVisible(on and self.x_mode != PER_FIT)
            if not on:
                twin.item.setData([], [])

    def _step_curves(self) -> list[tuple[RunLayer, Curve]]:
        """The per-step lines of every run drawn here, with their run."""
        return [(layer, c) for layer, lines in self.runs() for c in lines.steps.values()]

    def drop_epoch_curve(self, key: str, layer: RunLayer | None = None) -> None:
        """Remove the epoch curve of ``key``, if there is one (another line shows it)."""
        layer = self.own if layer is None else layer
        curve = self._lines_of(layer).epochs.pop(key, None)
        if curve is not None:
            self._remove(curve, layer)
            self._legend_stale = True

    def _epoch_curve(self, track: Track, layer: RunLayer, lines: Lines) -> Curve:
        """Per-epoch curve: ``<key> (epoch mean)``, or ``val_<key>`` as it is."""
        key = track.key
        curve = lines.epochs.get(key)
        if curve is not None and curve.source is track:
            return curve
        if curve is not None:
            self._remove(curve, layer)
        is_val = key.startswith("val_")
        label = key if is_val else _labelled(key, "epoch mean")
        curve = Curve(label, layer.colour, track)
        self._make_item(curve, lambda: self._epoch_item(layer, is_val))
        _map_curve(curve, lines.xmap)
        lines.epochs[key] = curve
        if layer is not self.own and (is_val or key not in lines.steps):
            layer.curves.setdefault(key, curve)
        self._legend_stale = True
        return curve

    def _epoch_item(self, layer: RunLayer, is_val: bool) -> pg.PlotDataItem:
        """An epoch line: the mean a solid darker line with dots, val dashed with squares,
        both in the run's colour."""
        item = pg.PlotDataItem(**epoch_style(layer.colour, is_val, layer.alpha(255)))
        item.setVisible(self.x_mode != PER_FIT)
        _cached(item)
        behind = layer is not self.own
        z = (0.7 if is_val else 0.65) if behind else (3 if is_val else 2)
        return self.add_item(item, z=z, ranged=not layer.faint)

    def _make_item(self, curve: Curve, make: Callable[[], pg.PlotDataItem]) -> None:
        """Give ``curve`` its graphics item now, or when the plot is first shown."""
        if self.shown:
            curve.item = make()
        else:
            self._pending_items.append((curve, make))

    def _make_pending_items(self) -> None:
        live = {id(c) for c in self.all_curves()}
        for curve, make in self._pending_items:
            if id(curve) in live:  # not replaced meanwhile (running -> per step)
                curve.item = make()
                curve.dirty = True
        self._pending_items = []
        self._legend_stale = True

    def curves(self) -> Iterable[Curve]:
        """Every curve of the run on show."""
        yield from self.steps.values()
        yield from self.running.values()
        yield from self.epochs.values()

    def all_curves(self) -> list[Curve]:
        """Every curve on the plot: the run on show's, then the other runs'."""
        return [c for _, lines in self.runs() for c in lines.all()]

    def _line(
        self, curve: Curve, width: float, alpha: int, z: float, dash: bool, ranged: bool
    ) -> pg.PlotDataItem:
        colour = pg.mkColor(curve.colour)
        colour.setAlpha(alpha)
        pen = pg.mkPen(colour, width=width)
        if dash:
            pen.setStyle(Qt.PenStyle.DashLine)
        item = pg.PlotDataItem(pen=pen)
        drawn_as_envelope(item)
        item.setVisible(self.x_mode != PER_FIT)
        return self.add_item(item, z, ranged=ranged)

    def _remove(self, curve: Curve, layer: RunLayer | None = None) -> None:
        if curve.item is not None:
            self.remove_item(curve.item)
            curve.item = None
        if curve.smooth is not None and curve.smooth.item is not None:
            self.remove_item(curve.smooth.item)
            curve.smooth.item = None
        if layer is not None and layer is not self.own:
            key = getattr(curve.source, "key", None)
            if layer.curves.get(key) is curve:
                del layer.curves[key]
            for (k, index), item in list(layer.overlays.items()):
                if k == key and item.getViewBox() is self.vb:
                    self.remove_item(item)
                    del layer.overlays[(k, index)]
            return
        for (label, index), item in list(self.overlays.items()):
            if label == curve.label:
                self.remove_item(item)
                del self.overlays[(label, index)]

    def set_note(self, note: str) -> None:
        """Set the text shown after the family name in the title."""
        if note != self._note:
            self._note = note
            self.set_title(f"{self.family}  {note}" if note else self.family)

    def set_run(self, store: RunStore | None, style: RunStyle | None = None) -> None:
        """The run on show (and how it is drawn and named: its colour is its swatch's in
        the Runs table; the live run is blue): its clock and epochs place its lines on the
        time and epoch axes."""
        name = style.name if style is not None and style.name else ""
        name = name or (store.name if store is not None else "") or LIVE_NAME
        colour = style.colour if style is not None else LIVE_COLOUR
        self.own.store = store
        if colour != self.own.colour:
            self._recolour_own(colour)
        if name != self.own.name:
            self.own.name = name
            self._legend_stale = True
        if store is self.store:
            return
        self.store = store
        self._remap()

    def _recolour_own(self, colour: str) -> None:
        """The run on show took another colour: its lines are made again in it."""
        self.own.colour = colour
        lines = self._lines[id(self.own)]
        for table in (lines.steps, lines.running, lines.epochs):
            for key, curve in list(table.items()):
                self._remove(curve)
                del table[key]
        self._overlays_from = 0
        self._legend_stale = True
        self.bind_run()

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
        for curve in self.all_curves():
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
        own = self._lines[id(self.own)]
        own.xmap = self.xmap
        for curve in own.all():
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
        for layer in self.layers:
            self.bind_run(layer)  # lines a run beside it has read since
        changed = False
        along = self.x_mode != PER_FIT
        for curve in self.curves():
            if curve.dirty and curve.item is not None:
                curve.update_item(draw=along)
                changed = True
        for layer in self.layers:
            moved = False
            lines = self._lines.get(id(layer))
            for curve in lines.all() if lines is not None else []:
                if curve.item is None:
                    continue
                if curve.dirty:
                    curve.update_item(draw=along)
                    moved = True
            if moved and not along:
                self._layer_overlays(layer)
            changed = changed or moved
        if changed and along and self.xmap is not None:
            self._place_decorations()  # the run's clock (or epochs) moved on
        if not along and (changed or self._overlays_from is not None):
            first = len(self.spans) - 1 if self._overlays_from is None else self._overlays_from
            self._update_overlays(max(0, first))
            self._overlays_from = None
            changed = True
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
        for _, curve in self._step_curves():
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
        items = [*self.visible_items()]  # (the ranged lines: every run's but a faint one)
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
            for _, curve in self._own_layer_curves(layer):
                x = curve.item.xData if curve.item is not None else None
                if x is not None and len(x) and curve.item.isVisible():
                    best = max(best, float(np.nanmax(x)))
        return best


def epoch_style(colour: str, is_val: bool, alpha: int = 255) -> dict[str, object]:
    """The look of an epoch line of a run in ``colour``: the train mean a solid line,
    darker, with dots; val a dashed line with squares (the same for every run)."""
    c = pg.mkColor(colour)
    if not is_val:
        c = c.darker(EPOCH_DARKER)
    c.setAlpha(alpha)
    pen = pg.mkPen(c, width=2)
    if is_val:
        pen.setStyle(Qt.PenStyle.DashLine)
    return {
        "pen": pen,
        "symbol": "s" if is_val else "o",
        "symbolSize": 7,
        "symbolBrush": pg.mkBrush(c),
        "symbolPen": pg.mkPen("w", width=1),
        "antialias": True,
    }


def _map_curve(curve: Curve, xmap: XMap | None) -> None:
    """Place ``curve`` (and its smoothed twin) on the axis ``xmap`` maps to."""
    curve.xmap = xmap
    if curve.smooth is not None:
        curve.smooth.xmap = xmap
