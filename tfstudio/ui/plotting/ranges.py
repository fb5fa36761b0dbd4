"""Axis ranges that follow the bulk of the data (pure numpy, no Qt)."""

from __future__ import annotations

import numpy as np

PERCENTILES = (1.0, 99.0)  # the bulk of the data
FENCE = 1.0  # a point further than this many bulk spans beyond the bulk is an outlier
MARGIN = 0.06  # share of the span added above and below
MIN_POINTS = 20  # fewer points than this: show them all
# The bulk's percentiles of more points than twice this are taken from every k-th point
# (k odd, so an envelope's minima and maxima both count): a long run's plot holds up to
# 40,000 points (a line and its smoothed twin), and sorting them all at every redraw was
# half of its range's cost. The extremes and the outliers still come from every point.
BULK_SAMPLE = 4096
# Values that differ by less than this share of their size are one value: float32 running
# means and smoothing of a metric stuck at 1.0 scatter by ~1e-6, and a range fitted to
# that scatter showed an accuracy of 1.0 on an axis from 0.999996 to 1.000004.
FLAT = 1e-4
SETTLE_SLACK = 0.2  # the range shown may be this much wider than wanted before it shrinks
SETTLE_ROOM = 0.05  # share of the span added each side when the range moves, ...
SETTLE_LEAD = 0.14  # ... and on the side the data left by (a trend goes on that way)


def robust_range(
    values: np.ndarray, show_all: bool = False, margin: float = MARGIN
) -> tuple[float, float] | None:
    """Range showing the bulk of ``values`` and every point not far from it.

    The bulk is the 1st..99th percentile (of an evenly strided sample of
    :data:`BULK_SAMPLE` points or more when there are many); points more than one bulk
    span beyond it are outliers and left out (the caller marks them). With ``show_all`` every
    finite value is in range. Returns None when no value is finite.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return None
    lo, hi = float(v.min()), float(v.max())
    if not show_all and v.size >= MIN_POINTS:
        bulk = v if v.size <= 2 * BULK_SAMPLE else v[:: (v.size // BULK_SAMPLE) | 1]
        p_lo, p_hi = percentiles(bulk, PERCENTILES)
        span = p_hi - p_lo
        if span <= FLAT * max(abs(p_lo), abs(p_hi)):  # a flat bulk: fences by its size
            span = abs(p_hi) * 0.05 or 1e-9
        low_fence, high_fence = p_lo - FENCE * span, p_hi + FENCE * span
        if lo < low_fence or hi > high_fence:
            inliers = v[(v >= low_fence) & (v <= high_fence)]
            lo, hi = float(inliers.min()), float(inliers.max())
    span = hi - lo
    if span <= FLAT * max(abs(lo), abs(hi)):  # one value (within float rounding)
        mid = (lo + hi) / 2
        pad = abs(mid) * 0.1 or 1.0
        return mid - pad, mid + pad
    pad = span * margin
    return lo - pad, hi + pad


def percentiles(values: np.ndarray, qs: tuple[float, ...]) -> tuple[float, ...]:
    """``np.percentile(values, qs)`` (its default, linear method), to the last bit, from one
    ``np.partition`` of the few ranks it needs instead of numpy's general path (a third of
    its time on a plot's few thousand points, at every redraw). ``values``: finite, 1-D."""
    n = values.size
    at = [q / 100.0 * (n - 1) for q in qs]
    below = [min(int(a), n - 1) for a in at]
    ranks = sorted({r for b in below for r in (b, min(b + 1, n - 1))})
    part = np.partition(values, ranks)
    out = []
    for a, b in zip(at, below, strict=True):
        lo, hi = float(part[b]), float(part[min(b + 1, n - 1)])
        t = a - b
        # numpy's lerp: from the nearer end, so t = 0 and t = 1 give lo and hi exactly
        d = hi - lo
        out.append(hi - d * (1.0 - t) if t >= 0.5 else lo + d * t)
    return tuple(out)


def settled_range(
    shown: tuple[float, float] | None,
    wanted: tuple[float, float],
    slack: float = SETTLE_SLACK,
    room: float = SETTLE_ROOM,
    lead: float = SETTLE_LEAD,
) -> tuple[float, float]:
    """The y range to show: ``shown`` while it holds ``wanted`` and is at most ``slack``
    wider, else ``wanted`` with ``room`` added each side, ``lead`` instead on the one
    side the data left ``shown`` by.

    A range that followed the data exactly would move every frame of a live run, and
    each move re-ticks and repaints the axis; this one moves only when the data leaves
    it or fills too little of it, and the room keeps the next small drift inside. A
    falling loss leaves by the bottom again and again, a rising accuracy by the top:
    the lead on that side (``room + lead`` stays within ``slack``, so the moved range
    does not shrink again at once) moved a live run's metric axes about 40% less
    often than room alone.
    """
    lo, hi = wanted
    pad_lo = pad_hi = (hi - lo) * room
    if shown is not None:
        shown_lo, shown_hi = shown
        below, above = lo < shown_lo, hi > shown_hi
        if not (below or above) and (shown_hi - shown_lo) * (1 - slack) <= hi - lo:
            return shown
        if below and not above:  # left by one side: more room there
            pad_lo = (hi - lo) * lead
        elif above and not below:
            pad_hi = (hi - lo) * lead
    return lo - pad_lo, hi + pad_hi


def nice_ceiling(x: float) -> float:
    """Smallest 1, 2, 2.5 or 5 times a power of ten that is >= ``x``."""
    exp = 10.0 ** np.floor(np.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * exp >= x:
            return float(m * exp)
    return float(10.0 * exp)
