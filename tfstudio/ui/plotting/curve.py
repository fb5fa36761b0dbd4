"""One drawn line: a view of a run store's line (its points and breaks), one pyqtgraph item."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pyqtgraph as pg

from tfstudio.core.series import Series

MAX_SYMBOLS = 200  # point markers are dropped past this many points
# pyqtgraph's peak downsampling keeps this many (min, max) pairs per pixel column of
# the view (its default is 5: ten points a pixel, all but two of them hidden under the
# stroke). A per-step line of a long run holds up to 20,000 points; at one pair a pixel
# it is drawn from ~2,200 on a 1,100 px plot instead of ~8,000.
PEAK_PAIRS_PER_PX = 1.0


def drawn_as_envelope(item: pg.PlotDataItem) -> pg.PlotDataItem:
    """Set ``item`` to draw only the view's part of its data, one (min, max) pair per
    pixel column where it has more points than that (every spike stays drawn)."""
    item.setClipToView(True)
    item.setDownsampling(auto=True, method="peak")
    item.opts["autoDownsampleFactor"] = PEAK_PAIRS_PER_PX
    return item


class Curve:
    """One line on a plot: the store line it draws, its graphics item, what it drew last.

    A curve keeps no data of its own: ``source`` is a line of a run store (a
    :class:`~tfstudio.core.run_store.Track` or the smoothed twin of one), and the
    curve redraws when the source's ``revision`` moved. The line never connects
    across one of the source's breaks: segment boundaries and gaps where the value
    was absent are drawn as gaps.

    Args:
        label: legend text.
        colour: line colour.
        source: the store line; None gives the curve a point list of its own
            (``append``), for plots that are not fed from a run store.
    """

    __slots__ = (
        "label",
        "colour",
        "source",
        "item",
        "seen",
        "forced",
        "x",
        "y",
        "envelope",
        "smooth",
        "xmap",
    )

    def __init__(self, label: str, colour: str, source: LineSource | None = None) -> None:
        self.label = label
        self.colour = colour
        self.source: LineSource = source if source is not None else _Points()
        self.item: pg.PlotDataItem | None = None
        self.seen = -1  # the source revision last drawn
        self.forced = True
        self.x = np.empty(0)  # the points last drawn (without the gap markers)
        self.y = np.empty(0)
        self.envelope = True  # a decimated series draws each bucket's min and max
        self.smooth: Curve | None = None  # the drawn smoothed twin, when the source has one
        # where its steps land on the plot's x axis (an ``XMap``: time, epochs); None: x is
        # the step. The curve's own points (``x``, ``nearest``) stay in steps.
        self.xmap: XMapLike | None = None

    @property
    def series(self) -> Series | None:
        """The source's decimated store (None for a line of few points)."""
        return self.source.series

    @property
    def breaks(self) -> list[float]:
        """Where the line is cut (the source's)."""
        return self.source.breaks

    @property
    def dirty(self) -> bool:
        """Whether the source changed since the curve last took its points."""
        return self.forced or self.seen != self.source.revision

    @dirty.setter
    def dirty(self, value: bool) -> None:
        self.forced = bool(value)

    def count(self) -> int:
        """Points received so far."""
        series = self.series
        return series.count if series is not None else len(self.source.xs)

    def append(
        self, xs: list[float] | tuple[float, ...], ys: list[float] | tuple[float, ...]
    ) -> None:
        """Add points to a curve with a point list of its own (ascending x)."""
        self.source.append(xs, ys)

    def add_break(self, x: float) -> None:
        """Cut the line at ``x``: points left and right of it are not joined."""
        self.source.add_break(x)

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """All points as arrays (a decimated series gives each bucket's min then max, or
        its mean when ``envelope`` is False)."""
        series = self.series
        if series is not None:
            if not self.envelope and series.width > 1:
                x, y, _ = series.means()
                return x, y
            return series.view()
        return (
            np.asarray(self.source.xs, dtype=np.float64),
            np.asarray(self.source.ys, dtype=np.float64),
        )

    def drawn(self) -> tuple[np.ndarray, np.ndarray]:
        """The points with a NaN inserted at every break that falls between two of them.

        A held source (a learning rate, sent when it changes) is drawn as steps: each
        value until the next point, the last until the source's ``held_to``.
        """
        held_to = getattr(self.source, "held_to", None)
        if held_to is not None:
            return held_steps(self._held_x(), self.y, held_to, self.breaks)
        return with_breaks(self.x, self.y, self.breaks)

    def _held_x(self) -> np.ndarray:
        """Where held values start: one sent at a new fit's start (its global step G, before
        its first step; the fit's segment begins at the break G + 0.5) is the value that
        fit starts with, so it is drawn from the break on."""
        breaks = self.breaks
        if not breaks or not len(self.x):
            return self.x
        starts = np.isin(self.x + 0.5, np.asarray(breaks, dtype=np.float64))
        return np.where(starts, self.x + 0.5, self.x) if starts.any() else self.x

    def update_item(self, draw: bool = True) -> None:
        """Take this frame's points and give them to the item (one ``setData``).

        With ``draw`` False only the points are taken (the item is hidden).
        """
        self.seen = self.source.revision
        self.forced = False
        self.x, self.y = self.points()
        smooth = self.smoothed()
        if smooth is not None:
            smooth.update_item(draw and smooth.item is not None)
        if not draw:
            return
        assert self.item is not None
        if len(self.x) > MAX_SYMBOLS and self.item.opts["symbol"] is not None:
            self.item.setSymbol(None)  # markers on thousands of points are a smear, and slow
        self.draw()

    def draw(self, x: np.ndarray | None = None, y: np.ndarray | None = None) -> None:
        """Give the item the points (``drawn()`` unless given), placed on the plot's x axis."""
        if x is None or y is None:
            x, y = self.drawn()
        if self.xmap is not None:
            x = self.xmap.to_x(x)
            keep = np.isfinite(x)
            if not keep.all():
                x, y = x[keep], y[keep]
            if getattr(self.xmap, "pauses", False):
                x, y = cut_pauses(x, y)
        assert self.item is not None
        self.item.setData(x, y, connect="finite")

    def at(self, x: float) -> float:
        """The step at plot x ``x`` (x itself when the axis is the step)."""
        return float(x) if self.xmap is None else self.xmap.to_step(x)

    def smoothed(self) -> Curve | None:
        """The smoothed twin when smoothing is on, else None."""
        smooth = self.smooth
        if smooth is None or not smooth.source.on:
            return None
        return smooth

    def nearest(
        self, x: float, lo: float = -np.inf, hi: float = np.inf
    ) -> tuple[float, float, float] | None:
        """Drawn point nearest ``x`` within [lo, hi] as (x, y_min, y_max).

        A decimated bucket spans y_min..y_max. None when no point lies in [lo, hi]. A held
        line gives the value in effect at ``x``: its last point at or before ``x``.
        """
        held_to = getattr(self.source, "held_to", None)
        if held_to is not None:
            return self._held_at(x, lo, hi, held_to)
        a = int(np.searchsorted(self.x, lo, side="left"))
        b = int(np.searchsorted(self.x, hi, side="right"))
        xs = self.x[a:b]
        if not len(xs):
            return None
        i = int(np.searchsorted(xs, x))
        if i >= len(xs) or (i > 0 and x - xs[i - 1] < xs[i] - x):
            i -= 1
        xi = xs[i]
        s = int(np.searchsorted(xs, xi, "left"))
        e = int(np.searchsorted(xs, xi, "right"))
        ys = self.y[a + s : a + e]
        return float(xi), float(np.nanmin(ys)), float(np.nanmax(ys))

    def _held_at(
        self, x: float, lo: float, hi: float, held_to: float
    ) -> tuple[float, float, float] | None:
        """The held value in effect at ``x`` (None before the first, past the newest step,
        or where a break cut its hold)."""
        xs = self._held_x()
        i = int(np.searchsorted(xs, x, side="right")) - 1
        if i < 0 or not lo <= xs[i] <= hi or x > max(held_to, xs[-1]):
            return None
        b = np.asarray(self.breaks, dtype=np.float64)
        if len(b) and ((b > xs[i]) & (b <= x)).any():
            return None
        return float(xs[i]), float(self.y[i]), float(self.y[i])

    def window(self, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
        """The drawn points with lo < x <= hi (e.g. one segment of the run)."""
        a = int(np.searchsorted(self.x, lo, side="right"))
        b = int(np.searchsorted(self.x, hi, side="right"))
        return self.x[a:b], self.y[a:b]

    def segment_line(self, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
        """What to draw of one segment (lo < x <= hi): its points, as steps when held."""
        held_to = getattr(self.source, "held_to", None)
        if held_to is None:
            return self.window(lo, hi)
        # a value sent at the segment's start (step lo, before its first step) is its own
        xs = self._held_x()
        a = int(np.searchsorted(xs, lo, side="left"))
        b = int(np.searchsorted(xs, hi, side="right"))
        if a == b:
            return xs[a:b], self.y[a:b]
        return held_steps(xs[a:b], self.y[a:b], min(hi, held_to))


class XMapLike(Protocol):
    """Where a run's steps land on an x axis (``tfstudio.core.x_axes.XMap``)."""

    def to_x(self, steps: np.ndarray) -> np.ndarray: ...  # noqa: D102

    def to_step(self, x: float) -> float: ...  # noqa: D102


class LineSource(Protocol):
    """What a curve draws from: a run store's line (``Track``, ``SmoothedSeries``)."""

    series: Series | None
    breaks: list[float]
    revision: int
    # optional ``held_to``: a line of held values (see Curve.drawn)


class _Points:
    """A line of a few points kept by the curve itself (plots not fed from a run store)."""

    __slots__ = ("series", "xs", "ys", "breaks", "revision", "on")

    def __init__(self) -> None:
        self.series: Series | None = None
        self.xs: list[float] = []
        self.ys: list[float] = []
        self.breaks: list[float] = []
        self.revision = 0
        self.on = False

    def append(
        self, xs: list[float] | tuple[float, ...], ys: list[float] | tuple[float, ...]
    ) -> None:
        self.xs.extend(xs)
        self.ys.extend(ys)
        self.revision += 1

    def add_break(self, x: float) -> None:
        if not self.breaks or x > self.breaks[-1]:
            self.breaks.append(float(x))
            self.revision += 1


PAUSE_FACTOR = 10.0  # a time gap this many times a line's usual one is a pause
PAUSE_MIN_S = 2.0  # ... and at least this long


def cut_pauses(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """On a time axis: cut the line where time went on without points (a validation, a
    checkpoint, a pause), so a pause shows as a gap, not as a flat or sloped line."""
    if len(x) < 3:
        return x, y
    d = np.diff(x)
    steps = d[np.isfinite(d) & (d > 0) & np.isfinite(y[1:]) & np.isfinite(y[:-1])]
    if not len(steps):
        return x, y
    cut = np.nonzero(d > max(PAUSE_FACTOR * float(np.median(steps)), PAUSE_MIN_S))[0]
    if not len(cut):
        return x, y
    at = cut + 1
    return np.insert(x, at, (x[cut] + x[at]) / 2), np.insert(y, at, np.nan)


def with_breaks(
    x: np.ndarray, y: np.ndarray, breaks: list[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``x``, ``y`` with a NaN point at each break inside the data, so no line crosses it."""
    if not len(breaks) or len(x) < 2:
        return x, y
    b = np.asarray(breaks, dtype=np.float64)
    b = b[(b > x[0]) & (b <= x[-1])]
    if not len(b):
        return x, y
    idx = np.searchsorted(x, b, side="left")
    return np.insert(x, idx, b), np.insert(y, idx, np.nan)


def held_steps(
    x: np.ndarray, y: np.ndarray, end: float, breaks: list[float] | np.ndarray = ()
) -> tuple[np.ndarray, np.ndarray]:
    """Values that hold until the next point, as a line of steps (NaN-cut at breaks).

    Each value holds from its point to the next one, or to the first break in between
    (then the line is cut there); the last value holds until ``end`` (or its break).
    """
    n = len(x)
    if not n:
        return x, y
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    nxt = np.append(x[1:], max(float(end), float(x[-1])))
    b = np.asarray(breaks, dtype=np.float64)
    cut = np.zeros(n, dtype=bool)
    stop = nxt
    if len(b):
        j = np.searchsorted(b, x, side="right")  # the first break after each point
        first = b[np.minimum(j, len(b) - 1)]
        cut = (j < len(b)) & (first <= nxt)
        stop = np.where(cut, first, nxt)
    # per point: itself, where it stops holding, and a NaN there when a break cut it
    xs = np.stack([x, stop, stop], axis=1)
    ys = np.stack([y, y, np.full(n, np.nan)], axis=1)
    keep = np.ones((n, 3), dtype=bool)
    keep[:, 2] = cut
    return xs[keep], ys[keep]
