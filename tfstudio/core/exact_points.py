"""What a view draws of a recorded run beside its store: exact points, and an overview.

A recorded run's store keeps each per-step line as a decimated envelope (bounded
memory whatever the run's length). When a view zooms in so far that it could draw
every point, :class:`ExactPoints` reads the points of that range again from the
run's event files (only the pieces holding those steps) on a thread of its own,
and hands them to the view, which draws them in place of the envelope there.

It stays beside the store: :func:`attach` ties one to a store, :func:`exact_points_for`
finds it from a line of the store. Pure Python and numpy (no Qt): the view asks,
the thread reads, the view polls for the answer.

An :class:`Overview` holds a few points of each line over the whole run, sampled
before the run is read in order (a big run appears coarse first): a view draws
them beyond what the store holds so far, until the full read has passed them.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tfstudio.core.eventfile import TagColumns
from tfstudio.core.run_store import STEP, RunStore, Track

DEBOUNCE_S = 0.15  # the read starts once the wanted range has stopped moving this long

ReadSteps = Callable[[int, int, Callable[[], bool]], dict[str, TagColumns]]


@dataclass(frozen=True, slots=True)
class ExactRange:
    """Every recorded point of one line with ``first <= step <= last``."""

    first: int
    last: int
    xs: np.ndarray
    ys: np.ndarray

    def covers(self, x0: float, x1: float) -> bool:
        """Whether the visible range [x0, x1] lies within this one."""
        return self.first <= x0 and x1 <= self.last


def last_writes(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points as the store keeps them: where the steps go back (a checkpoint restored),
    what came later replaces what was recorded from that step on."""
    back = np.flatnonzero(np.diff(steps) <= 0)
    if not len(back):
        return steps, values
    xs, ys = steps[: back[0] + 1], values[: back[0] + 1]
    for a, b in zip(back + 1, [*(back[1:] + 1), len(steps)], strict=True):
        keep = xs < steps[a]
        xs = np.concatenate([xs[keep], steps[a:b]])
        ys = np.concatenate([ys[keep], values[a:b]])
    return xs, ys


def splice(x: np.ndarray, y: np.ndarray, exact: ExactRange) -> tuple[np.ndarray, np.ndarray]:
    """The envelope ``x``, ``y`` with the exact points in place of its part inside the range."""
    a = int(np.searchsorted(x, exact.first, side="left"))
    b = int(np.searchsorted(x, exact.last, side="right"))
    return (
        np.concatenate([x[:a], exact.xs, x[b:]]),
        np.concatenate([y[:a], exact.ys, y[b:]]),
    )


class ExactPoints:
    """Reads the exact points of a wanted step range of a run, off the caller's thread.

    :meth:`want` names the range (from any thread; each call supersedes the last);
    the read starts once calls stop for ``debounce_s``, and a read whose range was
    superseded meanwhile is stopped and forgotten. :meth:`get` gives what the last
    finished read holds for one line. The thread runs only while there is a read
    to do.

    Args:
        read_steps: reads every point with ``first <= step <= last`` per line key,
            stopping early when its third argument returns True.
        debounce_s: how long the range must stay put before it is read.
    """

    def __init__(self, read_steps: ReadSteps, debounce_s: float = DEBOUNCE_S) -> None:
        self._read_steps = read_steps
        self.debounce_s = debounce_s
        self._cond = threading.Condition()
        self._wanted: tuple[int, int] | None = None
        self._asked_at = 0.0
        self._generation = 0
        self._read_generation = -1  # the generation whose range was read last
        self._ranges: dict[str, ExactRange] = {}
        self._thread: threading.Thread | None = None
        self._closed = False
        self.revision = 0  # moves when a read finishes (or the points are forgotten)
        self.reads = 0  # reads finished (for tests and benchmarks)

    @property
    def wanted(self) -> tuple[int, int] | None:
        """The range asked for last (None: none)."""
        return self._wanted

    def pending(self) -> bool:
        """Whether a wanted range has not been read yet."""
        with self._cond:
            return self._wanted is not None and not self._settled()

    def want(self, first: int, last: int) -> None:
        """Read the exact points of steps ``first..last`` soon (unless already held)."""
        with self._cond:
            if self._closed or self._wanted == (first, last):
                return
            self._wanted = (first, last)
            self._asked_at = time.monotonic()
            self._generation += 1
            if self._holds(self._wanted):
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="tfstudio-zoom-reader", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def forget(self) -> None:
        """Nothing wanted any more (zoomed out): drop the points; a read going on stops."""
        with self._cond:
            self._wanted = None
            self._generation += 1
            if self._ranges:
                self._ranges = {}
                self.revision += 1
            self._cond.notify_all()

    def covers(self, x0: float, x1: float) -> bool:
        """Whether the points held were read for a range holding [x0, x1]."""
        ranges = self._ranges
        return bool(ranges) and all(r.covers(x0, x1) for r in ranges.values())

    def get(self, key: str) -> ExactRange | None:
        """The exact points of line ``key`` read last (None: none held)."""
        return self._ranges.get(key)

    def close(self, timeout: float = 5.0) -> None:
        """Stop reading and wait for the thread (the run is no longer shown)."""
        with self._cond:
            self._closed = True
            self._wanted = None
            self._generation += 1
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _settled(self) -> bool:
        """The wanted range is held, or was read (as far as the folder's points go)."""
        assert self._wanted is not None
        return self._read_generation == self._generation or self._holds(self._wanted)

    def _holds(self, wanted: tuple[int, int]) -> bool:
        ranges = self._ranges
        return bool(ranges) and all(
            r.first <= wanted[0] and wanted[1] <= r.last for r in ranges.values()
        )

    def _loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed or self._wanted is None or self._settled():
                        self._thread = None
                        return
                    wait = self._asked_at + self.debounce_s - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
                first, last = self._wanted
                generation = self._generation

            def stale(generation: int = generation) -> bool:
                return self._generation != generation

            try:
                read = self._read_steps(first, last, stale)
            except Exception:  # noqa: BLE001 - an unreadable range leaves the envelope shown
                read = {}
            ranges: dict[str, ExactRange] = {}
            for key, cols in read.items():
                xs, ys = last_writes(cols.steps.astype(np.float64), cols.values)
                if not len(xs):
                    continue
                # Only as far as the points go: steps the folder holds later (a run still
                # loading or followed) keep the envelope there, not a hole.
                ranges[key] = ExactRange(first, min(last, int(xs[-1])), xs, ys)
            with self._cond:
                if generation != self._generation:
                    continue  # superseded while it was read
                self.reads += 1
                self._read_generation = generation
                if not ranges:  # nothing there: remember the range as read, with no points
                    ranges = {"": ExactRange(first, last, np.empty(0), np.empty(0))}
                self._ranges = ranges
                self.revision += 1


