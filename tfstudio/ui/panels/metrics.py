"""Metrics panel: one live plot per metric family (``loss`` and ``val_loss`` share one).

Per-step values go into decimated :class:`~tfstudio.core.series.Series` stores,
so memory stays bounded however long the run; each curve gets one ``setData``
per frame, and only when it changed. pyqtgraph clips to the visible range and
peak-downsamples to the pixel width, so millions of steps stay smooth.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from tfstudio.core.events import EpochEnded, FitStarted, RunEnded, RunStarted, StepEnded
from tfstudio.core.series import Series
from tfstudio.ui.plotting import (
    BACKGROUND,
    FOREGROUND,
    Curve,
    PlotView,
    Segment,
    SegmentMarkers,
    VerticalLines,
    XLinkGroup,
)

SERIES_CAPACITY = 10_000  # buckets per curve: 240 KB; at most 20k points (min+max) to draw
EPOCH_LINE_GAP_PX = 6  # epoch boundaries closer than this are thinned (every 2^k-th drawn)
TRAIN = "#1f77b4"
TRAIN_DARK = "#0d3f73"
VAL = "#e8590c"
EPOCH_LINE = "#c4c4c4"
FIT_LINE = "#6a3d9a"


def family_of(key: str) -> str:
    """Plot family of a metric key: the key without a leading ``val_``."""
    return key[4:] if key.startswith("val_") and len(key) > 4 else key


class MetricPlot(PlotView):
    """The plot of one metric family: per-step, running, epoch-mean and val curves.

    Args:
        family: metric name without ``val_`` (the plot's title).
        capacity: buckets per per-step series.
        paint_clock: shared paint-time accumulator.
        group: x-range group shared with the other metric plots.
    """

    def __init__(
        self,
        family: str,
        capacity: int = SERIES_CAPACITY,
        paint_clock: list[float] | None = None,
        group: XLinkGroup | None = None,
    ) -> None:
        super().__init__(family, "global step", family, paint_clock, group)
        self.family = family
        self.capacity = capacity
        self.steps: dict[str, Curve] = {}
        self.running: dict[str, Curve] = {}
        self.epochs: dict[str, Curve] = {}
        self.epoch_lines = VerticalLines(
            pg.mkPen(EPOCH_LINE, width=1, style=Qt.PenStyle.DashLine), EPOCH_LINE_GAP_PX
        )
        self.epoch_lines.setZValue(-10)
        self.vb.addItem(self.epoch_lines, ignoreBounds=True)
        self._epoch_count = 0
        self.markers = SegmentMarkers(self.vb, FIT_LINE)
        self._note = ""

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
            self.add_item(curve.item, z=3 if is_val else 2)
            self.epochs[key] = curve
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
        return self.add_item(item, z)

    def _relegend(self) -> None:
        """List curves in a fixed order (per step, running, epoch mean, val) in one row."""
        self.legend.clear()
        shown = [c for c in self.curves() if c.item is not None]
        shown.sort(key=lambda c: c.label.startswith("val_"))
        for curve in shown:
            self.legend.addItem(curve.item, curve.label)
        self.legend.setColumnCount(max(1, len(shown)))

    def _remove(self, curve: Curve) -> None:
        if curve.item is not None:
            self.remove_item(curve.item)
            curve.item = None

    # -- decorations -------------------------------------------------------
    def set_note(self, note: str) -> None:
        """Set the text shown after the family name in the title."""
        if note != self._note:
            self._note = note
            self._set_title()

    def _set_title(self) -> None:
        self.set_title(f"{self.family}  {self._note}" if self._note else self.family)

    def sync_epoch_lines(self, epoch_steps: Sequence[float]) -> None:
        """Show epoch boundaries at ``epoch_steps`` (thinned when they crowd)."""
        if len(epoch_steps) != self._epoch_count:
            self._epoch_count = len(epoch_steps)
            self.epoch_lines.set_positions(epoch_steps)

    def set_segments(self, segments: Sequence[Segment]) -> None:
        """Mark where each ``fit`` segment starts (labels never overlap)."""
        self.markers.set_segments(segments)

    def fit_marker_labels(self) -> list[str]:
        """Full texts of the fit markers, oldest first."""
        return [s.full for s in self.markers.segments]

    # -- frame -------------------------------------------------------------
    def refresh(self) -> None:
        """``setData`` every curve that changed since the last frame."""
        changed = False
        for curve in self.curves():
            if curve.dirty and curve.item is not None:
                curve.update_item()
                changed = True
        if changed:
            self.follow()
            self.refresh_range()

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
        self._fits: list[FitStarted] = []
        self._segments: list[Segment] = []
        self._spe: dict[int, int] = {}  # fit index -> steps per batch hook
        self._note_dirty = False
        self._run_ended = False
        self.xgroup = XLinkGroup()

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
            self._fits.append(event)
            if len(self._fits) >= 2:  # one fit is no segment worth marking
                self._segments = [_segment(f) for f in self._fits]
                for plot in self.plots.values():
                    plot.set_segments(self._segments)
        elif isinstance(event, RunStarted):
            self.clear()
        elif isinstance(event, RunEnded):
            self._run_ended = True

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
            self.xgroup.finish()
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
            plot = MetricPlot(family, self.capacity, self.paint_clock, self.xgroup)
            self.plots[family] = plot
            self._placeholder.hide()
            self._layout.addWidget(plot.widget)
            plot.set_note(self.note())
            plot.sync_epoch_lines(self._epoch_steps)
            plot.set_segments(self._segments)
        return plot


def _segment(fit: FitStarted) -> Segment:
    n = fit.fit_index + 1
    name = fit.model.name
    return Segment(
        fit.global_step, str(n), f"{n} {name}", f"fit {n}: {name} ({fit.model.class_name})"
    )
