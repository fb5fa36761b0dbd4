"""The worker's pipe to the viewer: every step reaches it in order, a viewer that reads
nothing never makes a write wait, nothing is lost when the viewer goes."""

from __future__ import annotations

import threading
from multiprocessing import Pipe

import numpy as np

from tfstudio import worker
from tfstudio.core.channel import Channel
from tfstudio.core.events import FitEnded, MonitorError, StepColumns


def batch(channel: Channel, first: int, n: int, width: int = 1) -> list[object]:
    """``n`` steps from ``first`` as the pump drains them (``width`` values a step)."""
    for g in range(first, first + n):
        values = {f"m{k}": float(g * 10 + k) for k in range(width)}
        channel.step(0, g, 0, g, 1, values, {}, g * 1e-3)
    return channel.drain()


def steps_of(events: list[object]) -> list[int]:
    return [int(s) for e in events if type(e) is StepColumns for s in e.global_step]


def returns_at_once(call, *args) -> None:
    """``call(*args)`` returns within 10 s (a write that waited on the viewer would not)."""
    t = threading.Thread(target=call, args=args, daemon=True)
    t.start()
    t.join(timeout=10)
    assert not t.is_alive(), "the write waited on the viewer"


def test_a_batch_reaches_the_viewer_as_one_message():
    viewer, conn = Pipe(duplex=True)
    pipe = worker.PipeSink(conn, lambda: None)
    channel = Channel()
    first = batch(channel, 1, 50)
    pipe.write(first)
    kind, payload = viewer.recv()
    assert kind == "events"
    assert steps_of(payload) == list(range(1, 51))
    assert payload[0].values["m0"].tolist() == [g * 10.0 for g in range(1, 51)]
    assert pipe.sync(timeout=5)
    pipe.close()


def test_a_viewer_that_reads_nothing_never_makes_a_write_wait_and_gets_every_step_later():
    viewer, conn = Pipe(duplex=True)
    pipe = worker.PipeSink(conn, lambda: None)
    channel = Channel()
    big = batch(channel, 1, 20_000, width=8)  # a few MB: more than the socket holds
    returns_at_once(pipe.write, big)
    later = [batch(channel, 20_001 + 10 * k, 10) for k in range(5)]
    for b in later:
        returns_at_once(pipe.write, b)  # queued behind the message begun
    got: list[object] = []
    while len(steps_of(got)) < 20_050:
        kind, payload = viewer.recv()
        got.extend(payload)
    assert steps_of(got) == list(range(1, 20_051))  # every step, in order, none twice
    block = next(e for e in got if type(e) is StepColumns)
    assert np.array_equal(block.values["m7"][:3], [17.0, 27.0, 37.0])
    assert pipe.sync(timeout=5)
    pipe.close()


def test_the_viewer_gone_during_a_send_keeps_the_batch_and_says_so():
    viewer, conn = Pipe(duplex=True)
    lost = threading.Event()
    pipe = worker.PipeSink(conn, lost.set)
    channel = Channel()
    viewer.close()
    events = batch(channel, 1, 5)
    pipe.write(events)
    assert lost.wait(timeout=5)
    assert steps_of(pipe.unsent) == [1, 2, 3, 4, 5]
    more = [FitEnded(0, 5, False, 1.0)]
    pipe.write(more)  # after that: kept, not sent
    assert pipe.unsent[-1] == more[0]
    assert pipe.sync(timeout=5)  # nothing to wait for on a dead pipe
    pipe.close()


def test_an_event_that_cannot_be_pickled_is_named_and_the_others_still_arrive():
    viewer, conn = Pipe(duplex=True)
    pipe = worker.PipeSink(conn, lambda: None)
    channel = Channel()
    events = [*batch(channel, 1, 3), threading.Lock(), FitEnded(0, 3, False, 1.0)]
    pipe.write(events)
    got: list[object] = []
    while not any(type(e) is FitEnded for e in got):
        got.extend(viewer.recv()[1])
    assert steps_of(got) == [1, 2, 3]
    notes = [e for e in got if type(e) is MonitorError]
    assert len(notes) == 1 and "lock" in notes[0].message
    assert pipe.sync(timeout=5)
    pipe.close()


def test_over_a_plain_pipe_every_step_arrives():
    viewer, conn = Pipe(duplex=False)  # an os.pipe, not a socket
    pipe = worker.PipeSink(conn, lambda: None)
    channel = Channel()
    for k in range(3):
        pipe.write(batch(channel, 1 + 10 * k, 10))
    got: list[object] = []
    while len(steps_of(got)) < 30:
        got.extend(viewer.recv()[1])
    assert steps_of(got) == list(range(1, 31))
    assert pipe.sync(timeout=5)
    pipe.close()


def test_training_never_waits_on_a_viewer_that_reads_nothing():
    # the worker's pump between a training thread and a viewer that reads nothing until
    # training is done: steps appended, the pump's beats writing them to the full pipe, a
    # fit's end flushing (which waits at most SYNC_TIMEOUT_S for the viewer)
    viewer, conn = Pipe(duplex=True)
    channel = Channel()
    pump = worker.WorkerPump(conn, channel, on_stop=lambda: None)
    pump.start()
    n = 60_000

    def train() -> None:
        for g in range(1, n + 1):
            channel.step(0, g, 0, g, 1, {f"m{k}": float(g + k) for k in range(8)}, {}, g * 1e-6)
            if g % 20_000 == 0:
                threading.Event().wait(0.1)  # a beat of the pump's between
        pump.flush()

    returns_at_once(train)
    got: list[object] = []
    while len(steps_of(got)) < n:
        kind, payload = viewer.recv()
        got.extend(payload)
    assert steps_of(got) == list(range(1, n + 1))  # every step, in order
    pump.close()
