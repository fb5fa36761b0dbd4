"""The pump: drains a run's channel every ~50 ms, off the training thread, into its sinks.

Whatever consumes a run's event stream on the training side is a *sink* of the
pump (a list of listeners, as Keras's ``CallbackList``), never a wrapper around
the channel: the viewer (the pipe to the window in the worker, the viewer's own
channel in-process), the recorder, the live advisor. The training thread only
appends to the channel; each sink gets the same batches, in order, on the pump's
thread.

A sink has two methods:

- ``write(events)``: one batch (a list, possibly empty: a sink may act on its own
  clock, e.g. a recorder flushing to disk). It may return a list, which the sinks
  after it get instead of the batch (a sink that adds events, e.g. advice, is
  registered first: ``add_sink(sink, first=True)``); ``None`` leaves the batch as is.
- ``close()``: the run is over (called once, by :meth:`Pump.close`).
- optionally ``sync()``: a sink that sends on a thread of its own waits there until
  what it was given is sent (:meth:`Pump.flush` calls it; the periodic beat does not).

A sink that raises is reported on the real stderr and the others still get the batch.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from typing import Protocol

from tfstudio.core.channel import Channel

PUMP_INTERVAL_S = 0.05  # one batch every 50 ms at most: never one message per step


class EventSink(Protocol):
    """Something that gets every batch of a run's events, off the training thread."""

    def write(self, events: list[object]) -> list[object] | None:
        """Take one batch; a returned list replaces the batch for the sinks after this one."""

    def close(self) -> None:
        """The run is over; flush and release."""


class ChannelSink:
    """A sink that puts each batch on another channel (an in-process viewer drains it)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def write(self, events: list[object]) -> None:
        """Queue the batch on the channel, in order."""
        if events:
            self.channel.emit_all(events)

    def close(self) -> None:
        """Nothing to release: the viewer keeps draining its channel."""


class Pump(threading.Thread):
    """Moves a run's events from its channel to its sinks, every ``interval`` seconds.

    Args:
        channel: the channel the training side emits on (only the pump drains it).
        sinks: get every batch, in this order.
        interval: seconds between two batches.
        wait: called with ``interval`` between batches instead of sleeping (the worker
            waits on its connection to the viewer, so commands arrive at once).
    """

    def __init__(
        self,
        channel: Channel,
        sinks: Iterable[EventSink] = (),
        *,
        interval: float = PUMP_INTERVAL_S,
        wait: Callable[[float], object] | None = None,
    ) -> None:
        super().__init__(name="tfstudio-pump", daemon=True)
        self.channel = channel
        self.sinks: list[EventSink] = list(sinks)
        self.interval = interval
        self.batches = 0  # non-empty batches handed on
        self._wait = wait
        self._lock = threading.RLock()  # a sink may call back in (the worker's lost viewer)
        self._closing = threading.Event()
        self._closed = False

    @property
    def closing(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closing.is_set()

    def run(self) -> None:
        """Every ``interval``: hand what was emitted to the sinks."""
        try:
            while not self._closing.is_set():
                if self._wait is not None:
                    self._wait(self.interval)
                else:
                    self._closing.wait(self.interval)
                with self._lock:
                    self._flush_locked()
        except BaseException:  # noqa: BLE001 - say why the pump died, then let the run go on
            traceback.print_exc(file=sys.__stderr__)

    def flush(self) -> None:
        """Hand everything emitted so far to the sinks now, and wait until sinks that send
        on a thread of their own (``sync()``, the worker's pipe) have sent it (any thread)."""
        with self._lock:
            self._flush_locked()
            sinks = list(self.sinks)
        for sink in sinks:
            sync = getattr(sink, "sync", None)
            if sync is not None:
                try:
                    sync()
                except Exception:  # noqa: BLE001 - a flush is best effort
                    traceback.print_exc(file=sys.__stderr__)

    def add_sink(self, sink: EventSink, *, first: bool = False) -> None:
        """Also hand every batch to ``sink`` from now on (what was emitted before goes first).

        Args:
            first: call it before the sinks already there (a sink whose ``write``
                returns a changed batch that the others must see).
        """
        with self._lock:
            self._flush_locked()
            if first:
                self.sinks.insert(0, sink)
            else:
                self.sinks.append(sink)

    def detach_sink(self, sink: EventSink) -> None:
        """Hand on what is pending (``sink`` gets it too), then stop handing batches to ``sink``."""
        with self._lock:
            self._flush_locked()
            if sink in self.sinks:
                self.sinks.remove(sink)

    def close(self) -> None:
        """Stop the thread, hand on the last events and close every sink (once)."""
        self._closing.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=5)
        with self._lock:
            self._flush_locked()
            if self._closed:
                return
            self._closed = True
            for sink in self.sinks:
                try:
                    sink.close()
                except Exception:  # noqa: BLE001
                    traceback.print_exc(file=sys.__stderr__)

    def _flush_locked(self) -> None:
        events = self.channel.drain()
        if events:
            self.batches += 1
        for sink in self.sinks:  # also with nothing new: a recorder flushes on its clock
            try:
                changed = sink.write(events)
            except Exception:  # noqa: BLE001 - one sink must not stop the stream
                traceback.print_exc(file=sys.__stderr__)
                continue
            if changed is not None:
                events = changed
