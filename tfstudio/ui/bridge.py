"""Frame-rate bridge between a run's channel and the window's panels.

A QTimer drains the channel ~30 times a second. Events are handled in the
order they were emitted, but steps are handed to the panels as runs (a block of
:class:`StepColumns` as the worker ships them, or consecutive ``StepEnded``
events as one list), and panels redraw at most once per frame. So a run at
100k steps/s costs the UI thread a few list appends per step and one
``setData`` per curve per redraw, never one Qt signal per step.

Training runs in a worker process, so painting here takes no GIL from it, but
it does take CPU: on a machine with few cores the window's painting competes
with TensorFlow's threads. So during a run the bridge redraws at up to
``redraw_hz`` a second, chosen by :func:`choose_redraw_hz` from the machine's
cores and how busy they are (``note_machine_cpu``, fed once a second by the
system panel's sampler): the full rate while a core is spare for painting, a
lower one when training and everything else leave less. Paint cost is budgeted
too: after each redraw the bridge waits ``cost / REDRAW_BUDGET`` (at least
``1 / redraw_hz``, at most ``MAX_REDRAW_S``), so a window with heavy plots still
answers the user. Nothing is dropped: events are drained and ingested every
frame; only drawing waits. Between runs every frame redraws.

With a :attr:`Bridge.puller` (the process launcher), the window *pulls*: a little
before each tick that will redraw, it asks the worker for what the run emitted
(:meth:`Puller.pull`), so the batch arrives just in time for the redraw. The
worker's pump then beats only when asked, at the window's redraw rate (14 a second
on 2 cores instead of its own 20), and a step waits about half a redraw interval
for the screen instead of a pump beat and then a redraw. How early to ask is
learned from the last round trips (:meth:`Bridge.pull_lead`). A run that sent
nothing for half a second (between fits, evaluating, paused) is not asked (see
``ProcessLauncher.pull``): the worker's own beat, every 0.25 s, brings what comes next,
and the asks start again with it. While the run is quiet the bridge rests too: it
plans no pulls and ticks every :data:`QUIET_TICK_S` (:meth:`Puller.quiet`); a batch
with news, or a command sent to the run (:meth:`Bridge.wake`), brings the pace back.
With no run, once nothing came for :data:`IDLE_REST_S` the bridge rests the same way
until something comes: a window left open between runs wakes 10 times a second, not 30.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections import deque
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from tfstudio.core.channel import Channel
from tfstudio.core.events import (
    EngineStatus,
    FitEnded,
    FitStarted,
    MonitorError,
    RunEnded,
    RunStarted,
    StepColumns,
    StepEnded,
    step_batches,
)

DEFAULT_FPS = 30
REDRAW_BUDGET = 0.5  # share of the UI thread's time redraws may take while a run is live
FULL_REDRAW_HZ = 30.0  # redraws a second during a run while a core is spare for painting
LOW_REDRAW_HZ = 14.0  # ... and when the run and everything else leave less than that
MIN_REDRAW_S = 1 / FULL_REDRAW_HZ  # at most this often, whatever the machine
MAX_REDRAW_S = 0.5  # at least two a second, however slow painting is
FEW_CORES = 2  # until the first measurement: this many cores or fewer count as busy
SPARE_FOR_FULL = 1.5  # cores left idle by everything but the window: enough for full rate
SPARE_HYSTERESIS = 0.5  # more spare needed to climb back to the full rate than to stay
MIN_LOAD_INTERVAL_S = 0.5  # shorter load measurements are too coarse to act on
FRAME_HISTORY = 100_000  # frame times kept for statistics (~28 min at 60 Hz)
# Pulling: ask this long before a redraw's tick (until round trips were measured), ...
PULL_LEAD_S = 0.015
MIN_PULL_LEAD_S = 0.004  # ... never less than this, nor more than half a tick
PULL_MARGIN_S = 0.003  # added to the round trips' 80th percentile
PULL_HISTORY = 16  # round trips the lead is learned from
# While a live run is quiet (Puller.quiet): a tick this often at most. The worker's own
# beat brings what comes next every 0.25 s; ticking at the redraw rate (30 a second on
# an idle machine) would only drain an empty channel.
QUIET_TICK_S = 0.1
# With no run under way, after this long with nothing drained: ticks every QUIET_TICK_S
# (an idle window's 30 ticks a second were two thirds of its CPU; the first events of
# a run, or of anything else, are drained within QUIET_TICK_S and the pace comes back).
IDLE_REST_S = 1.0


def choose_redraw_hz(
    cpu_count: int, busy_cores: float | None, current_hz: float | None = None
) -> float:
    """Redraws a second for a live run, from how much CPU the machine has to spare.

    Args:
        cpu_count: the machine's logical CPUs.
        busy_cores: cores in use by everything except the window (the training
            worker, other programs); None before the first measurement, when the
            core count alone decides (:data:`FEW_CORES` or fewer: the low rate).
        current_hz: the rate in use; going back up from :data:`LOW_REDRAW_HZ` needs
            :data:`SPARE_HYSTERESIS` more spare cores, so a load near the threshold
            does not flip the rate every second.

    Returns:
        :data:`FULL_REDRAW_HZ` while at least :data:`SPARE_FOR_FULL` cores are idle,
        else :data:`LOW_REDRAW_HZ`: painting then takes CPU the training would use.
    """
    if busy_cores is None:
        return LOW_REDRAW_HZ if cpu_count <= FEW_CORES else FULL_REDRAW_HZ
    need = SPARE_FOR_FULL + (SPARE_HYSTERESIS if current_hz == LOW_REDRAW_HZ else 0.0)
    return FULL_REDRAW_HZ if cpu_count - busy_cores >= need else LOW_REDRAW_HZ


class Panel(Protocol):
    """What the bridge needs from a panel: take events, then redraw once per frame.

    ``EVENTS`` names the event kinds the panel takes: the bridge hands it those
    and no others (``StepEnded`` among them: it gets runs of steps).
    """

    EVENTS: tuple[type, ...]

    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Take a run of consecutive step events (oldest first)."""
        ...

    def ingest_event(self, event: object) -> None:
        """Take one event of any other kind."""
        ...

    def refresh(self) -> None:
        """Redraw whatever changed since the last refresh (cheap when nothing did)."""
        ...


