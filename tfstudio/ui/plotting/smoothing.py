"""Smoothing shared by the live metrics view and the runs panel: one slider, one EMA.

- :class:`SmoothingSlider`: TensorBoard's control, a weight from 0 (raw) to 0.99.
- :class:`SmoothedLine`: the EMA of a live :class:`~tfstudio.ui.plotting.Curve`, kept
  as points arrive (each point smoothed once, in numpy blocks), restarted at every
  break of the curve (a new fit is a new model), stored in a decimated ``Series``
  like the raw points so memory stays bounded.
- :func:`faint`: the colour of the raw curve under its smoothed one.

The EMA is :mod:`tfstudio.core.smoothing`'s (TensorBoard's debiased one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QWidget

from tfstudio.core.series import Series
from tfstudio.core.smoothing import Smoother
from tfstudio.ui.plotting.curve import Curve

DEFAULT_WEIGHT = 0.6  # TensorBoard's default
MAX_SLIDER_WEIGHT = 0.99
RAW_ALPHA = 35  # the raw curve under a smoothed one: same colour, this faint (dense noisy
# curves pile their segments up: at 60 a 3,000-step loss hid its smoothed line in a small plot)


def faint(colour: str | QColor, alpha: int = RAW_ALPHA) -> QColor:
    """``colour`` with a low alpha: the raw curve drawn under its smoothed curve."""
    c = pg.mkColor(colour)
    c.setAlpha(alpha)
    return c


class SmoothingSlider(QWidget):
    """ "Smoothing" label, a 0..0.99 slider (steps of 0.01) and the value; emits the weight.

    Args:
        weight: initial EMA weight (0 = raw curves only).
    """

    changed = Signal(float)

    def __init__(self, weight: float = DEFAULT_WEIGHT, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, round(MAX_SLIDER_WEIGHT * 100))
        self.slider.setMaximumWidth(140)
        self.slider.setMinimumWidth(80)
        self.value_label = QLabel()
        self.value_label.setMinimumWidth(28)
        tip = (
            "Exponential moving average of the per-step curves (TensorBoard's smoothing): "
            "the smoothed curve is drawn on top, the raw one stays faint behind it. 0 = raw only."
        )
        self.setToolTip(tip)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(QLabel("smoothing"))
        layout.addWidget(self.slider)
        layout.addWidget(self.value_label)
        self.slider.setValue(round(_clamp(weight) * 100))
        self._show(self.slider.value())
        self.slider.valueChanged.connect(self._on_value_changed)

    def weight(self) -> float:
        """The EMA weight set now (0 = raw)."""
        return self.slider.value() / 100.0

    def set_weight(self, weight: float) -> None:
        """Move the slider to ``weight`` (emits :attr:`changed` when it moves)."""
        self.slider.setValue(round(_clamp(weight) * 100))

    def _on_value_changed(self, value: int) -> None:
        self._show(value)
        self.changed.emit(value / 100.0)

    def _show(self, value: int) -> None:
        self.value_label.setText(f"{value / 100:.2f}")


def _clamp(weight: float) -> float:
    try:
        w = float(weight)
    except (TypeError, ValueError):
        return DEFAULT_WEIGHT
    return min(max(w if math.isfinite(w) else DEFAULT_WEIGHT, 0.0), MAX_SLIDER_WEIGHT)


class SmoothedLine:
    """The EMA of a growing curve's points, smoothed once each as they are appended.

    ``line`` is the drawn curve (its own decimated store and graphics item). The
    EMA restarts after every break of the raw curve, so one fit's curve does not
    bleed into the next. With weight 0 the line is off and costs nothing; so does a
    suspended line (its plot is hidden) until :meth:`rebuild` catches it up.

    Args:
        colour: the smoothed line's colour (the raw curve's, at full strength).
        capacity: buckets of the smoothed store (as the raw one's).
        weight: EMA weight, 0 (off) to <1.
    """

    __slots__ = ("capacity", "line", "smoother", "last_x", "suspended")

    def __init__(self, colour: str, capacity: int, weight: float = 0.0) -> None:
        self.capacity = capacity
        self.line = Curve("", colour, Series(capacity))
        self.line.envelope = False  # one point per bucket: a smoothed curve has no spikes
        self.smoother = Smoother(weight)
        self.last_x = -math.inf
        self.suspended = False

    @property
    def weight(self) -> float:
        """The EMA weight (0 = off)."""
        return self.smoother.weight

    @property
    def on(self) -> bool:
        """Whether smoothing is on (weight above 0)."""
        return self.smoother.weight > 0.0

    def extend(
        self,
        xs: Sequence[float] | np.ndarray,
        ys: Sequence[float] | np.ndarray,
        breaks: Sequence[float],
    ) -> None:
        """Smooth points appended to the raw curve (ascending x) and store them."""
        if self.suspended or not self.on or not len(xs):
            return
        x = np.asarray(xs, dtype=np.float64)
        y = np.asarray(ys, dtype=np.float64)
        if not len(breaks) or breaks[-1] < self.last_x:  # the usual frame: no new break
            self.line.series.extend(x, self.smoother.extend(y))  # type: ignore[union-attr]
            self.line.dirty = True
            self.last_x = float(x[-1])
            return
        self._smooth_into(x, y, np.ones(len(x), dtype=np.int64), breaks)

    def suspend(self, weight: float | None = None) -> None:
        """Stop smoothing new points (the plot is hidden); :meth:`rebuild` resumes."""
        self.suspended = True
        if weight is not None:
            self.smoother = Smoother(weight)
        self.line.series = Series(self.capacity) if self.line.series.count else self.line.series  # type: ignore[union-attr]

    def rebuild(self, weight: float, raw: Curve) -> None:
        """Start over with ``weight`` from what ``raw`` holds (its store's bucket means)."""
        self.suspended = False
        self.smoother = Smoother(weight)
        self.line.series = Series(self.capacity)
        self.line.dirty = True
        self.last_x = -math.inf
        if not self.on:
            self.line.x = self.line.y = np.empty(0)
            return
        if raw.series is not None:
            x, y, width = raw.series.means()
        else:
            x = np.asarray(raw.xs, dtype=np.float64)
            y = np.asarray(raw.ys, dtype=np.float64)
            width = np.ones(len(x), dtype=np.int64)
        if len(x):
            self._smooth_into(x, y, width, raw.breaks)

    def _smooth_into(
        self, x: np.ndarray, y: np.ndarray, width: np.ndarray, breaks: Sequence[float]
    ) -> None:
        # Pieces of equal (segment, bucket width); the EMA restarts at each new segment.
        cuts: list[int] = []
        if len(breaks) and breaks[-1] > self.last_x:  # else no break among these points
            b = np.asarray(breaks, dtype=np.float64)
            seg = np.searchsorted(b, np.concatenate(([self.last_x], x)))
            cuts = (np.nonzero(np.diff(seg))[0]).tolist()  # a break before x[i]
        cut_set = set(cuts)
        edges = sorted({0, len(x), *cuts, *(np.nonzero(np.diff(width))[0] + 1).tolist()})
        out = np.empty(len(x), dtype=np.float64)
        for a, e in zip(edges[:-1], edges[1:], strict=True):
            if a in cut_set:
                self.smoother.reset()
            out[a:e] = self.smoother.extend_buckets(y[a:e], int(width[a]))
        self.line.series.extend(x, out)  # type: ignore[union-attr]
        self.line.dirty = True
        self.last_x = float(x[-1])
