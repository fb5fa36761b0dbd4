"""Exponential moving average of a curve, as TensorBoard's smoothing slider computes it."""

from __future__ import annotations

import math
from collections.abc import Sequence


def ema(values: Sequence[float], weight: float) -> list[float]:
    """Debiased EMA (TensorBoard's): early points are not pulled toward zero.

    Args:
        values: the raw curve.
        weight: 0 (no smoothing) to <1 (heavy). Non-finite values pass through
            unchanged and do not disturb the average.
    """
    if weight <= 0.0:
        return [float(v) for v in values]
    weight = min(weight, 0.999)
    out: list[float] = []
    last = 0.0
    n = 0
    for v in values:
        v = float(v)
        if not math.isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1.0 - weight) * v
        n += 1
        out.append(last / (1.0 - weight**n))
    return out


class Smoother:
    """EMA of a growing curve, computing only the points appended since the last call.

    A followed run grows by a few points per poll; re-smoothing the whole curve
    each time would cost O(length) per poll.
    """

    __slots__ = ("weight", "out", "_last", "_n")

    def __init__(self, weight: float) -> None:
        self.weight = min(max(weight, 0.0), 0.999)
        self.out: list[float] = []
        self._last = 0.0
        self._n = 0

    def update(self, values: Sequence[float]) -> list[float]:
        """The smoothed curve of ``values`` (whose first ``len(self.out)`` are unchanged)."""
        w = self.weight
        if len(values) < len(self.out):  # not the same curve: start over
            self.out, self._last, self._n = [], 0.0, 0
        if w <= 0.0:
            self.out = [float(v) for v in values]
            return self.out
        out, last, n = self.out, self._last, self._n
        for v in values[len(out) :]:
            v = float(v)
            if not math.isfinite(v):
                out.append(v)
                continue
            last = last * w + (1.0 - w) * v
            n += 1
            out.append(last / (1.0 - w**n))
        self._last, self._n = last, n
        return out
