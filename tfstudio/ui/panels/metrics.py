"""Metrics panel: one live plot per metric family (``loss`` and ``val_loss`` share one).

Per-step values go into decimated :class:`~tfstudio.core.series.Series` stores,
so memory stays bounded however long the run; each curve gets one ``setData``
per frame, and only when it changed. pyqtgraph clips to the visible range and
peak-downsamples to the pixel width, so millions of steps stay smooth.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QPainter, QPen
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from tfstudio.core.events import (
    CheckpointRestored,
    EpochEnded,
    FitStarted,
    LearningRate,
    NonFinite,
    RunEnded,
    RunStarted,
    StepEnded,
)
from tfstudio.core.series import Series

SERIES_CAPACITY = 10_000  # buckets per curve: 240 KB; at most 20k points (min+max) to draw
EPOCH_LINE_GAP_PX = 6  # epoch boundaries closer than this are thinned (every 2^k-th drawn)
PLOT_MIN_HEIGHT = 210
MAX_SYMBOLS = 200  # per-epoch curves drop their markers past this many points

BACKGROUND = "#ffffff"
FOREGROUND = "#303030"
TRAIN = "#1f77b4"
TRAIN_DARK = "#0d3f73"
VAL = "#e8590c"
EPOCH_LINE = "#c4c4c4"
FIT_LINE = "#6a3d9a"
NAN_LINE = "#d62728"
RESTORE_LINE = "#2ca02c"
LR_KEY = "learning_rate"


def family_of(key: str) -> str:
    """Plot family of a metric key: the key without a leading ``val_``."""
    return key[4:] if key.startswith("val_") and len(key) > 4 else key


class Curve:
    """One line on a plot: its data, its graphics item and whether it needs redrawing.

    Args:
        label: legend text.
        series: decimated store for per-step data; None for per-epoch points.
    """

    __slots__ = ("label", "series", "xs", "ys", "item", "dirty", "x", "y", "colour")

    def __init__(self, label: str, colour: str, series: Series | None = None) -> None:
        self.label = label
        self.colour = colour
        self.series = series
        self.xs: list[float] = []  # per-epoch points (when series is None)
        self.ys: list[float] = []
        self.item: pg.PlotDataItem | None = None
        self.dirty = False
        self.x = np.empty(0)  # what was last drawn, for hover look-ups
        self.y = np.empty(0)

    def count(self) -> int:
        """Points received so far."""
        return self.series.count if self.series is not None else len(self.xs)

    def update_item(self) -> None:
        """Give the item this frame's data (one ``setData``)."""
        if self.series is not None:
            self.x, self.y = self.series.view()
        else:
            self.x = np.asarray(self.xs, dtype=np.float64)
            self.y = np.asarray(self.ys, dtype=np.float64)
        assert self.item is not None
        if len(self.x) > MAX_SYMBOLS and self.item.opts["symbol"] is not None:
            self.item.setSymbol(None)  # markers on thousands of epochs are a smear, and slow
        self.item.setData(self.x, self.y)
        self.dirty = False

    def nearest(self, x: float) -> tuple[float, float, float] | None:
        """Drawn point nearest ``x`` as (x, y_min, y_max); a decimated bucket spans min..max."""
        xs = self.x
        if not len(xs):
            return None
        i = int(np.searchsorted(xs, x))
        if i >= len(xs) or (i > 0 and x - xs[i - 1] < xs[i] - x):
            i -= 1
        xi = xs[i]
        lo = int(np.searchsorted(xs, xi, "left"))
        hi = int(np.searchsorted(xs, xi, "right"))
        ys = self.y[lo:hi]
        return float(xi), float(np.nanmin(ys)), float(np.nanmax(ys))


