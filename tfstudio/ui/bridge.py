"""Frame-rate bridge between a run's channel and the window's panels.

A QTimer drains the channel ~60 times a second. Events are handled in the
order they were emitted, but consecutive ``StepEnded`` events are handed to
the panels as one list, and every panel redraws at most once per frame. So a
run at 100k steps/s costs the UI thread a few list appends per step and one
``setData`` per curve per frame, never one Qt signal per step.
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
    StepEnded,
)

DEFAULT_FPS = 60
FRAME_HISTORY = 100_000  # frame times kept for statistics (~28 min at 60 Hz)


class Panel(Protocol):
    """What the bridge needs from a panel: take events, then redraw once per frame."""

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
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(max(1, round(1000 / fps)))
        self._timer.timeout.connect(self.tick)
        self.frame_times: deque[float] = deque(maxlen=FRAME_HISTORY)
        self.events_consumed = 0
        self.steps_consumed = 0
        self.frames = 0

    # -- set-up ----------------------------------------------------------
    def add_panel(self, panel: Panel) -> None:
        """Register a panel; panels get events in registration order."""
        self._panels.append(panel)

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
        self.events_consumed = 0
        self.steps_consumed = 0
        self.frames = 0

    # -- the frame -------------------------------------------------------
    def tick(self) -> int:
        """Run one frame: drain, hand events to panels in order, redraw; returns events handled."""
        t0 = time.perf_counter()
        events = self.channel.drain()
        if not events:
            return 0
        run: list[StepEnded] = []
        for event in events:
            if type(event) is StepEnded:
                run.append(event)
                continue
            if run:
                self._hand_steps(run)
                run = []
            for panel in self._panels:
                panel.ingest_event(event)
            if isinstance(event, RunEnded):
                # Everything before the end must be on screen when listeners hear of it.
                self._refresh()
                self.run_ended.emit(event)
            elif isinstance(event, RunStarted):
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
        self._refresh()
        self.events_consumed += len(events)
        self.frames += 1
        self.frame_times.append(time.perf_counter() - t0)
        self.frame_done.emit(len(events))
        return len(events)

    def _hand_steps(self, run: list[StepEnded]) -> None:
        self.steps_consumed += len(run)
        for panel in self._panels:
            panel.ingest_steps(run)

    def _refresh(self) -> None:
        for panel in self._panels:
            panel.refresh()
