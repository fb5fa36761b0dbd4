"""The one background reader behind the Runs list's loader and a reopened run's parts."""

from __future__ import annotations

import threading
import time

from tfstudio.core.feed_reader import FeedReader
from tfstudio.core.run_loading import FolderLoader
from tfstudio.core.run_parts import PartsReader


class Chunks:
    """A feed handing out ``n`` chunks, one a read; ``gate`` holds a read until set."""

    def __init__(self, n: int = 1, fail: bool = False, gate: threading.Event | None = None):
        self.left = n
        self.fail = fail
        self.gate = gate
        self.cancelled = threading.Event()
        self.reads = 0

    def cancel(self) -> None:
        self.cancelled.set()

    def read(self) -> int:
        if self.gate is not None:
            while not self.gate.is_set() and not self.cancelled.is_set():
                time.sleep(0.005)
        self.reads += 1
        if self.fail:
            raise OSError("disk gone")
        self.left -= 1
        return self.left


class ReadOn(FeedReader[Chunks, int]):
    thread_name = "test-feed-reader"

    def read_on(self, result: int) -> bool:
        return result > 0


def take_all(reader: FeedReader, want: int) -> list:
    got: list = []
    deadline = time.monotonic() + 10
    while len(got) < want and time.monotonic() < deadline:
        got += reader.take()
        time.sleep(0.005)
    return got


def test_every_chunk_is_read_in_turn_and_a_failure_is_handed_over():
    reader = ReadOn()
    many, bad = Chunks(3), Chunks(fail=True)
    try:
        assert reader.submit(many) and reader.submit(bad)
        got = take_all(reader, 4)
        assert [r for f, r in got if f is many] == [2, 1, 0]  # read on while more was left
        [(_, error)] = [(f, r) for f, r in got if f is bad]
        assert isinstance(error, OSError) and "disk gone" in str(error)
        assert reader.idle() and not reader.busy(many)
        assert reader._thread is not None and reader._thread.name == "test-feed-reader"
    finally:
        reader.close()


def test_a_feed_is_not_queued_twice_and_is_busy_until_taken():
    gate = threading.Event()
    reader = FeedReader[Chunks, int]()
    feed, other = Chunks(gate=gate), Chunks()
    try:
        assert reader.submit(feed)
        assert not reader.submit(feed)  # queued or being read already
        assert reader.busy(feed) and not reader.busy(other) and not reader.idle()
        gate.set()
        deadline = time.monotonic() + 10
        while reader.busy(feed) and not reader._done and time.monotonic() < deadline:
            time.sleep(0.005)
        assert reader.busy(feed)  # read, not taken yet
        assert reader.take() == [(feed, 0)] and feed.reads == 1
        assert not reader.busy(feed) and reader.idle()
    finally:
        reader.close()


def test_close_cancels_the_read_in_progress_and_what_is_queued():
    reader = FeedReader[Chunks, int]()
    reading, queued = Chunks(gate=threading.Event()), Chunks()
    reader.submit(reading)
    deadline = time.monotonic() + 10
    while reader._reading is not reading and time.monotonic() < deadline:
        time.sleep(0.005)
    reader.submit(queued)
    reader.close()  # returns although the gate never opens: the read is cancelled
    assert reading.cancelled.is_set() and queued.cancelled.is_set()
    assert queued.reads == 0 and reader.take() == []  # a cancelled read is dropped


def test_the_runs_list_and_a_reopened_runs_parts_keep_their_thread_names():
    assert FolderLoader.thread_name == "tfstudio-run-reader"
    assert PartsReader.thread_name == "tfstudio-parts-reader"
