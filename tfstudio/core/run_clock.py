"""When each step of a run happened: global step -> seconds since the run started.

A live run's steps carry ``time`` (seconds since the run started,
``StepColumns.time``) and its start carries the clock time (``RunStarted.wall_time``);
a recorded run's event files carry each point's wall time and ``run.json`` the
start. Both fill one :class:`RunClock`, which the plots read to put a run's points
on a time axis (relative time, wall time). Memory is bounded: past ``capacity``
steps every other kept step is dropped (a uniform stride, like the series), and
the newest step is always kept exactly. Points may come in any order (a folder's
lines one after another): a step keeps the first time it was given.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CLOCK_CAPACITY = 20_000  # steps kept exactly (320 KB); past it, one in every 2^k


class RunClock:
    """Steps and the seconds (since the run started) at which they ended.

    Points may come in any order (a folder's lines one after another, each with its
    own points): a step already known keeps its first time. Past ``capacity`` steps
    only steps on a stride are kept (every 2nd, 4th, ... step), and the newest step
    always.

    Args:
        capacity: most steps kept; beyond it the kept steps thin to a stride.
    """

    def __init__(self, capacity: int = CLOCK_CAPACITY) -> None:
        if capacity < 4:
            raise ValueError(f"capacity must be at least 4, got {capacity}")
        self.capacity = capacity
        self.start_wall: float | None = None  # time.time() when the run started
        self._steps = np.empty(0, dtype=np.float64)
        self._secs = np.empty(0, dtype=np.float64)
        self._stride = 1  # the steps kept are multiples of this
        self._tail: tuple[float, float] | None = None  # the newest step, when off the stride
        self._anchors: dict[float, float] = {}  # segment starts: step -> seconds
        self._table: tuple[np.ndarray, np.ndarray] | None = None
        self.revision = 0

    def __len__(self) -> int:
        return len(self._steps) + (self._tail is not None)

    @property
    def last_step(self) -> float | None:
        """The newest step known (None before any)."""
        last = float(self._steps[-1]) if len(self._steps) else None
        if self._tail is not None and (last is None or self._tail[0] > last):
            return self._tail[0]
        return last

    def set_start(self, wall: float) -> None:
        """The clock time (``time.time()``) at which the run started."""
        if wall and wall == wall:
            self.start_wall = float(wall)
            self.revision += 1

    def add(
        self, steps: Sequence[float] | np.ndarray, seconds: Sequence[float] | np.ndarray
    ) -> None:
        """Steps and the seconds since the run started at which they ended (each block in
        ascending steps). A step already known keeps its time; a run that went back is
        :meth:`truncate` d first."""
        s = np.asarray(steps, dtype=np.float64)
        t = np.asarray(seconds, dtype=np.float64)
        ok = np.isfinite(t) & np.isfinite(s)
        if not ok.all():
            s, t = s[ok], t[ok]
        if not len(s):
            return
        if len(s) > 1:  # the first of each step (a line's repeated step keeps its first time)
            first = np.empty(len(s), dtype=bool)
            first[0] = True
            first[1:] = s[1:] > np.maximum.accumulate(s)[:-1]
            s, t = s[first], t[first]
        last = self.last_step
        if last is None or s[-1] > last:
            self._tail = (float(s[-1]), float(t[-1]))
        on = np.mod(s, self._stride) == 0
        s, t = s[on], t[on]
        if len(s):
            idx = np.searchsorted(self._steps, s)
            n = len(self._steps)
            known = (idx < n) & (self._steps[np.minimum(idx, max(n - 1, 0))] == s) if n else idx < 0
            s, t, idx = s[~known], t[~known], idx[~known]
            if len(s):
                self._steps = np.insert(self._steps, idx, s)
                self._secs = np.insert(self._secs, idx, t)
                while len(self._steps) > self.capacity:
                    self._stride *= 2
                    keep = np.mod(self._steps, self._stride) == 0
                    self._steps, self._secs = self._steps[keep], self._secs[keep]
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
        n = int(np.searchsorted(self._steps, step, side="left"))
        self._steps, self._secs = self._steps[:n], self._secs[:n]
        self._anchors = {s: t for s, t in self._anchors.items() if s < step}
        self._changed()

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """Every step kept and its seconds (ascending steps, seconds never decreasing)."""
        if self._table is None:
            s, t = self._steps, self._secs
            extra = dict(self._anchors)
            if self._tail is not None:
                extra.setdefault(*self._tail)
            if extra:
                a = np.fromiter(extra, dtype=np.float64)
                a = a[~np.isin(a, s)]
                if len(a):
                    at = np.array([extra[v] for v in a.tolist()])
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

    def _changed(self) -> None:
        self._table = None
        self.revision += 1