class VerticalLines(pg.GraphicsObject):
    """Many full-height vertical lines drawn as one item (epoch boundaries).

    One item instead of one ``InfiniteLine`` each: a view change then costs one
    bounding-rect update, not hundreds. Lines closer than ``min_gap_px`` are
    thinned (every 2nd, 4th, ... line kept), so thousands of epochs stay legible.
    """

    def __init__(self, pen: QPen, min_gap_px: float = 6.0) -> None:
        super().__init__()
        self._pen = QPen(pen)
        self._pen.setCosmetic(True)
        self.min_gap_px = min_gap_px
        self._xs = np.empty(0)
        self.drawn = 0  # lines drawn by the last paint

    def set_positions(self, xs: Sequence[float]) -> None:
        """Replace the x positions (sorted ascending)."""
        self._xs = np.asarray(xs, dtype=np.float64)
        self.update()

    def positions(self) -> np.ndarray:
        """All x positions (drawn or thinned out)."""
        return self._xs

    def visible_positions(self) -> np.ndarray:
        """The positions a paint draws now: those in view, thinned to ``min_gap_px``."""
        vb = self.getViewBox()
        if vb is None or not len(self._xs):
            return self._xs[:0]
        (x0, x1), _ = vb.viewRange()
        lo, hi = np.searchsorted(self._xs, (x0, x1))
        shown = self._xs[lo:hi]
        width = max(1.0, vb.width())
        if len(shown) > 1 and x1 > x0:
            gap_px = float(np.min(np.diff(shown))) * width / (x1 - x0)
            stride = 1
            while gap_px * stride < self.min_gap_px and stride < len(shown):
                stride *= 2
            shown = shown[stride - 1 :: stride]
        return shown

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        """The whole view: the lines span it top to bottom."""
        vb = self.getViewBox()
        return QRectF() if vb is None else vb.viewRect()

    def dataBounds(self, axis: int, frac: float = 1.0, orthoRange: object = None) -> None:  # noqa: N802, N803
        """Never widen the auto range."""
        return None

    def viewRangeChanged(self) -> None:  # noqa: N802 (pyqtgraph hook)
        """The bounding rect follows the view."""
        self.prepareGeometryChange()

    def paint(self, painter: QPainter, *args: object) -> None:
        """Draw the visible lines."""
        xs = self.visible_positions()
        self.drawn = len(xs)
        if not len(xs):
            return
        rect = self.boundingRect()
        painter.setPen(self._pen)
        top, bottom = rect.top(), rect.bottom()
        painter.drawLines([QLineF(x, top, x, bottom) for x in xs.tolist()])


