"""Exponential moving average of a curve, as TensorBoard's smoothing slider computes it."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tfstudio.core.series import Series

MAX_WEIGHT = 0.999
MAX_BLOCK = 1024  # points smoothed per vectorised block (see Smoother.extend)


def ema(values: Sequence[float], weight: float) -> list[float]:
    """Debiased EMA (TensorBoard's): early points are not pulled toward zero.

    Args:
        values: the raw curve.
        weight: 0 (no smoothing) to <1 (heavy). Non-finite values pass through
            unchanged and do not disturb the average.
    """
    if weight <= 0.0:
        return [float(v) for v in values]
    weight = min(weight, MAX_WEIGHT)
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

    Two ways to feed it: :meth:`update` with the whole curve each time (a followed
    run re-read from disk; the smoothed curve is kept in ``out``), or :meth:`extend`
    with only the new points (a live stream; nothing is kept but the EMA state).
    Either way each point is smoothed once: re-smoothing the whole curve on every
    poll or frame would cost O(length) each time.
    """

    __slots__ = ("weight", "out", "_last", "_n", "_block")

    def __init__(self, weight: float) -> None:
        self.weight = min(max(float(weight), 0.0), MAX_WEIGHT)
        self.out: list[float] = []
        self._last = 0.0
        self._n = 0
        # w**-k stays below 1e200 within a block (see _extend_finite): room for huge values.
        w = self.weight
        self._block = MAX_BLOCK if w <= 0.0 else max(1, min(MAX_BLOCK, int(200 / -math.log10(w))))

    def reset(self) -> None:
        """Start over: the next point is the first of a new curve (e.g. after a break)."""
        self.out, self._last, self._n = [], 0.0, 0

    def update(self, values: Sequence[float]) -> list[float]:
        """The smoothed curve of ``values`` (whose first ``len(self.out)`` are unchanged)."""
        if len(values) < len(self.out):  # not the same curve: start over
            self.reset()
        if self.weight <= 0.0:
            self.out = [float(v) for v in values]
            return self.out
        new = values[len(self.out) :]
        if len(new):
            self.out.extend(self.extend(new).tolist())
        return self.out

    def extend(self, values: Sequence[float] | np.ndarray) -> np.ndarray:
        """The smoothed values of points appended after all those seen so far.

        Vectorised (numpy, in blocks), equal to :func:`ema` over the whole curve up
        to float rounding; non-finite values pass through and do not count.
        """
        v = np.asarray(values, dtype=np.float64)
        if self.weight <= 0.0 or not len(v):
            return v.copy()
        finite = np.isfinite(v)
        if finite.all():
            return self._extend_finite(v)
        out = v.copy()
        if finite.any():
            out[finite] = self._extend_finite(v[finite])
        return out

    def extend_buckets(self, means: Sequence[float] | np.ndarray, width: int) -> np.ndarray:
        """Like :meth:`extend` for bucket means that each stand for ``width`` raw points.

        A decimated store keeps bucket means, not the raw points: an EMA with weight
        ``w**width`` over the means approximates the EMA of the raw points (exact for
        ``width`` 1), and the state carries on with raw points afterwards.
        """
        if width <= 1 or self.weight <= 0.0:
            return self.extend(means)
        inner = Smoother(self.weight**width)
        inner._last, inner._n = self._last, self._n // width
        out = inner.extend(means)
        self._last, self._n = inner._last, inner._n * width
        return out

    def _extend_finite(self, v: np.ndarray) -> np.ndarray:
        # Within a block of k points: last_j = w^j * (last_0 + (1-w) * sum_{i<=j} v_i w^-i),
        # then debiased by 1 - w^(n+j) as TensorBoard does.
        w = self.weight
        out = np.empty_like(v)
        last, n = self._last, self._n
        powers = w ** np.arange(1, min(len(v), self._block) + 1, dtype=np.float64)
        for start in range(0, len(v), self._block):
            block = v[start : start + self._block]
            k = len(block)
            wp = powers[:k]
            lasts = wp * (last + (1.0 - w) * np.cumsum(block / wp))
            out[start : start + k] = lasts / (1.0 - (w**n) * wp)
            last = float(lasts[-1])
            n += k
        self._last, self._n = last, n
        return out


class SmoothedSeries:
    """The EMA of a growing curve, kept as points arrive: a run store's derived series.

    Each point is smoothed once, in numpy blocks, into a decimated
    :class:`~tfstudio.core.series.Series` of its own (bounded memory). The EMA
    restarts after every break of the raw curve (a new fit is a new model), so
    one fit's curve does not bleed into the next. Weight 0 is off and costs nothing.

    Args:
        capacity: buckets of the smoothed store (as the raw one's).
        weight: EMA weight, 0 (off) to <1.
    """

    __slots__ = ("capacity", "series", "breaks", "smoother", "last_x", "revision", "suspended")

    def __init__(
        self, capacity: int, weight: float = 0.0, breaks: list[float] | None = None
    ) -> None:
        self.capacity = capacity
        self.series = Series(capacity)
        self.breaks: list[float] = breaks if breaks is not None else []  # the raw curve's
        self.smoother = Smoother(weight)
        self.last_x = -math.inf
        self.revision = 0
        self.suspended = False  # no view shows it: no work until rebuilt

    @property
    def weight(self) -> float:
        """The EMA weight (0 = off)."""
        return self.smoother.weight

    @property
    def on(self) -> bool:
        """Whether smoothing is on (weight above 0)."""
        return self.smoother.weight > 0.0

    def extend(self, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray) -> None:
        """Smooth points appended to the raw curve (ascending x) and store them."""
        if self.suspended or not self.on or not len(xs):
            return
        x = np.asarray(xs, dtype=np.float64)
        y = np.asarray(ys, dtype=np.float64)
        breaks = self.breaks
        if not breaks or breaks[-1] < self.last_x:  # the usual frame: no new break
            self.series.extend(x, self.smoother.extend(y))
            self.last_x = float(x[-1])
            self.revision += 1
            return
        self._smooth_into(x, y, np.ones(len(x), dtype=np.int64))

    def rebuild(self, weight: float, x: np.ndarray, y: np.ndarray, width: np.ndarray) -> None:
        """Start over with ``weight`` from the raw curve's bucket means (``Series.means``)."""
        self.smoother = Smoother(weight)
        self.series = Series(self.capacity)
        self.last_x = -math.inf
        self.revision += 1
        self.suspended = False
        if self.on and len(x):
            self._smooth_into(x, y, width)

    def suspend(self, weight: float | None = None) -> None:
        """Stop smoothing new points (nothing shows the line); a rebuild resumes."""
        self.suspended = True
        if weight is not None:
            self.smoother = Smoother(weight)
        if self.series.count:
            self.series = Series(self.capacity)
            self.revision += 1

    def _smooth_into(self, x: np.ndarray, y: np.ndarray, width: np.ndarray) -> None:
        # Pieces of equal (segment, bucket width); the EMA restarts at each new segment.
        breaks = self.breaks
        cuts: list[int] = []
        if breaks and breaks[-1] > self.last_x:  # else no break among these points
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
        self.series.extend(x, out)
        self.last_x = float(x[-1])
        self.revision += 1