# -- beside the store ------------------------------------------------------------------
_ATTACHED: weakref.WeakKeyDictionary[RunStore, ExactPoints] = weakref.WeakKeyDictionary()


def attach(store: RunStore, exact: ExactPoints) -> ExactPoints:
    """Tie ``exact`` to ``store`` (replacing, and closing, one tied before)."""
    old = _ATTACHED.get(store)
    if old is not None and old is not exact:
        old.close()
    _ATTACHED[store] = exact
    return exact


def detach(store: RunStore) -> None:
    """Untie (and close) the exact points of ``store``, if any."""
    exact = _ATTACHED.pop(store, None)
    if exact is not None:
        exact.close()


def exact_points_of(store: RunStore) -> ExactPoints | None:
    """The exact points tied to ``store`` (None for a live run or one without a folder)."""
    return _ATTACHED.get(store)


def exact_points_for(track: Track) -> ExactPoints | None:
    """The exact points of the store holding ``track``, when it is a per-step line of a
    recorded run (None otherwise)."""
    if track.kind != STEP:
        return None
    for store, exact in list(_ATTACHED.items()):
        if store.steps.get(track.key) is track:
            return exact
    return None


class Overview:
    """A few points of each per-step line over a whole recorded run (coarse first).

    ``lines``: key -> (steps, values), in step order. A view draws the part beyond
    what the store holds so far (:meth:`tail`); once the full read has gone past
    it, nothing is left of it.
    """

    def __init__(self) -> None:
        self.lines: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.revision = 0

    def set(self, key: str, xs: np.ndarray, ys: np.ndarray) -> None:
        """The overview of line ``key``."""
        self.lines[key] = (np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64))
        self.revision += 1

    def tail(self, key: str, after: float | None) -> tuple[np.ndarray, np.ndarray] | None:
        """The overview's points of ``key`` beyond step ``after`` (None: none)."""
        line = self.lines.get(key)
        if line is None:
            return None
        xs, ys = line
        start = 0 if after is None else int(np.searchsorted(xs, after, side="right"))
        if start >= len(xs):
            return None
        return xs[start:], ys[start:]


_OVERVIEWS: weakref.WeakKeyDictionary[RunStore, Overview] = weakref.WeakKeyDictionary()


def overview_of(store: RunStore, make: bool = False) -> Overview | None:
    """The overview beside ``store`` (made when ``make`` and there is none)."""
    overview = _OVERVIEWS.get(store)
    if overview is None and make:
        overview = _OVERVIEWS[store] = Overview()
    return overview


def overview_for(track: Track) -> Overview | None:
    """The overview of the store holding ``track``, when it is a per-step line (else None)."""
    if track.kind != STEP:
        return None
    for store, overview in list(_OVERVIEWS.items()):
        if store.steps.get(track.key) is track:
            return overview
    return None