class TimedPlotWidget(pg.PlotWidget):
    """A PlotWidget that adds the time its paints take to ``paint_clock[0]``.

    The bridge reads the clock to keep redrawing within its time budget: painting
    holds the GIL, and every millisecond of it is taken from the training thread.
    """

    def __init__(self, paint_clock: list[float], **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._paint_clock = paint_clock

    def paintEvent(self, event: object) -> None:  # noqa: N802 (Qt API)
        """Paint, and account for the time it took."""
        t0 = time.perf_counter()
        super().paintEvent(event)
        self._paint_clock[0] += time.perf_counter() - t0


class MetricPlot:
    """The plot of one metric family: per-step, running, epoch-mean and val curves.

    Args:
        family: metric name without ``val_`` (the plot's title).
        capacity: buckets per per-step series.
    """

    def __init__(
        self,
        family: str,
        capacity: int = SERIES_CAPACITY,
        paint_clock: list[float] | None = None,
    ) -> None:
        self.family = family
        self.capacity = capacity
        self.widget = TimedPlotWidget(
            paint_clock if paint_clock is not None else [0.0], background=BACKGROUND
        )
        self.widget.setMinimumHeight(PLOT_MIN_HEIGHT)
        self.plot: pg.PlotItem = self.widget.getPlotItem()
        # Horizontal grid at major ticks only: minor grid lines (and a vertical grid) cost
        # more paint time than all the curves; epoch boundaries give the vertical guides.
        self.plot.showGrid(x=False, y=True, alpha=0.15)
        self.plot.getAxis("left").setStyle(maxTickLevel=0)
        for name in ("left", "bottom"):
            axis = self.plot.getAxis(name)
            axis.setPen(pg.mkPen(FOREGROUND))
            axis.setTextPen(pg.mkPen(FOREGROUND))
            axis.enableAutoSIPrefix(False)
        self.plot.setLabel("bottom", "global step", color=FOREGROUND)
        self.plot.setLabel("left", family, color=FOREGROUND)
        # The legend sits in the title row, right of the left-aligned title, so it never
        # hides data.
        self.legend = self.plot.addLegend(
            offset=None,
            brush=pg.mkBrush(255, 255, 255, 190),
            pen=pg.mkPen("#d8d8d8"),
            labelTextColor=FOREGROUND,
            labelTextSize="9pt",
            verSpacing=-8,
            horSpacing=12,
        )
        self.legend.setParentItem(self.plot)
        self.legend.anchor(itemPos=(1, 0), parentPos=(1, 0), offset=(-8, 1))
        self.legend.layout.setContentsMargins(4, 0, 4, 0)
        self.plot.layout.setRowMinimumHeight(0, 36)  # title row tall enough for the legend
        self.steps: dict[str, Curve] = {}
        self.running: dict[str, Curve] = {}
        self.epochs: dict[str, Curve] = {}
        self.epoch_lines = VerticalLines(
            pg.mkPen(EPOCH_LINE, width=1, style=Qt.PenStyle.DashLine), EPOCH_LINE_GAP_PX
        )
        self.epoch_lines.setZValue(-10)
        self.plot.addItem(self.epoch_lines, ignoreBounds=True)
        self._epoch_count = 0
        self._fit_markers: list[pg.InfiniteLine] = []
        self._note = ""
        self._set_title()
        self._crosshair = pg.InfiniteLine(
            angle=90, movable=False, pen=pg.mkPen("#888888", style=Qt.PenStyle.DotLine)
        )
        self._crosshair.setVisible(False)
        self.plot.addItem(self._crosshair, ignoreBounds=True)
        self._readout = pg.TextItem(
            "", anchor=(0, 0), fill=pg.mkBrush(255, 255, 255, 230), border=pg.mkPen("#bbbbbb")
        )
        self._readout.setZValue(1000)
        self._readout.setVisible(False)
        self.plot.addItem(self._readout, ignoreBounds=True)
        self.widget.scene().sigMouseMoved.connect(self._on_mouse_moved)
        # x follows the data with head-room (see _follow_x); y auto-ranges.
        vb = self.plot.getViewBox()
        vb.enableAutoRange(x=False, y=True)
        vb.sigRangeChangedManually.connect(self._on_range_changed_manually)
        self.following = True
        self._x_right = 0.0

    # -- curves ------------------------------------------------------------
    def step_curve(self, key: str) -> Curve:
        """Per-step curve of ``key`` (created on first use)."""
        curve = self.steps.get(key)
        if curve is None:
            curve = self._series_curve(key, "per step", width=1, alpha=150)
            self.steps[key] = curve
            old = self.running.pop(key, None)
            if old is not None:  # per-step values beat the running mean
                self._remove(old)
            self._relegend()
        return curve

    def running_curve(self, key: str) -> Curve | None:
        """Running-mean curve of ``key``, or None when per-step values exist for it."""
        if key in self.steps:
            return None
        curve = self.running.get(key)
        if curve is None:
            curve = self._series_curve(key, "running mean", width=1.5, alpha=255)
            self.running[key] = curve
            self._relegend()
        return curve

    def _series_curve(self, key: str, kind: str, width: float, alpha: int) -> Curve:
        """A decimated per-step line for ``key``, labelled ``<key> (<kind>)``."""
        colour = VAL if key.startswith("val_") else TRAIN
        curve = Curve(f"{key} ({kind})", colour, Series(self.capacity))
        curve.item = self._line(curve, width=width, alpha=alpha, z=1)
        return curve

    def epoch_curve(self, key: str) -> Curve:
        """Per-epoch curve: ``<key> (epoch mean)``, or ``val_<key>`` as it is."""
        curve = self.epochs.get(key)
        if curve is None:
            is_val = key.startswith("val_")
            label = key if is_val else f"{key} (epoch mean)"
            colour = VAL if is_val else TRAIN_DARK
            curve = Curve(label, colour)
            curve.item = pg.PlotDataItem(
                name=label,
                pen=pg.mkPen(colour, width=2),
                symbol="s" if is_val else "o",
                symbolSize=7,
                symbolBrush=pg.mkBrush(colour),
                symbolPen=pg.mkPen("w", width=1),
                antialias=True,
            )
            curve.item.setZValue(3 if is_val else 2)
            self.plot.addItem(curve.item)
            self.epochs[key] = curve
            self._relegend()
        return curve

    def sampled_curve(self, key: str) -> Curve:
        """A line of values sampled every few steps (the learning rate)."""
        curve = self.steps.get(key)
        if curve is None:
            curve = self._series_curve(key, "optimizer", width=1.5, alpha=255)
            self.steps[key] = curve
            self._relegend()
        return curve

    def curves(self) -> Iterable[Curve]:
        """Every curve on the plot."""
        yield from self.steps.values()
        yield from self.running.values()
        yield from self.epochs.values()

    def _line(self, curve: Curve, width: float, alpha: int, z: int) -> pg.PlotDataItem:
        colour = pg.mkColor(curve.colour)
        colour.setAlpha(alpha)
        item = pg.PlotDataItem(name=curve.label, pen=pg.mkPen(colour, width=width))
        item.setClipToView(True)
        item.setDownsampling(auto=True, method="peak")
        item.setZValue(z)
        self.plot.addItem(item)
        return item

    def _relegend(self) -> None:
        """List curves in a fixed order (per step, running, epoch mean, val) in one row."""
        self.legend.clear()
        shown = [c for c in self.curves() if c.item is not None]
        shown.sort(key=lambda c: c.label.startswith("val_"))
        for curve in shown:
            self.legend.addItem(curve.item, curve.label)
        self.legend.setColumnCount(max(1, len(shown)))

    def legend_labels(self) -> list[str]:
        """Legend texts in the order shown."""
        return [label.text for _, label in self.legend.items]

    def _remove(self, curve: Curve) -> None:
        if curve.item is not None:
            self.plot.removeItem(curve.item)
            curve.item = None

    # -- decorations -------------------------------------------------------
    def set_note(self, note: str) -> None:
        """Set the text shown after the family name in the title."""
        if note != self._note:
            self._note = note
            self._set_title()

    def title(self) -> str:
        """The plot's title text."""
        return f"{self.family}  {self._note}" if self._note else self.family

    def _set_title(self) -> None:
        self.plot.setTitle(
            "&nbsp;&nbsp;" + html.escape(self.title()),
            color=FOREGROUND,
            size="11pt",
            justify="left",
        )

    def sync_epoch_lines(self, epoch_steps: Sequence[float]) -> None:
        """Show epoch boundaries at ``epoch_steps`` (thinned when they crowd)."""
        if len(epoch_steps) != self._epoch_count:
            self._epoch_count = len(epoch_steps)
            self.epoch_lines.set_positions(epoch_steps)

    def add_fit_marker(self, step: float, text: str, colour: str = FIT_LINE) -> None:
        """Mark a step (a fit's start, a NaN, a restore) with a labelled vertical line."""
        line = pg.InfiniteLine(
            pos=step,
            angle=90,
            movable=False,
            pen=pg.mkPen(colour, width=1.5, style=Qt.PenStyle.DashDotLine),
            label=text,
            labelOpts={"position": 0.92, "color": colour, "anchors": [(0, 0.5), (0, 0.5)]},
        )
        line.setZValue(-5)
        self.plot.addItem(line, ignoreBounds=True)
        self._fit_markers.append(line)

    def fit_marker_labels(self) -> list[str]:
        """Texts of the fit markers, oldest first."""
        return [line.label.toPlainText() for line in self._fit_markers if line.label]

    # -- frame -------------------------------------------------------------
    def refresh(self) -> None:
        """``setData`` every curve that changed since the last frame."""
        changed = False
        for curve in self.curves():
            if curve.dirty and curve.item is not None:
                curve.update_item()
                changed = True
        if changed:
            self._follow_x()
            # Settle the auto range now: done lazily inside paintEvent it changes the
            # axes mid-paint and Qt paints the plot a second time.
            self.plot.getViewBox().prepareForPaint()

    def _follow_x(self) -> None:
        """Keep the newest step in view, moving the x range only when data reaches its end.

        A range that changed every frame would re-lay-out both axes and repaint the
        whole plot each frame; growing it by half when full changes it rarely.
        """
        vb = self.plot.getViewBox()
        if vb.autoRangeEnabled()[0]:  # the user pressed pyqtgraph's "A": follow again
            vb.enableAutoRange(x=False)
            self.following = True
            self._x_right = 0.0
        if not self.following:
            return
        last = max((c.x[-1] for c in self.curves() if c.item is not None and len(c.x)), default=0)
        if last <= self._x_right:
            return
        self._x_right = _nice_ceiling(max(last * 1.5, 10.0))
        vb.setXRange(0.0, self._x_right, padding=0.01)

    def fit_x_to_data(self) -> None:
        """When a run ends, drop the head-room: the finished curves fill the width."""
        if not self.following:
            return
        last = max((c.x[-1] for c in self.curves() if c.item is not None and len(c.x)), default=0)
        if last > 0:
            self._x_right = float(last)
            self.plot.getViewBox().setXRange(0.0, self._x_right, padding=0.02)

    def _on_range_changed_manually(self, *_: object) -> None:
        self.following = False

    # -- hover -------------------------------------------------------------
    def _on_mouse_moved(self, pos: QPointF) -> None:
        vb = self.plot.getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            self._crosshair.setVisible(False)
            self._readout.setVisible(False)
            return
        point = vb.mapSceneToView(pos)
        text = self.readout(point.x())
        if not text:
            self._readout.setVisible(False)
            return
        (x0, x1), (_, y1) = vb.viewRange()
        self._crosshair.setValue(point.x())
        self._crosshair.setVisible(True)
        self._readout.setHtml(text)
        self._readout.setAnchor((0, 0) if point.x() < (x0 + x1) / 2 else (1, 0))
        self._readout.setPos(point.x(), y1)
        self._readout.setVisible(True)

    def readout(self, x: float) -> str:
        """HTML listing, for the step nearest ``x``, each curve's nearest value."""
        rows: list[str] = []
        for curve in self.curves():
            if curve.item is None:
                continue
            hit = curve.nearest(x)
            if hit is None:
                continue
            cx, lo, hi = hit
            value = _fmt(lo) if lo == hi or lo != lo else f"{_fmt(lo)} … {_fmt(hi)}"
            where = "" if curve.series is not None else f" <i>(step {cx:,.0f})</i>"
            rows.append(
                f"<span style='color:{curve.colour}'>&#9632;</span> "
                f"{html.escape(curve.label)}: <b>{value}</b>{where}"
            )
        if not rows:
            return ""
        head = f"<b>step {max(x, 0):,.0f}</b>"
        return f"<div style='color:{FOREGROUND}; font-size:9pt'>{head}<br>{'<br>'.join(rows)}</div>"


def _nice_ceiling(x: float) -> float:
    """Smallest 1, 2, 2.5 or 5 times a power of ten that is >= ``x``."""
    exp = 10.0 ** np.floor(np.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * exp >= x:
            return m * exp
    return 10.0 * exp


def _fmt(v: float) -> str:
    return f"{v:.5g}"


class MetricsPanel(QScrollArea):
    """Scrollable stack of :class:`MetricPlot`, one per metric family, fed by the bridge.

    Args:
        capacity: buckets per per-step series (memory bound per curve).
        parent: Qt parent.
    """

    def __init__(self, capacity: int = SERIES_CAPACITY, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.capacity = capacity
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self._content = QWidget()
        self._content.setObjectName("metricsContent")
        self._content.setStyleSheet(f"QWidget#metricsContent {{ background: {BACKGROUND}; }}")
        self._layout = QVBoxLayout(self._content)
        self._layout.setContentsMargins(4, 4, 4, 4)
        self._layout.setSpacing(6)
        self._placeholder = QLabel("Open a training script and press Run: its metrics appear here.")
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._placeholder.setStyleSheet("color: #808080; font-size: 13pt;")
        self._layout.addWidget(self._placeholder)
        self.setWidget(self._content)
        self.plots: dict[str, MetricPlot] = {}
        self.paint_clock = [0.0]  # seconds spent painting plots, ever (read by the bridge)
        self._reset_data()

    def _reset_data(self) -> None:
        self._pending_values: dict[str, tuple[list[float], list[float]]] = {}
        self._pending_running: dict[str, tuple[list[float], list[float]]] = {}
        self._epoch_steps: list[float] = []
        self._epochs_dirty = False
        self._fits: list[tuple[float, str]] = []
        self._spe: dict[int, int] = {}  # fit index -> steps per batch hook
        self._note_dirty = False
        self._first_fit: FitStarted | None = None
        self._run_ended = False
        self._marks: list[tuple[float, str, str]] = []  # (step, text, colour): NaN, restore
        self._pending_lr: tuple[list[float], list[float]] = ([], [])

    # -- panel protocol ----------------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Queue a run of steps' values for this frame's redraw."""
        if not self._ingest_uniform(steps):
            self._ingest_mixed(steps)
        first, last = steps[0], steps[-1]
        for s in (first, last):
            if self._spe.get(s.fit_index, 1) != s.steps:
                self._spe[s.fit_index] = s.steps
                self._note_dirty = True

    def _ingest_uniform(self, steps: Sequence[StepEnded]) -> bool:
        """Fast path for the usual run: every step reports the same keys, none running-only.

        Returns False (having queued nothing) when that does not hold.
        """
        values = [s.values for s in steps]
        keys = tuple(values[0])
        n = len(keys)
        # Same count everywhere and every first-step key present => same key set.
        if set(map(len, values)) != {n} or {len(s.running) for s in steps} != {n}:
            return False
        try:
            columns = [[v[k] for v in values] for k in keys]
        except KeyError:
            return False
        xs = [s.global_step for s in steps]
        for key, ys in zip(keys, columns, strict=True):
            pending = self._pending_values.get(key)
            if pending is None:
                self._pending_values[key] = (xs.copy(), ys)
            else:
                pending[0].extend(xs)
                pending[1].extend(ys)
        return True

    def _ingest_mixed(self, steps: Sequence[StepEnded]) -> None:
        pv, pr = self._pending_values, self._pending_running
        for s in steps:
            g = s.global_step
            values = s.values
            for k, v in values.items():
                bucket = pv.get(k)
                if bucket is None:
                    bucket = pv[k] = ([], [])
                bucket[0].append(g)
                bucket[1].append(v)
            running = s.running
            if len(running) != len(values):
                for k, v in running.items():
                    if k in values:
                        continue
                    bucket = pr.get(k)
                    if bucket is None:
                        bucket = pr[k] = ([], [])
                    bucket[0].append(g)
                    bucket[1].append(v)

    def ingest_event(self, event: object) -> None:
        """Epoch means, val metrics, fit markers; a new run clears everything."""
        if isinstance(event, EpochEnded):
            for key, value in event.metrics.items():
                curve = self._plot_for(family_of(key)).epoch_curve(key)
                curve.xs.append(event.global_step)
                curve.ys.append(value)
                curve.dirty = True
            if not self._epoch_steps or self._epoch_steps[-1] != event.global_step:
                self._epoch_steps.append(event.global_step)
                self._epochs_dirty = True
        elif isinstance(event, FitStarted):
            if self._spe.get(event.fit_index) != event.steps_per_execution:
                self._spe[event.fit_index] = event.steps_per_execution
                self._note_dirty = True
            if event.fit_index == 0 or self._first_fit is None:
                self._first_fit = event
            if event.fit_index >= 1:
                if not self._fits:  # now that there are segments, label the first too
                    first = self._first_fit
                    self._add_fit(first.global_step, f"fit 1: {first.model.name}")
                self._add_fit(event.global_step, f"fit {event.fit_index + 1}: {event.model.name}")
        elif isinstance(event, RunStarted):
            self.clear()
        elif isinstance(event, RunEnded):
            self._run_ended = True
        elif isinstance(event, LearningRate):
            self._pending_lr[0].append(event.global_step)
            self._pending_lr[1].append(event.value)
        elif isinstance(event, NonFinite):
            self.add_mark(event.global_step, f"NaN/Inf loss at step {event.global_step}", NAN_LINE)
        elif isinstance(event, CheckpointRestored):
            self.add_mark(event.step, f"restored step {event.step}", RESTORE_LINE)

    def refresh(self) -> None:
        """Move this frame's values into the series and redraw changed curves once."""
        if self._pending_values:
            for key, (xs, ys) in self._pending_values.items():
                curve = self._plot_for(family_of(key)).step_curve(key)
                curve.series.extend(xs, ys)
                curve.dirty = True
            self._pending_values = {}
        if self._pending_running:
            for key, (xs, ys) in self._pending_running.items():
                curve = self._plot_for(family_of(key)).running_curve(key)
                if curve is not None:
                    curve.series.extend(xs, ys)
                    curve.dirty = True
            self._pending_running = {}
        # The learning rate's plot comes after the metrics' (it waits for one to exist).
        if self._pending_lr[0] and (self.plots or self._run_ended):
            curve = self._plot_for(LR_KEY).sampled_curve(LR_KEY)
            curve.series.extend(*self._pending_lr)
            curve.dirty = True
            self._pending_lr = ([], [])
        if self._note_dirty:
            note = self.note()
            for plot in self.plots.values():
                plot.set_note(note)
            self._note_dirty = False
        if self._epochs_dirty:
            for plot in self.plots.values():
                plot.sync_epoch_lines(self._epoch_steps)
            self._epochs_dirty = False
        for plot in self.plots.values():
            plot.refresh()
            if self._run_ended:
                plot.fit_x_to_data()
        self._run_ended = False

    # -- public ------------------------------------------------------------
    def note(self) -> str:
        """Title note about ``steps_per_execution`` (empty when every step is reported)."""
        every = {fit: n for fit, n in self._spe.items() if n > 1}
        if not every:
            return ""
        if len(set(every.values())) == 1 and len(every) == len(self._spe):
            n = next(iter(every.values()))
            return f"(every {n} steps: steps_per_execution={n})"
        parts = [
            f"fit {fit + 1}: every {n} steps, steps_per_execution={n}"
            for fit, n in sorted(every.items())
        ]
        return f"({'; '.join(parts)})"

    def clear(self) -> None:
        """Remove every plot and forget all data."""
        for plot in self.plots.values():
            self._layout.removeWidget(plot.widget)
            plot.widget.hide()
            plot.widget.deleteLater()
        self.plots = {}
        self._reset_data()
        self._placeholder.show()

    def set_placeholder(self, text: str) -> None:
        """What the empty area says before any metric arrives (e.g. which script is open)."""
        self._placeholder.setText(text)

    def placeholder(self) -> str:
        """The empty area's text."""
        return self._placeholder.text()

    def series_nbytes(self) -> int:
        """Bytes held by all per-step series stores."""
        return sum(
            c.series.nbytes()
            for plot in self.plots.values()
            for c in plot.curves()
            if c.series is not None
        )

    def _plot_for(self, family: str) -> MetricPlot:
        plot = self.plots.get(family)
        if plot is None:
            plot = MetricPlot(family, self.capacity, self.paint_clock)
            self.plots[family] = plot
            self._placeholder.hide()
            self._layout.addWidget(plot.widget)
            plot.set_note(self.note())
            plot.sync_epoch_lines(self._epoch_steps)
            for step, text in self._fits:
                plot.add_fit_marker(step, text)
            for step, text, colour in self._marks:
                plot.add_fit_marker(step, text, colour)
        return plot

    def add_mark(self, step: float, text: str, colour: str) -> None:
        """Mark ``step`` on every plot (now and on plots made later)."""
        self._marks.append((step, text, colour))
        for plot in self.plots.values():
            plot.add_fit_marker(step, text, colour)

    def marks(self) -> list[tuple[float, str]]:
        """(step, text) of the NaN and restore markers, oldest first."""
        return [(step, text) for step, text, _ in self._marks]

    def _add_fit(self, step: float, text: str) -> None:
        self._fits.append((step, text))
        for plot in self.plots.values():
            plot.add_fit_marker(step, text)
