"""Frame-rate bridge between a run's channel and the window's panels.

A QTimer drains the channel ~30 times a second. Events are handled in the
order they were emitted, but steps are handed to the panels as runs (a block of
:class:`StepColumns` as the worker ships them, or consecutive ``StepEnded``
events as one list), and panels redraw at most once per frame. So a run at
100k steps/s costs the UI thread a few list appends per step and one
``setData`` per curve per redraw, never one Qt signal per step.

Training runs in a worker process, so painting here no longer takes time from
it: during a run the bridge redraws at up to ``1 / MIN_REDRAW_S`` a second. Only
paint cost itself is budgeted: after each redraw the bridge waits ``cost /
REDRAW_BUDGET`` (at least ``MIN_REDRAW_S``, at most ``MAX_REDRAW_S``), so a window
with heavy plots still answers the user. Nothing is dropped: events are drained
and ingested every frame; only drawing waits. Between runs every frame redraws.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import Protocol

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
)

DEFAULT_FPS = 30
REDRAW_BUDGET = 0.5  # share of the UI thread's time redraws may take while a run is live
MIN_REDRAW_S = 1 / 30  # at most 30 redraws a second during a run
MAX_REDRAW_S = 0.5  # at least two a second, however slow painting is
FRAME_HISTORY = 100_000  # frame times kept for statistics (~28 min at 60 Hz)


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
        self._routes: dict[type, list[Panel]] = {}  # event kind -> panels that take it
        self._step_panels: list[Panel] = []
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
        self._next_redraw = 0.0
        self._dirty = False
        self._last_redraw: tuple[float, float, float] | None = None  # (python s, paint, start)

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
            if self._dirty and t0 >= self._next_redraw:
                self._redraw(t0)
            return 0
        run: list[StepEnded] = []
        for event in events:
            self._dirty = True
            kind = type(event)
            if kind is StepEnded:
                run.append(event)
                continue
            if run:
                self._hand_steps(run)
                run = []
            if kind is StepColumns:  # a block of steps: handed on as one run
                self._hand_steps(event)
                continue
            for panel in self._routes.get(type(event), ()):
                panel.ingest_event(event)
            if isinstance(event, RunEnded):
                self.live = False
                # Everything before the end must be on screen when listeners hear of it.
                self._redraw(time.perf_counter())
                self.run_ended.emit(event)
            elif isinstance(event, RunStarted):
                self.live = True
                self.run_started.emit(event)
            elif isinstance(event, EngineStatus):
                self.engine_status.emit(event)
            elif isinstance(event, FitStarted):
                self.fit_started.emit(event)
            elif isinstance(event, FitEnded):
                self.fit_ended.emit(event)
            elif isinstance(event, MonitorError):
                self.monitor_error.emit(event)
        if run:
            self._hand_steps(run)
        if self._dirty and (not self.live or t0 >= self._next_redraw):
            self._redraw(t0)
        self.events_consumed += len(events)
        self.frames += 1
        self.frame_times.append(time.perf_counter() - t0)
        self.frame_done.emit(len(events))
        return len(events)

    def flush(self) -> None:
        """Redraw now whatever is pending (tests, screenshots)."""
        self._redraw(time.perf_counter())

    def _redraw(self, started: float) -> None:
        t0 = time.perf_counter()
        for panel in self._panels:
            panel.refresh()
        self._dirty = False
        self.redraws += 1
        # The paint itself happens later in the event loop; it is added to this
        # redraw's cost at the next tick (see _account_last_redraw).
        self._last_redraw = (time.perf_counter() - t0, self._paint_seconds(), started)
        self._next_redraw = started + MIN_REDRAW_S

    def _account_last_redraw(self) -> None:
        if self._last_redraw is None:
            return
        python_s, paint_before, started = self._last_redraw
        self._last_redraw = None
        cost = python_s + (self._paint_seconds() - paint_before)
        self.redraw_times.append(cost)
        if self.live:
            wait = min(MAX_REDRAW_S, max(MIN_REDRAW_S, cost / REDRAW_BUDGET))
            self._next_redraw = started + wait

    def _paint_seconds(self) -> float:
        return sum(getattr(p, "paint_clock", (0.0,))[0] for p in self._panels)

    def _hand_steps(self, run: Sequence[StepEnded]) -> None:
        self.steps_consumed += len(run)
        for panel in self._step_panels:
            panel.ingest_steps(run)
