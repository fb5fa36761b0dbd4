"""The pump hands every batch of a run's channel to its sinks, in order, off the emitting thread."""

from __future__ import annotations

import threading

from tfstudio.core.channel import Channel
from tfstudio.core.commands import Pause
from tfstudio.core.pump import ChannelSink, Pump


class ListSink:
    """Keeps every event it is handed, notes close and the thread that wrote."""

    def __init__(self) -> None:
        self.events: list[object] = []
        self.closed = 0
        self.threads: set[str] = set()

    def write(self, events: list[object]) -> None:
        self.events.extend(events)
        self.threads.add(threading.current_thread().name)

    def close(self) -> None:
        self.closed += 1


def test_every_sink_gets_every_event_in_order_and_is_closed_once() -> None:
    channel = Channel()
    first, second = ListSink(), ListSink()
    pump = Pump(channel, [first, second], interval=0.001)
    pump.start()
    for i in range(5000):
        channel.emit(i)
    pump.close()
    pump.close()
    assert first.events == second.events == list(range(5000))
    assert first.closed == second.closed == 1
    assert first.threads <= {"tfstudio-pump", threading.current_thread().name}
    assert not pump.is_alive()


def test_a_sink_added_later_gets_what_follows_and_a_detached_one_what_was_pending() -> None:
    channel = Channel()
    viewer, late = ListSink(), ListSink()
    pump = Pump(channel, [viewer])  # not started: flushes happen on add, detach and close
    channel.emit("before")
    pump.add_sink(late)
    channel.emit("while")
    pump.detach_sink(late)
    channel.emit("after")
    pump.close()
    assert viewer.events == ["before", "while", "after"]
    assert late.events == ["while"] and late.closed == 0


def test_a_first_sink_may_change_the_batch_the_others_see() -> None:
    class Adds:
        def write(self, events: list[object]) -> list[object]:
            return [*events, *(f"advice on {e}" for e in events)]

        def close(self) -> None:
            pass

    channel = Channel()
    viewer = ListSink()
    pump = Pump(channel, [viewer])
    pump.add_sink(Adds(), first=True)
    channel.emit("step")
    pump.close()
    assert viewer.events == ["step", "advice on step"]


def test_a_failing_sink_is_reported_and_the_others_still_get_the_batch(capfd) -> None:
    class Broken:
        def write(self, events: list[object]) -> None:
            raise RuntimeError("disk full")

        def close(self) -> None:
            raise RuntimeError("still full")

    channel = Channel()
    viewer = ListSink()
    pump = Pump(channel, [Broken(), viewer])
    channel.emit(1)
    pump.close()
    assert viewer.events == [1] and viewer.closed == 1
    err = capfd.readouterr().err
    assert "disk full" in err and "still full" in err


def test_an_in_process_viewer_drains_its_own_channel_and_sends_commands_through_it() -> None:
    viewer = Channel()
    engine = Channel(commands_of=viewer)
    pump = Pump(engine, [ChannelSink(viewer)])
    engine.emit("step 1")
    viewer.send(Pause())
    assert engine.has_commands() and engine.take_commands() == [Pause()]
    assert viewer.drain() == []  # nothing reaches the viewer but through the pump
    pump.flush()
    assert viewer.drain() == ["step 1"]
    pump.close()
