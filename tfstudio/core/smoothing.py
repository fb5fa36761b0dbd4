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
