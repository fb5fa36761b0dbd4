"""Bounded time series with min/max decimation for long runs.

A run of millions of steps cannot keep (or draw) every point. ``Series`` keeps
at most ``capacity`` buckets; each bucket holds the min and max of the raw
points it covers and the step where it starts. When the store fills up,
neighbouring buckets merge in pairs (bucket width doubles), so memory stays
bounded while every spike stays visible in the drawn envelope.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class Series:
    """Append-only (x, y) series with bounded memory.

    Args:
        capacity: most buckets kept (even number); memory is about
            ``capacity * 32`` bytes whatever the number of points.
    """

    def __init__(self, capacity: int = 100_000) -> None:
        if capacity < 4 or capacity % 2:
            raise ValueError(f"capacity must be an even number >= 4, got {capacity}")
        self.capacity = capacity
        self.width = 1  # raw points per bucket
        self.count = 0  # raw points appended so far
        self._n = 0  # buckets in use
        self._x = np.empty(capacity, dtype=np.float64)
        self._lo = np.empty(capacity, dtype=np.float64)
        self._hi = np.empty(capacity, dtype=np.float64)
        self._mean = np.empty(capacity, dtype=np.float64)  # what re-smoothing reads
        self._pending_x: list[float] = []
        self._pending_y: list[float] = []

    def __len__(self) -> int:
        return self.count

    def append(self, x: float, y: float) -> None:
        """Add one point."""
        self.extend((x,), (y,))

    def extend(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        """Add many points at once (the cheap way: one call per frame)."""
        if len(xs) != len(ys):
            raise ValueError(f"xs and ys differ in length: {len(xs)} != {len(ys)}")
        if not len(xs):
            return
        self.count += len(xs)
        px = np.asarray(xs, dtype=np.float64)
        py = np.asarray(ys, dtype=np.float64)
        if self._pending_x:
            px = np.concatenate([np.asarray(self._pending_x), px])
            py = np.concatenate([np.asarray(self._pending_y), py])
            self._pending_x, self._pending_y = [], []
        while len(px):
            w = self.width
            full = (len(px) // w) * w
            room = (self.capacity - self._n) * w
            take = min(full, room)
            if take:
                self._store(px[:take], py[:take])
                px, py = px[take:], py[take:]
            if self._n == self.capacity:
                self._halve()
                continue
            if len(px) < self.width:
                self._pending_x = px.tolist()
                self._pending_y = py.tolist()
                break

    def _store(self, px: np.ndarray, py: np.ndarray) -> None:
        w = self.width
        k = len(px) // w
        s = slice(self._n, self._n + k)
        if w == 1:
            self._x[s] = px
            self._lo[s] = py
            self._hi[s] = py
            self._mean[s] = py
        else:
            grid = py.reshape(k, w)
            self._x[s] = px[::w]
            # min/max propagate NaN on purpose: a bucket holding a NaN loss
            # draws as a gap instead of hiding the divergence.
            self._lo[s] = grid.min(axis=1)
            self._hi[s] = grid.max(axis=1)
            self._mean[s] = grid.mean(axis=1)
        self._n += k

    def _halve(self) -> None:
        n = self._n
        half = n // 2
        self._x[:half] = self._x[0:n:2]
        self._lo[:half] = np.minimum(self._lo[0:n:2], self._lo[1:n:2])
        self._hi[:half] = np.maximum(self._hi[0:n:2], self._hi[1:n:2])
        self._mean[:half] = (self._mean[0:n:2] + self._mean[1:n:2]) * 0.5
        self._n = half
        self.width *= 2

    def truncate(self, x: float) -> None:
        """Forget every point at or after ``x`` (a run restored to an earlier step goes on
        from there). A bucket that began before ``x`` stays whole: decimated points cannot
        be split, so up to one bucket's width of later points may remain in its min/max."""
        if self._pending_x:
            keep = [i for i, px in enumerate(self._pending_x) if px < x]
            if len(keep) < len(self._pending_x):
                self._pending_x = [self._pending_x[i] for i in keep]
                self._pending_y = [self._pending_y[i] for i in keep]
        n = int(np.searchsorted(self._x[: self._n], x, side="left"))
        if n < self._n:
            self._n = n
            self._pending_x, self._pending_y = [], []  # they came after the dropped buckets
        self.count = self._n * self.width + len(self._pending_x)

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        """Points to draw: raw points, or each bucket's min then max.

        Points not yet filling a bucket are appended raw, so the newest data
        is always visible.
        """
        n = self._n
        if self.width == 1:
            x = self._x[:n]
            y = self._lo[:n]
        else:
            x = np.repeat(self._x[:n], 2)
            y = np.empty(2 * n, dtype=np.float64)
            y[0::2] = self._lo[:n]
            y[1::2] = self._hi[:n]
        if self._pending_x:
            x = np.concatenate([x, np.asarray(self._pending_x)])
            y = np.concatenate([y, np.asarray(self._pending_y)])
        return x.copy(), y.copy()

    def means(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each bucket's start x, mean y and width in raw points, then the pending raw points.

        What a curve can be re-smoothed from once its raw points are merged (exact
        while ``width`` is 1).
        """
        n = self._n
        x = self._x[:n]
        y = self._mean[:n]
        w = np.full(n, self.width, dtype=np.int64)
        if self._pending_x:
            k = len(self._pending_x)
            x = np.concatenate([x, np.asarray(self._pending_x)])
            y = np.concatenate([y, np.asarray(self._pending_y)])
            w = np.concatenate([w, np.ones(k, dtype=np.int64)])
        return x.copy(), y.copy(), w

    def nbytes(self) -> int:
        """Bytes held by the store (bounded by ``capacity``)."""
        return self._x.nbytes + self._lo.nbytes + self._hi.nbytes + self._mean.nbytes
