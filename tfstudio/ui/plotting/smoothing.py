"""Smoothing shared by the live metrics view and the runs panel: one slider, one EMA.

- :class:`SmoothingSlider`: TensorBoard's control, a weight from 0 (raw) to 0.99.
- The smoothed lines themselves are a run store's derived series
  (:class:`tfstudio.core.smoothing.SmoothedSeries`): a view only draws them.
- :func:`faint`: the colour of the raw curve under its smoothed one.

The EMA is :mod:`tfstudio.core.smoothing`'s (TensorBoard's debiased one).
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QWidget

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
