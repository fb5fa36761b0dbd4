"""Everything one run shows, live or recorded, in one Qt-free model.

A :class:`RunStore` is filled through one entry point, :meth:`RunStore.add`, by a
live run's events (the window's bridge) or by a recorded folder's contents
(:mod:`tfstudio.core.run_loading` turns tags and ``run.json`` into the same
events). Views draw from stores and keep no copy of the data: each line of a
view points at a :class:`Track` here and redraws when the track's ``revision``
moves. A view can show several stores at once (the live run beside earlier runs).

What a store holds: the run's segments (``fit`` calls and custom loops), one
decimated :class:`~tfstudio.core.series.Series` per per-step metric with the
places its line is cut (segment boundaries, hooks where the value was absent),
the smoothed twin of each (a derived series, see
:class:`~tfstudio.core.smoothing.SmoothedSeries`), running means where Keras
gave no per-step value, epoch means and ``val_`` points, the learning rate,
NaN/restore/checkpoint marks, and the inspector's samples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tfstudio.core.channel import StepRows
from tfstudio.core.events import (
    CheckpointRestored,
    CheckpointSaved,
    EpochEnded,
    FitEnded,
    FitStarted,
    LearningRate,
    NonFinite,
    RunEnded,
    RunStarted,
    StepColumns,
    StepEnded,
    step_batches,
)
from tfstudio.core.inspector_store import InspectorStore
from tfstudio.core.run_clock import RunClock
from tfstudio.core.series import Series
from tfstudio.core.smoothing import SmoothedSeries

SERIES_CAPACITY = 10_000  # buckets per per-step series: 320 KB; at most 20k points to draw
LR_KEY = "learning_rate"

# Kinds of track
STEP = "per step"
RUNNING = "running mean"
EPOCH = "epoch"
SAMPLED = "optimizer"  # a value sampled every few steps (the learning rate)

# Kinds of mark
NAN_MARK = "nan"
RESTORE_MARK = "restore"


def family_of(key: str) -> str:
    """Plot family of a metric key: the key without a leading ``val_``."""
    return key[4:] if key.startswith("val_") and len(key) > 4 else key


@dataclass(frozen=True, slots=True)
class Mark:
    """A labelled step of the run: a NaN/Inf loss, a checkpoint restored."""

    step: float
    text: str
    kind: str


class Track:
    """One line of a run: its points over steps, where it is cut, and its smoothed twin.

    Per-step lines keep a decimated :class:`Series` (bounded memory whatever the
    run's length); epoch and learning-rate lines keep every point (few).

    Args:
        key: the metric key (``loss``, ``val_accuracy``, ``learning_rate``).
        kind: :data:`STEP`, :data:`RUNNING`, :data:`EPOCH` or :data:`SAMPLED`.
        capacity: buckets of the series; None keeps every point in ``xs``/``ys``.
        smoothing: EMA weight of the smoothed twin; None: the line is never smoothed.
    """

    __slots__ = (
        "key",
        "kind",
        "series",
        "xs",
        "ys",
        "breaks",
        "smooth",
        "revision",
        "last_x",
        "segment_breaks",
        "sampled",
        "held_to",
    )

    def __init__(
        self, key: str, kind: str, capacity: int | None = None, smoothing: float | None = None
    ) -> None:
        self.key = key
        self.kind = kind
        self.series = Series(capacity) if capacity else None
        self.xs: list[float] = []  # points when series is None
        self.ys: list[float] = []
        self.breaks: list[float] = []  # the line is cut at each of these x (ascending)
        self.smooth: SmoothedSeries | None = None
        if smoothing is not None and capacity:
            self.smooth = SmoothedSeries(capacity, smoothing, self.breaks)
        self.revision = 0  # moves with every change a view must redraw
        self.last_x: float | None = None
        self.segment_breaks: list[float] = []  # the store's: a restore never removes them
        # its first two points were further apart than a batch hook: a sampled key (a graph
        # loop's gradient norm) whose points are joined, not cut (None: not known yet)
        self.sampled: bool | None = None
        # a SAMPLED line: each value holds until the next point, the last one until this
        # step (the run's newest; None for other kinds)
        self.held_to: float | None = 0.0 if kind == SAMPLED else None

    def count(self) -> int:
        """Points received so far."""
        return self.series.count if self.series is not None else len(self.xs)

    def append(self, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray) -> None:
        """Add points (ascending x)."""
        if not len(xs):
            return
        if self.last_x is not None and xs[0] <= self.last_x:
            # the run went back (a restore): it goes on from there (segment breaks stay)
            self.truncate(float(xs[0]), self.segment_breaks)
        if self.series is not None:
            x = np.asarray(xs, dtype=np.float64)
            y = np.asarray(ys, dtype=np.float64)
            self.series.extend(x, y)
            if self.smooth is not None:
                self.smooth.extend(x, y)
        else:
            self.xs.extend(float(v) for v in xs)
            self.ys.extend(float(v) for v in ys)
        self.last_x = float(xs[-1])
        self.revision += 1

    def add_break(self, x: float) -> None:
        """Cut the line at ``x``: points left and right of it are not joined."""
        if not self.breaks or x > self.breaks[-1]:
            self.breaks.append(float(x))
            self.revision += 1

    def hold_to(self, x: float) -> None:
        """A SAMPLED line: its last value holds until step ``x`` (the run's newest)."""
        if self.held_to is not None and self.held_to != x:
            self.held_to = float(x)
            self.revision += 1

    def truncate(self, x: float, keep: Sequence[float] = ()) -> None:
        """Forget the points at or after ``x`` (and the gap breaks after them, but not the
        breaks in ``keep``: segment boundaries): a run restored to an earlier step goes on
        from there."""
        if self.last_x is None or self.last_x < x:
            return
        if self.series is not None:
            self.series.truncate(x)
            xs, _ = self.series.view()
            self.last_x = float(xs[-1]) if len(xs) else None
        else:
            kept = sum(1 for v in self.xs if v < x)
            del self.xs[kept:], self.ys[kept:]
            self.last_x = self.xs[-1] if self.xs else None
        self.breaks[:] = [b for b in self.breaks if b < x or b in keep]  # in place: shared
        if self.smooth is not None and not self.smooth.suspended and self.series is not None:
            mx, my, width = self.series.means()
            self.smooth.rebuild(self.smooth.weight, mx, my, width)
        self.revision += 1

    def set_smoothing(self, weight: float) -> None:
        """Re-smooth the stored curve with ``weight`` (exact while undecimated).

        A suspended twin only takes the weight: it is smoothed when resumed.
        """
        if self.smooth is None or self.series is None:
            return
        if self.smooth.suspended:
            self.smooth.suspend(weight)
            return
        x, y, width = self.series.means()
        self.smooth.rebuild(weight, x, y, width)
        self.revision += 1

    def suspend_smoothing(self) -> None:
        """No view shows the smoothed twin: stop smoothing new points until resumed."""
        if self.smooth is not None and not self.smooth.suspended:
            self.smooth.suspend()

    def resume_smoothing(self) -> None:
        """A view shows the smoothed twin again: catch it up from the stored curve."""
        if self.smooth is not None and self.smooth.suspended and self.series is not None:
            x, y, width = self.series.means()
            self.smooth.rebuild(self.smooth.weight, x, y, width)
            self.revision += 1

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """Every stored point (a decimated series: each bucket's min then max)."""
        if self.series is not None:
            return self.series.view()
        return np.asarray(self.xs, dtype=np.float64), np.asarray(self.ys, dtype=np.float64)

    def nbytes(self) -> int:
        """Bytes held by the track's stores."""
        total = self.series.nbytes() if self.series is not None else 16 * len(self.xs)
        if self.smooth is not None:
            total += self.smooth.series.nbytes()
        return total


class RunStore:
    """Everything one run shows; fed by live events or a recorded folder, read by views.

    Args:
        name: how views name the run (the run folder's name, or the script's).
        capacity: buckets per per-step series (memory bound per line).
        smoothing: EMA weight of the smoothed twins (0: off).
        path: the run's folder when it is recorded ("" for a live run not recorded).
    """

    def __init__(
        self,
        name: str = "",
        capacity: int = SERIES_CAPACITY,
        smoothing: float = 0.0,
        path: str = "",
    ) -> None:
        self.name = name
        self.path = path
        self.capacity = capacity
        self.smoothing = smoothing
        self.script = ""
        self.started: RunStarted | None = None
        self.ended: RunEnded | None = None
        self.fits: list[FitStarted] = []
        self.fit_steps: dict[int, int] = {}  # fit index -> last global step seen
        self.fit_loss: dict[int, float] = {}  # fit index -> last loss seen
        self.spe: dict[int, int] = {}  # fit index -> steps per batch hook
        self.fit_keys: dict[int, dict[str, None]] = {}  # fit index -> its per-step keys, in order
        # fit index -> steps its restores went back: the run's step goes back, Keras's epoch
        # loop does not, so the running fit ends this many steps earlier (core/progress.py)
        self.rewound: dict[int, int] = {}
        self.steps: dict[str, Track] = {}  # per-step values (and the sampled learning rate)
        self.running: dict[str, Track] = {}  # running means of keys with no per-step value
        self.epochs: dict[str, Track] = {}  # epoch means and val_ metrics
        self.epoch_steps: list[float] = []
        self.marks: list[Mark] = []
        self.checkpoints: list[CheckpointSaved] = []
        self.breaks: list[float] = []  # segment boundaries: no line crosses them
        self.inspector = InspectorStore()
        self.clock = RunClock()  # step -> seconds since the start (the time x axes)
        self.global_step = 0
        self._sampled: list[Track] = []  # the SAMPLED lines (held to the newest step)
        self.revision = 0  # moves with every change
        self.notes: list[str] = []  # what could not be read (a damaged file...)

    # -- the one entry point ---------------------------------------------------
    def add(self, events: Iterable[object]) -> None:
        """Take events in order (consecutive steps are taken as one batch)."""
        for event in step_batches(events):
            if type(event) is list or type(event) is StepColumns:
                self.add_steps(event)
            else:
                self.add_event(event)

    def add_steps(self, steps: Sequence[StepEnded] | StepColumns) -> None:
        """Take a run of consecutive step events (oldest first), or a block of columns."""
        if type(steps) is StepColumns:
            self.add_step_columns(steps)
            return
        for block in StepRows.of(steps).columns() if steps else ():
            self.add_step_columns(block)

    def add_step_columns(self, block: StepColumns) -> None:
        """Take a block of steps as the training side ships them (columns, no rows)."""
        n = len(block)
        if not n:
            return
        spe = max(self.steps_per_hook(), int(block.steps[-1]))
        for key in block.values:
            xs, ys = block.column(key)
            if len(xs):
                track = self._step_track(key)
                x = xs.astype(np.float64)
                self._cut_gaps(track, x, spe)
                track.append(x, ys)
        for key, col in block.running.items():
            missing = block.running_absent.get(key)
            keep = np.ones(n, dtype=bool) if missing is None else ~missing
            if key in block.values:  # a running mean is drawn only where no own value is
                own_missing = block.absent.get(key)
                if own_missing is None:
                    continue
                keep &= own_missing
            if not keep.any():
                continue
            track = self._running_track(key)
            if track is not None:
                x = block.global_step[keep].astype(np.float64)
                self._cut_gaps(track, x, spe)
                track.append(x, col[keep])
        fit = block.fit_index
        keys = self.fit_keys.setdefault(fit, {})
        if len(keys) < len(block.values) or any(k not in keys for k in block.values):
            keys.update(dict.fromkeys(block.values))
        for s in (int(block.steps[0]), int(block.steps[-1])):
            if self.spe.get(fit, 1) != s:
                self.spe[fit] = s
        last = int(block.global_step[-1])
        self.fit_steps[fit] = last
        self.clock.add(block.global_step, block.time)
        for columns, absent in (
            (block.values, block.absent),
            (block.running, block.running_absent),
        ):
            if "loss" in columns:
                mask = absent.get("loss")
                have = np.nonzero(~mask)[0] if mask is not None else [n - 1]
                if len(have):
                    self.fit_loss[fit] = float(columns["loss"][have[-1]])
                    break
        self.global_step = max(self.global_step, last)
        self._hold_sampled()
        self.revision += 1

    def add_event(self, event: object) -> None:
        """Take one event of any kind but ``StepEnded`` (unknown kinds are ignored)."""
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)
            self.revision += 1
        elif self.inspector.ingest(event):
            self.revision += 1

    def add_columns(self, key: str, xs: np.ndarray, ys: np.ndarray, kind: str = STEP) -> None:
        """Take one metric's points as columns (a recorded folder's reader).

        ``kind``: :data:`STEP` (per-step values), :data:`RUNNING` (Keras's running
        means of a metric with no per-step value), :data:`EPOCH` (epoch means and
        ``val_`` metrics; their steps become epoch boundaries) or :data:`SAMPLED`.
        """
        if not len(xs):
            return
        x = np.asarray(xs, dtype=np.float64)
        y = np.asarray(ys, dtype=np.float64)
        back = np.nonzero(np.diff(x) <= 0)[0]
        if len(back):  # the steps went back (a restore): each stretch goes on from its start
            for a, b in zip([0, *(back + 1)], [*(back + 1), len(x)], strict=True):
                self.add_columns(key, x[a:b], y[a:b], kind)
            return
        if kind == EPOCH:
            track = self._epoch_track(key)
            track.append(x, y)
            known = set(self.epoch_steps)
            new = [float(s) for s in x if float(s) not in known]
            if new:
                self.epoch_steps = sorted(known.union(new))
        elif kind == SAMPLED:
            self._sampled_track(key).append(x, y)
        elif kind == RUNNING:
            track = self._running_track(key)
            if track is not None:
                self._cut_gaps(track, x, max(self.spe.values(), default=1))
                track.append(x, y)
        else:
            track = self._step_track(key)
            self._cut_gaps(track, x, max(self.spe.values(), default=1))
            track.append(x, y)
            self._fit_progress(key, x, y)
        self.global_step = max(self.global_step, int(x[-1]))
        self._hold_sampled()
        self.revision += 1

    # -- reading ---------------------------------------------------------------
    def families(self) -> list[str]:
        """Plot families present, in the order they came (``loss`` first)."""
        out: list[str] = []
        for tracks in (self.steps, self.running, self.epochs):
            for key in tracks:
                f = family_of(key)
                if f not in out:
                    out.append(f)
        if "loss" in out:
            out.remove("loss")
            out.insert(0, "loss")
        return out

    def tracks(self, family: str) -> list[Track]:
        """Every track of one family: per-step, running, epoch means and val."""
        return [
            t
            for tracks in (self.steps, self.running, self.epochs)
            for key, t in tracks.items()
            if family_of(key) == family
        ]

    def spans(self) -> list[tuple[FitStarted, float, float]]:
        """Each segment with its steps ``(start, end]`` (``end`` inf for the last one)."""
        out = []
        for i, fit in enumerate(self.fits):
            end = self.fits[i + 1].global_step if i + 1 < len(self.fits) else math.inf
            out.append((fit, float(fit.global_step), end))
        return out

    def running_families(self, most: int = 2) -> list[str]:
        """The primary families of the segment training now: its losses first, then its
        first metrics, ``most`` in all (none once the run ended)."""
        if self.ended is not None or not self.fits:
            return []
        families: list[str] = []
        for key in self.fit_keys.get(self.fits[-1].fit_index, ()):
            family = family_of(key)
            if family not in families:
                families.append(family)
        families.sort(key=lambda f: "loss" not in f)  # stable: order of appearance otherwise
        return families[:most]

    def steps_per_hook(self) -> int:
        """The largest ``steps_per_execution`` of the run's fits (1 when every step is seen)."""
        return max(self.spe.values(), default=1)

    def set_smoothing(self, weight: float) -> None:
        """EMA weight of every smoothed twin; re-smooths the stored curves."""
        weight = max(0.0, float(weight))
        if weight == self.smoothing:
            return
        self.smoothing = weight
        for track in self.steps.values():
            track.set_smoothing(weight)
        self.revision += 1

    def truncate(self, x: float) -> None:
        """The run went back to before ``x`` (a checkpoint restored): every view forgets what
        came after, the lines, epochs, fits' progress and inspector samples alike."""
        for tracks in (self.steps, self.running, self.epochs):
            for track in tracks.values():
                track.truncate(x, self.breaks)
        self.epoch_steps = [s for s in self.epoch_steps if s < x]
        self.global_step = min(self.global_step, int(math.floor(x)))
        self._hold_sampled()
        for fit, step in self.fit_steps.items():
            self.fit_steps[fit] = min(step, int(math.floor(x)))
        self.inspector.truncate(x)
        self.clock.truncate(x)
        self.revision += 1

    def nbytes(self) -> int:
        """Bytes held by the store's series (bounded by the capacity per line)."""
        return sum(t.nbytes() for d in (self.steps, self.running, self.epochs) for t in d.values())

    # -- building blocks ---------------------------------------------------------
    def _step_track(self, key: str) -> Track:
        track = self.steps.get(key)
        if track is None:
            track = self.steps[key] = Track(key, STEP, self.capacity, self.smoothing)
            track.breaks.extend(self.breaks)
            track.segment_breaks = self.breaks
            self.running.pop(key, None)  # per-step values beat the running mean
        return track

    def _running_track(self, key: str) -> Track | None:
        if key in self.steps:
            return None
        track = self.running.get(key)
        if track is None:
            track = self.running[key] = Track(key, RUNNING, self.capacity)
            track.breaks.extend(self.breaks)
            track.segment_breaks = self.breaks
        return track

    def _epoch_track(self, key: str) -> Track:
        track = self.epochs.get(key)
        if track is None:
            track = self.epochs[key] = Track(key, EPOCH)
            track.breaks.extend(self.breaks)
            track.segment_breaks = self.breaks
        return track

    def _sampled_track(self, key: str) -> Track:
        track = self.steps.get(key)
        if track is None:
            track = self.steps[key] = Track(key, SAMPLED, self.capacity)
            track.breaks.extend(self.breaks)
            track.segment_breaks = self.breaks
            track.hold_to(self.global_step)
            self._sampled.append(track)
        return track

    def _hold_sampled(self) -> None:
        """The sampled lines (a learning rate sent when it changes) hold to the newest step."""
        for track in self._sampled:
            track.hold_to(self.global_step)

    def _fit_progress(self, key: str, x: np.ndarray, y: np.ndarray) -> None:
        """Each segment's last step (and last loss) among columns read from a folder."""
        if not self.fits:
            return
        last = self.fits[-1]
        if x[0] > last.global_step:  # all in the segment training now (a followed run's tail)
            fit = last.fit_index
            self.fit_steps[fit] = max(self.fit_steps.get(fit, 0), int(x[-1]))
            if key == "loss":
                self.fit_loss[fit] = float(y[-1])
            return
        starts = np.asarray([f.global_step for f in self.fits], dtype=np.float64)
        # the segment of each point: steps (start, next start]
        seg = np.clip(np.searchsorted(starts, x, side="left") - 1, 0, len(starts) - 1)
        last = np.nonzero(np.diff(np.append(seg, -1)))[0]  # each segment's last point
        for i in last.tolist():
            fit = self.fits[int(seg[i])].fit_index
            self.fit_steps[fit] = max(self.fit_steps.get(fit, 0), int(x[i]))
            if key == "loss":
                self.fit_loss[fit] = float(y[i])

    @staticmethod
    def _cut_gaps(track: Track, xs: np.ndarray, spe: int) -> None:
        """Cut ``track`` wherever its key skipped a batch hook (the value was absent).

        A key sampled from its start (its first two points more than a hook apart) is
        never cut: each of its points would stand alone, and a lone point draws nothing.
        """
        last = track.last_x
        if track.sampled is None:
            if last is None and len(xs) < 2:
                return  # one point: nothing to cut, nothing known yet
            pair = (xs[0], xs[1]) if last is None else (last, xs[0])
            track.sampled = bool(pair[1] - pair[0] > spe + 0.5)
        if track.sampled:
            return
        first = xs[0] if last is None else last
        points = len(xs) if last is None else len(xs) + 1
        if xs[-1] - first <= (points - 1) + 0.5:
            return  # one step apart throughout (steps only grow): no gap (the usual case)
        a = np.asarray(xs, dtype=np.float64)
        if last is not None:
            a = np.concatenate(([last], a))
        for i in np.nonzero(np.diff(a) > spe + 0.5)[0].tolist():
            track.add_break((a[i] + a[i + 1]) / 2)

    def _add_break(self, x: float) -> None:
        """A segment boundary at ``x``: every line, present and future, is cut there."""
        if self.breaks and x <= self.breaks[-1]:
            return
        self.breaks.append(x)
        for tracks in (self.steps, self.running, self.epochs):
            for track in tracks.values():
                track.add_break(x)


# -- one handler per kind of event ---------------------------------------------------
def _run_started(store: RunStore, e: RunStarted) -> None:
    store.started = e
    store.script = e.script
    store.clock.set_start(e.wall_time)


def _run_ended(store: RunStore, e: RunEnded) -> None:
    store.ended = e


def _fit_started(store: RunStore, e: FitStarted) -> None:
    store.spe[e.fit_index] = e.steps_per_execution
    if store.fits:
        # Breaks are positions: values still to come for earlier fits land left of it.
        store._add_break(e.global_step + 0.5)
    store.fits.append(e)
    store.fit_steps[e.fit_index] = e.global_step
    store.clock.anchor(e.global_step, e.time)


def _fit_ended(store: RunStore, e: FitEnded) -> None:
    store.fit_steps[e.fit_index] = max(store.fit_steps.get(e.fit_index, 0), e.global_step)


def _epoch_ended(store: RunStore, e: EpochEnded) -> None:
    for key, value in e.metrics.items():
        store._epoch_track(key).append((float(e.global_step),), (value,))
    if not store.epoch_steps or store.epoch_steps[-1] != e.global_step:
        store.epoch_steps.append(float(e.global_step))


def _learning_rate(store: RunStore, e: LearningRate) -> None:
    store._sampled_track(LR_KEY).append((float(e.global_step),), (e.value,))


def _non_finite(store: RunStore, e: NonFinite) -> None:
    store.marks.append(Mark(e.global_step, f"NaN/Inf loss at step {e.global_step}", NAN_MARK))


def _restored(store: RunStore, e: CheckpointRestored) -> None:
    if store.fits:
        fit = store.fits[-1].fit_index
        store.rewound[fit] = store.rewound.get(fit, 0) + max(0, store.global_step - e.step)
    store.truncate(e.step + 0.5)
    store.marks.append(Mark(e.step, f"restored step {e.step}", RESTORE_MARK))


def _saved(store: RunStore, e: CheckpointSaved) -> None:
    store.checkpoints.append(e)


_HANDLERS = {
    RunStarted: _run_started,
    RunEnded: _run_ended,
    FitStarted: _fit_started,
    FitEnded: _fit_ended,
    EpochEnded: _epoch_ended,
    LearningRate: _learning_rate,
    NonFinite: _non_finite,
    CheckpointRestored: _restored,
    CheckpointSaved: _saved,
}
"""Event type -> how the store takes it (the recorder's ``WRITERS``, read side)."""
