"""One line of (x, y) points: decimated store, segment breaks, one pyqtgraph item."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg

from tfstudio.core.series import Series

if TYPE_CHECKING:
    from tfstudio.ui.plotting.smoothing import SmoothedLine

MAX_SYMBOLS = 200  # point markers are dropped past this many points


class Curve:
    """One line on a plot: its data, its graphics item and whether it needs redrawing.

    Points come either into a decimated :class:`Series` (per-step data, bounded
    memory) or into plain lists (few points, e.g. one per epoch). The line never
    connects across a break (:meth:`add_break`): segment boundaries and gaps where
    the value was absent are drawn as gaps.

    Args:
        label: legend text.
        colour: line colour.
        series: decimated store; None keeps every point in ``xs``/``ys``.

    A curve may carry a :class:`~tfstudio.ui.plotting.smoothing.SmoothedLine`
    (``smooth``): its EMA, fed with every appended point and drawn with it.
    """

    __slots__ = (
        "label",
        "series",
        "xs",
        "ys",
        "item",
        "dirty",
        "x",
        "y",
        "colour",
        "breaks",
        "smooth",
        "envelope",
    )

    def __init__(self, label: str, colour: str, series: Series | None = None) -> None:
        self.label = label
        self.colour = colour
        self.series = series
        self.xs: list[float] = []  # points when series is None
        self.ys: list[float] = []
        self.breaks: list[float] = []  # the line is cut at each of these x (ascending)
        self.item: pg.PlotDataItem | None = None
        self.dirty = False
        self.x = np.empty(0)  # the points last drawn (without the gap markers)
        self.y = np.empty(0)
        self.smooth: SmoothedLine | None = None
        self.envelope = True  # a decimated series draws each bucket's min and max

    def count(self) -> int:
        """Points received so far."""
        return self.series.count if self.series is not None else len(self.xs)

    def append(
        self, xs: list[float] | tuple[float, ...], ys: list[float] | tuple[float, ...]
    ) -> None:
        """Add points (ascending x) and mark the curve for redrawing."""
        smooth = self.smooth
        if smooth is not None and smooth.on:  # convert once for both stores
            xs = np.asarray(xs, dtype=np.float64)  # type: ignore[assignment]
            ys = np.asarray(ys, dtype=np.float64)  # type: ignore[assignment]
        if self.series is not None:
            self.series.extend(xs, ys)
        else:
            self.xs.extend(xs)
            self.ys.extend(ys)
        if smooth is not None:
            smooth.extend(xs, ys, self.breaks)
        self.dirty = True

    def add_break(self, x: float) -> None:
        """Cut the line at ``x``: points left and right of it are not joined."""
        if not self.breaks or x > self.breaks[-1]:
            self.breaks.append(float(x))
            self.dirty = True

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """All points as arrays (a decimated series gives each bucket's min then max, or
        its mean when ``envelope`` is False)."""
        if self.series is not None:
            if not self.envelope and self.series.width > 1:
                x, y, _ = self.series.means()
                return x, y
            return self.series.view()
        return np.asarray(self.xs, dtype=np.float64), np.asarray(self.ys, dtype=np.float64)

    def drawn(self) -> tuple[np.ndarray, np.ndarray]:
        """The points with a NaN inserted at every break that falls between two of them."""
        return with_breaks(self.x, self.y, self.breaks)

    def update_item(self, draw: bool = True) -> None:
        """Take this frame's points and give them to the item (one ``setData``).

        With ``draw`` False only the points are taken (the item is hidden).
        """
        self.x, self.y = self.points()
        self.dirty = False
        smooth = self.smooth
        if smooth is not None and smooth.on:
            smooth.line.breaks = self.breaks
            smooth.line.update_item(draw and smooth.line.item is not None)
        if not draw:
            return
        assert self.item is not None
        if len(self.x) > MAX_SYMBOLS and self.item.opts["symbol"] is not None:
            self.item.setSymbol(None)  # markers on thousands of points are a smear, and slow
        x, y = self.drawn()
        self.item.setData(x, y, connect="finite")

    def smoothed(self) -> Curve | None:
        """The smoothed line when smoothing is on, else None."""
        smooth = self.smooth
        return smooth.line if smooth is not None and smooth.on else None

    def nearest(
        self, x: float, lo: float = -np.inf, hi: float = np.inf
    ) -> tuple[float, float, float] | None:
        """Drawn point nearest ``x`` within [lo, hi] as (x, y_min, y_max).

        A decimated bucket spans y_min..y_max. None when no point lies in [lo, hi].
        """
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

    def window(self, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
        """The drawn points with lo < x <= hi (e.g. one segment of the run)."""
        a = int(np.searchsorted(self.x, lo, side="right"))
        b = int(np.searchsorted(self.x, hi, side="right"))
        return self.x[a:b], self.y[a:b]


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
