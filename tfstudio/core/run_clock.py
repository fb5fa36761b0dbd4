"""When each step of a run happened: global step -> seconds since the run started.

A live run's steps carry ``time`` (seconds since the run started,
``StepColumns.time``) and its start carries the clock time (``RunStarted.wall_time``);
a recorded run's event files carry each point's wall time and ``run.json`` the
start. Both fill one :class:`RunClock`, which the plots read to put a run's points
on a time axis (relative time, wall time). Memory is bounded: past ``capacity``
steps every other kept step is dropped (a uniform stride, like the series), and
the newest step is always kept exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CLOCK_CAPACITY = 20_000  # steps kept exactly (320 KB); past it, one in every 2^k


class RunClock:
    """Steps and the seconds (since the run started) at which they ended.

    Args:
        capacity: most steps kept (even); beyond it the kept steps thin to a stride.
    """

    def __init__(self, capacity: int = CLOCK_CAPACITY) -> None:
        if capacity < 4 or capacity % 2:
            raise ValueError(f"capacity must be an even number >= 4, got {capacity}")
        self.capacity = capacity
        self.start_wall: float | None = None  # time.time() when the run started
        self._steps = np.empty(capacity, dtype=np.float64)
        self._secs = np.empty(capacity, dtype=np.float64)
        self._n = 0
        self._stride = 1  # one kept step per this many added
        self._count = 0  # steps added (since the last truncate, counted for the stride)
        self._tail: tuple[float, float] | None = None  # the newest step, when not kept
        self._anchors: dict[float, float] = {}  # segment starts: step -> seconds
        self._table: tuple[np.ndarray, np.ndarray] | None = None
        self.revision = 0

    def __len__(self) -> int:
        return self._n + (self._tail is not None)

    @property
    def last_step(self) -> float | None:
        """The newest step known (None before any)."""
        if self._tail is not None:
            return self._tail[0]
        return float(self._steps[self._n - 1]) if self._n else None

    def set_start(self, wall: float) -> None:
        """The clock time (``time.time()``) at which the run started."""
        if wall and wall == wall:
            self.start_wall = float(wall)
            self.revision += 1

    def add(
        self, steps: Sequence[float] | np.ndarray, seconds: Sequence[float] | np.ndarray
    ) -> None:
        """Steps (ascending) and the seconds since the run started at which they ended.

        Steps at or before the newest known are ignored (another metric of the same
        steps); a run that went back is :meth:`truncate` d first.
        """
        s = np.asarray(steps, dtype=np.float64)
        t = np.asarray(seconds, dtype=np.float64)
        if not len(s):
            return
        last = self.last_step
        if last is not None:
            keep = s > last
            if not keep.all():
                s, t = s[keep], t[keep]
                if not len(s):
                    return
        ok = np.isfinite(t)
        if not ok.all():
            s, t = s[ok], t[ok]
            if not len(s):
                return
        index = self._count + np.arange(len(s))
        self._count += len(s)
        kept = index % self._stride == 0
        self._append(s[kept], t[kept], index[kept])
        newest = float(s[-1])
        if self._n and self._steps[self._n - 1] == newest:
            self._tail = None
        else:
            self._tail = (newest, float(t[-1]))
        self._changed()

    def add_wall(
        self, steps: Sequence[float] | np.ndarray, wall: Sequence[float] | np.ndarray
    ) -> None:
        """Steps and the clock times (``time.time()``) at which they were written (a
        recorded run); the run's start, when unknown, is taken as the first of them."""
        w = np.asarray(wall, dtype=np.float64)
        if not len(w):
            return
        if self.start_wall is None:
            self.set_start(float(np.nanmin(w)))
        if self.start_wall is None:
            return
        self.add(steps, w - self.start_wall)

    def anchor(self, step: float, seconds: float) -> None:
        """A segment's start: its step and when it began (a fit starts before its first step)."""
        if seconds == seconds and step not in self._anchors:
            self._anchors[float(step)] = float(seconds)
            self._changed()

    def truncate(self, step: float) -> None:
        """Forget the steps at or after ``step`` (the run was restored to an earlier one)."""
        if self._tail is not None and self._tail[0] >= step:
            self._tail = None
        n = int(np.searchsorted(self._steps[: self._n], step, side="left"))
        if n < self._n:
            self._n = n
            self._count = n * self._stride  # the next step added is kept: the stride goes on
        self._anchors = {s: t for s, t in self._anchors.items() if s < step}
        self._changed()

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """Every step kept and its seconds (ascending steps, seconds never decreasing)."""
        if self._table is None:
            s = self._steps[: self._n]
            t = self._secs[: self._n]
            if self._tail is not None:
                s = np.append(s, self._tail[0])
                t = np.append(t, self._tail[1])
            if self._anchors:
                a = np.fromiter(self._anchors, dtype=np.float64)
                a = a[~np.isin(a, s)]
                if len(a):
                    at = np.array([self._anchors[v] for v in a.tolist()])
                    s = np.concatenate([s, a])
                    t = np.concatenate([t, at])
                    order = np.argsort(s, kind="stable")
                    s, t = s[order], t[order]
            self._table = (s.copy(), np.maximum.accumulate(t) if len(t) else t.copy())
        return self._table

    def seconds(self, steps: np.ndarray | Sequence[float]) -> np.ndarray:
        """Seconds since the run started at each step (interpolated between kept steps,
        held at the ends; NaN for every step while the clock is empty)."""
        x = np.asarray(steps, dtype=np.float64)
        s, t = self.points()
        if not len(s):
            return np.full(x.shape, np.nan)
        return np.interp(x, s, t)

    def steps_at(self, seconds: np.ndarray | Sequence[float] | float) -> np.ndarray:
        """The step at each time (the inverse of :meth:`seconds`)."""
        x = np.asarray(seconds, dtype=np.float64)
        s, t = self.points()
        if not len(s):
            return np.full(x.shape, np.nan)
        return np.interp(x, t, s)

    def _append(self, s: np.ndarray, t: np.ndarray, index: np.ndarray) -> None:
        while len(s):
            room = self.capacity - self._n
            if not room:
                self._thin()
                keep = index % self._stride == 0
                s, t, index = s[keep], t[keep], index[keep]
                continue
            take = min(room, len(s))
            self._steps[self._n : self._n + take] = s[:take]
            self._secs[self._n : self._n + take] = t[:take]
            self._n += take
            s, t, index = s[take:], t[take:], index[take:]

    def _thin(self) -> None:
        """Full: keep every other step, twice the stride."""
        half = (self._n + 1) // 2
        self._steps[:half] = self._steps[: self._n : 2]
        self._secs[:half] = self._secs[: self._n : 2]
        self._n = half
        self._stride *= 2

    def _changed(self) -> None:
        self._table = None
        self.revision += 1