@runtime_checkable
class Puller(Protocol):
    """What the bridge asks for a run's next batch (the process launcher)."""

    last_arrival: float  # time.perf_counter() when a batch of events last arrived

    def pull(self) -> bool:
        """Ask the run for what it emitted since its last batch; False when none runs."""
        ...

    # optional ``quiet() -> bool``: a pull would send nothing now (the run is quiet)


class Bridge(QObject):
    """Drains a :class:`Channel` at frame rate and fans the events out to panels.

    Args:
        channel: the consumer side of the run's channel.
        fps: frames per second of the drain timer.
        parent: Qt parent.
    """

    run_started = Signal(object)  # RunStarted
    run_ended = Signal(object)  # RunEnded, emitted after the panels drew the final state
    engine_status = Signal(object)  # EngineStatus
    fit_started = Signal(object)  # FitStarted
    fit_ended = Signal(object)  # FitEnded
    monitor_error = Signal(object)  # MonitorError
    frame_done = Signal(int)  # events handled in the frame (only emitted when > 0)

    def __init__(
        self, channel: Channel, fps: float = DEFAULT_FPS, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.channel = channel
        self._panels: list[Panel] = []
        self.panel_failures: set[tuple[str, str]] = set()  # (panel class, method) reported
        self._routes: dict[type, list[Panel]] = {}  # event kind -> panels that take it
        self._step_panels: list[Panel] = []
        self.fps = fps
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(max(1, round(1000 / fps)))
        self._timer.timeout.connect(self.tick)
        self.frame_times: deque[float] = deque(maxlen=FRAME_HISTORY)
        self.redraw_times: deque[float] = deque(maxlen=FRAME_HISTORY)  # incl. paint
        self.events_consumed = 0
        self.steps_consumed = 0
        self.frames = 0
        self.redraws = 0
        self.live = False  # a run is in progress: redraws are budgeted
        self.redraw_hz = choose_redraw_hz(os.cpu_count() or 1, None)  # see note_machine_cpu
        self._load_mark: tuple[float, float] | None = None  # (monotonic, own CPU s) at last note
        self._next_redraw = 0.0
        self._dirty = False
        self._last_redraw: tuple[float, float, float] | None = None  # (python s, paint, start)
        # Pulling (see the module's docstring): None, the run's events come on their own.
        self.puller: Puller | None = None
        self.pulls = 0
        self._pull_timer = QTimer(self)
        self._pull_timer.setSingleShot(True)
        self._pull_timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._pull_timer.timeout.connect(self._pull)
        self._pulled_at: float | None = None  # the oldest pull not answered yet
        self.round_trips: deque[float] = deque(maxlen=PULL_HISTORY)
        self.resting = False  # the live run is quiet, or no run and nothing comes: slow ticks
        self._drained_at = time.perf_counter()  # when a tick last drained events

    # -- set-up ----------------------------------------------------------
    def add_panel(self, panel: Panel) -> None:
        """Register a panel for the kinds it names in ``EVENTS`` (in registration order)."""
        self._panels.append(panel)
        kinds = panel.EVENTS
        for kind in kinds:
            if kind is StepEnded:
                self._step_panels.append(panel)
            else:
                self._routes.setdefault(kind, []).append(panel)

    def panels_for(self, kind: type) -> list[Panel]:
        """The panels that take events of ``kind``, in registration order."""
        if kind is StepEnded:
            return list(self._step_panels)
        return list(self._routes.get(kind, ()))

    def start(self) -> None:
        """Start draining at frame rate."""
        self._drained_at = time.perf_counter()
        self._timer.start()

    def stop(self) -> None:
        """Stop the drain timer (queued events stay in the channel)."""
        self._timer.stop()

    def is_active(self) -> bool:
        """True while the drain timer runs."""
        return self._timer.isActive()

    def interval_ms(self) -> int:
        """Milliseconds between frames."""
        return self._timer.interval()

    def note_machine_cpu(self, cpu_count: int, machine_cpu_percent: float) -> None:
        """Take a measurement of the machine's CPU (100 % = every core busy) and choose
        the live redraw rate from it (see :func:`choose_redraw_hz`).

        The window's own CPU since the previous note is taken out: the rate is about
        what the rest of the machine leaves for painting. The first note after a run
        starts only sets the mark the next one is measured from.
        """
        now, own = time.monotonic(), time.process_time()
        mark, self._load_mark = self._load_mark, (now, own)
        if mark is None or now - mark[0] < MIN_LOAD_INTERVAL_S:
            return
        own_cores = (own - mark[1]) / (now - mark[0])
        busy = max(0.0, machine_cpu_percent / 100.0 * cpu_count - own_cores)
        self.set_redraw_hz(choose_redraw_hz(cpu_count, busy, self.redraw_hz))

    def set_redraw_hz(self, hz: float) -> None:
        """Redraw a live run at most ``hz`` times a second (the frame timer follows)."""
        self.redraw_hz = float(hz)
        self._retime()

    def _retime(self) -> None:
        """Tick at the frame rate, or while a run is live no faster than it redraws: a
        tick between two redraws would only drain, and its wake-up costs CPU too."""
        seconds = 1.0 / self.fps
        if self.live:
            seconds = max(seconds, self.min_redraw_s())
        if self.resting:
            seconds = max(seconds, QUIET_TICK_S)
        self._timer.setInterval(max(1, round(1000 * seconds)))

    def wake(self) -> None:
        """Back to the live pace now (a command went to the run: its answer is awaited).

        The tick timer restarts at the live interval and the pull for its tick is planned
        at once, so the answer is drawn at that tick, not one later.
        """
        if self.resting:
            self.resting = False
            self._retime()
            self._plan_pull(time.perf_counter())

    def _rest_if_quiet(self) -> bool:
        """Follow the puller's quiet (slow ticks while it lasts); whether it is quiet."""
        quiet = getattr(self.puller, "quiet", None)
        resting = self.live and quiet is not None and bool(quiet())
        if resting != self.resting:
            self.resting = resting
            self._retime()
        return resting

    def reset_stats(self) -> None:
        """Forget frame times and counters (benchmarks call this between phases)."""
        self.frame_times.clear()
        self.redraw_times.clear()
        self.events_consumed = 0
        self.steps_consumed = 0
        self.frames = 0
        self.redraws = 0

    # -- the frame -------------------------------------------------------
    def tick(self) -> int:
        """Run one frame: drain, hand events to panels in order, redraw if due.

        Returns the number of events handled.
        """
        t0 = time.perf_counter()
        self._account_last_redraw()
        events = self.channel.drain()
        if not events:
            if self._dirty and self._due(t0):
                self._redraw(t0)
            self._plan_pull(t0)
            if not self.live and not self.resting and t0 - self._drained_at >= IDLE_REST_S:
                self.resting = True  # no run, nothing coming: tick slowly until something does
                self._retime()
            return 0
        self._drained_at = t0
        if self.resting and not self.live:
            self.resting = False
            self._retime()
        for event in step_batches(events):
            self._dirty = True
            if type(event) is list or type(event) is StepColumns:  # handed on as one run
                self._hand_steps(event)
                continue
            for panel in self._routes.get(type(event), ()):
                try:
                    panel.ingest_event(event)
                except Exception as exc:  # noqa: BLE001 - one panel's bug must not stop the rest
                    self._panel_failed(panel, "ingest_event", exc)
            if isinstance(event, RunEnded):
                self.live = False
                self.resting = False
                self._pull_timer.stop()
                self._pulled_at = None
                self._retime()
                # Everything before the end must be on screen when listeners hear of it.
                self._redraw(time.perf_counter())
                self.run_ended.emit(event)
            elif isinstance(event, RunStarted):
                self.live = True
                self.resting = False
                self._load_mark = None  # the sampler starts afresh with the run
                self._retime()
                self.run_started.emit(event)
            elif isinstance(event, EngineStatus):
                self.engine_status.emit(event)
            elif isinstance(event, FitStarted):
                self.fit_started.emit(event)
            elif isinstance(event, FitEnded):
                self.fit_ended.emit(event)
            elif isinstance(event, MonitorError):
                self.monitor_error.emit(event)
        if self._dirty and (not self.live or self._due(t0)):
            self._redraw(t0)
        self._plan_pull(t0)
        self.events_consumed += len(events)
        self.frames += 1
        self.frame_times.append(time.perf_counter() - t0)
        self.frame_done.emit(len(events))
        return len(events)

    # -- pulling ---------------------------------------------------------
    def pull_lead(self) -> float:
        """How long before a redraw's tick to ask the run for its batch, in seconds.

        The 80th percentile of the last round trips (a pull to its batch's arrival)
        plus :data:`PULL_MARGIN_S`; :data:`PULL_LEAD_S` before any was measured; within
        :data:`MIN_PULL_LEAD_S` and half a tick.
        """
        if self.round_trips:
            trips = sorted(self.round_trips)
            lead = trips[min(len(trips) - 1, int(0.8 * len(trips)))] + PULL_MARGIN_S
        else:
            lead = PULL_LEAD_S
        return min(max(lead, MIN_PULL_LEAD_S), self._timer.interval() / 2000)

    def _plan_pull(self, now: float) -> None:
        """At the end of a tick: ask for the run's batch a lead before the next tick, when
        that tick will redraw (the same test as :meth:`_due`, at its time)."""
        if self.puller is None or not self.live:
            return
        self._note_round_trip(now)
        if self._rest_if_quiet():
            return  # a pull would send nothing: the run's own beat brings what comes
        interval = self._timer.interval() / 1000
        next_tick = now + interval
        next_redraw = self._next_redraw
        if self._last_redraw is not None and self.redraw_times:
            # a redraw whose paint is not counted yet: its wait as the last one's was
            cost = self.redraw_times[-1]
            next_redraw = max(next_redraw, self._last_redraw[2] + cost / REDRAW_BUDGET)
        if next_tick < next_redraw - interval / 2:
            return  # the next tick only drains: the batch can wait for a later one
        wait = next_tick - self.pull_lead() - time.perf_counter()
        self._pull_timer.start(max(0, round(wait * 1000)))

    def _note_round_trip(self, now: float) -> None:
        """The oldest pull's round trip, once a batch arrived after it."""
        asked = self._pulled_at
        if asked is None or self.puller is None:
            return
        arrived = self.puller.last_arrival
        window = max(self.min_redraw_s(), self._timer.interval() / 1000)
        if arrived >= asked:
            if arrived - asked < window:  # else a later batch, not this pull's answer
                self.round_trips.append(arrived - asked)
            self._pulled_at = None
        elif now - asked > window:
            self._pulled_at = None  # nothing to send then (a pause): no round trip

    def _pull(self) -> None:
        if self.puller is None or not self.live:
            return
        now = time.perf_counter()
        self._note_round_trip(now)
        if self.puller.pull():
            self.pulls += 1
            if self._pulled_at is None:
                self._pulled_at = now

    def flush(self) -> None:
        """Redraw now whatever is pending (tests, screenshots)."""
        self._redraw(time.perf_counter())

    def _redraw(self, started: float) -> None:
        t0 = time.perf_counter()
        for panel in self._panels:
            try:
                panel.refresh()
            except Exception as exc:  # noqa: BLE001 - one panel's bug must not stop the rest
                self._panel_failed(panel, "refresh", exc)
        self._dirty = False
        self.redraws += 1
        # The paint itself happens later in the event loop; it is added to this
        # redraw's cost at the next tick (see _account_last_redraw).
        self._last_redraw = (time.perf_counter() - t0, self._paint_seconds(), started)
        self._next_redraw = started + self.min_redraw_s()

    def _account_last_redraw(self) -> None:
        if self._last_redraw is None:
            return
        python_s, paint_before, started = self._last_redraw
        self._last_redraw = None
        cost = python_s + (self._paint_seconds() - paint_before)
        self.redraw_times.append(cost)
        if self.live:
            wait = min(MAX_REDRAW_S, max(self.min_redraw_s(), cost / REDRAW_BUDGET))
            self._next_redraw = started + wait

    def _due(self, now: float) -> bool:
        """A redraw is due: within half a tick of its time (the next tick would be late)."""
        return now >= self._next_redraw - self._timer.interval() / 2000

    def min_redraw_s(self) -> float:
        """The shortest wait between two redraws of a live run (``1 / redraw_hz``)."""
        return max(MIN_REDRAW_S, 1.0 / self.redraw_hz)

    def _paint_seconds(self) -> float:
        return sum(getattr(p, "paint_clock", (0.0,))[0] for p in self._panels)

    def _hand_steps(self, run: Sequence[StepEnded]) -> None:
        self.steps_consumed += len(run)
        for panel in self._step_panels:
            try:
                panel.ingest_steps(run)
            except Exception as exc:  # noqa: BLE001 - one panel's bug must not stop the rest
                self._panel_failed(panel, "ingest_steps", exc)

    def _panel_failed(self, panel: Panel, method: str, exc: BaseException) -> None:
        """A panel raised: say so once per panel and method (on stderr, and as a window error
        in the console and the status bar); the other panels and the run go on."""
        key = (type(panel).__name__, method)
        if key in self.panel_failures:
            return
        self.panel_failures.add(key)
        text = "".join(traceback.format_exception(exc))
        print(f"tfstudio: the window's {key[0]}.{method} failed:\n{text}", file=sys.__stderr__)
        error = MonitorError(
            f"{key[0]}.{method}", f"{type(exc).__name__}: {exc}", text, window=True
        )
        for other in self._routes.get(MonitorError, ()):
            try:
                other.ingest_event(error)
            except Exception as again:  # noqa: BLE001 - reported once too
                self._panel_failed(other, "ingest_event", again)
        self.monitor_error.emit(error)
