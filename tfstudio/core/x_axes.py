"""The x axes a run's metrics can be drawn over, and where each step lands on them.

- ``global``: the run's global step (fits one after another);
- ``fit``: the step within each fit (every fit from 0, overlaid);
- ``relative``: seconds since the run started;
- ``wall``: the clock time (``time.time()``) at which the step ended;
- ``epoch``: epochs done (an epoch's last step at its number, steps between
  in proportion), where the run has epochs.

A store's lines keep their points over global steps; a plot maps them to its axis
when drawing them (:func:`x_map`), with each run's own clock (``RunStore.clock``),
so runs of different speeds land at their own times.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

GLOBAL = "global"
PER_FIT = "fit"
RELATIVE = "relative"
WALL = "wall"
EPOCH = "epoch"
AXES = (GLOBAL, PER_FIT, RELATIVE, WALL, EPOCH)
LABELS = {
    GLOBAL: "global step",
    PER_FIT: "step within fit",
    RELATIVE: "relative time (s)",
    WALL: "wall time",
    EPOCH: "epoch",
}
# The command line's names (``--x-axis``) and the older ones.
CLI_NAMES = {
    "step": GLOBAL,
    "fit-step": PER_FIT,
    "relative": RELATIVE,
    "wall": WALL,
    "epoch": EPOCH,
    "global": GLOBAL,
    "fit": PER_FIT,
}
STEP_AXES = (GLOBAL, PER_FIT)  # the axes whose x is a step (zoom to exact points works there)
TIME_AXES = (RELATIVE, WALL)


def axis_of(name: str) -> str:
    """The axis a name means (``step``, ``fit-step``, ``relative``, ``wall``, ``epoch``, or
    the axis's own name); a ValueError names the choices."""
    axis = CLI_NAMES.get(str(name).strip().lower())
    if axis is None:
        choices = ", ".join(k for k in CLI_NAMES if k not in ("global", "fit"))
        raise ValueError(f"x axis must be one of {choices}; got {name!r}")
    return axis


class XMap:
    """Where one run's steps land on one axis (and back).

    Args:
        store: the run (a ``RunStore``: its ``clock``, ``epoch_steps`` and ``fits``).
        axis: one of :data:`AXES`; the step axes map a step to itself.
    """

    __slots__ = ("store", "axis", "pauses")

    def __init__(self, store: Any, axis: str) -> None:
        self.store = store
        self.axis = axis
        self.pauses = axis in TIME_AXES  # time without steps (a validation) is a gap there

    def to_x(self, steps: np.ndarray | Sequence[float]) -> np.ndarray:
        """The x of each step (NaN where the run cannot place it on this axis)."""
        s = np.asarray(steps, dtype=np.float64)
        if self.axis in STEP_AXES:
            return s
        if self.axis == EPOCH:
            table = epoch_table(self.store)
            if table is None:
                return np.full(s.shape, np.nan)
            return _extrapolated(s, *table)
        clock = self.store.clock
        secs = clock.seconds(s)
        if self.axis == WALL:
            start = clock.start_wall
            return secs + start if start is not None else np.full(s.shape, np.nan)
        return secs

    def to_step(self, x: float) -> float:
        """The step at ``x`` (NaN where none)."""
        if self.axis in STEP_AXES:
            return float(x)
        if self.axis == EPOCH:
            table = epoch_table(self.store)
            if table is None:
                return math.nan
            steps, epochs, slope = table
            if slope > 0 and len(steps) and x > epochs[-1]:
                return float(steps[-1] + (x - epochs[-1]) / slope)
            if slope > 0 and len(steps) and x < epochs[0]:
                return float(steps[0] + (x - epochs[0]) / slope)
            return float(np.interp(x, epochs, steps))
        clock = self.store.clock
        if self.axis == WALL:
            if clock.start_wall is None:
                return math.nan
            x = x - clock.start_wall
        return float(clock.steps_at(x))

    def describe(self, x: float) -> str:
        """How the readout names a place on this axis."""
        return describe_x(self.axis, x)


def describe_x(axis: str, x: float) -> str:
    """``step 120``, ``12.5 s``, ``14:03:21``, ``epoch 2.50``."""
    if axis == RELATIVE:
        return f"{x:,.1f} s" if abs(x) < 600 else f"{x / 60:,.1f} min"
    if axis == WALL:
        import datetime as _dt

        try:
            return _dt.datetime.fromtimestamp(x).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):
            return f"{x:.0f}"
    if axis == EPOCH:
        return f"epoch {x:,.2f}"
    return f"step {max(x, 0):,.0f}"


def epoch_table(store: Any) -> tuple[np.ndarray, np.ndarray, float] | None:
    """(steps, epochs done at them, epochs per step past the ends) of a run: each segment's
    start at the epochs done before it, each epoch's last step at its number. None when
    the run has no epochs and no known epoch length."""
    ends = [float(e) for e in store.epoch_steps]
    fits = list(store.fits)
    anchors: dict[float, float] = {}
    for fit in fits:
        start = float(fit.global_step)
        anchors.setdefault(start, float(sum(1 for e in ends if e <= start)))
    for i, e in enumerate(ends):
        anchors[e] = float(i + 1)
    spe = 0.0
    if fits and fits[-1].steps_per_epoch:
        spe = float(fits[-1].steps_per_epoch)
    elif len(ends) >= 2:
        spe = ends[-1] - ends[-2]
    elif len(ends) == 1 and fits and ends[0] > fits[-1].global_step:
        spe = ends[0] - float(fits[-1].global_step)
    if not ends and spe <= 0:
        return None
    steps = np.asarray(sorted(anchors), dtype=np.float64)
    epochs = np.maximum.accumulate(np.asarray([anchors[s] for s in steps.tolist()]))
    return steps, epochs, (1.0 / spe if spe > 0 else 0.0)


def _extrapolated(s: np.ndarray, steps: np.ndarray, epochs: np.ndarray, slope: float) -> np.ndarray:
    """Interpolated between the anchors; past them at ``slope`` epochs a step (held when 0)."""
    x = np.interp(s, steps, epochs)
    if slope > 0 and len(steps):
        after = s > steps[-1]
        x[after] = epochs[-1] + (s[after] - steps[-1]) * slope
        before = s < steps[0]
        x[before] = epochs[0] + (s[before] - steps[0]) * slope
    return x


def x_map(store: Any, axis: str) -> XMap | None:
    """The map of ``store``'s steps onto ``axis`` (None on the step axes: x is the step)."""
    return None if axis in STEP_AXES else XMap(store, axis)
