"""ExactPoints: a zoomed range read off the caller's thread, debounced, stale reads dropped."""

from __future__ import annotations

import threading

import numpy as np

from tests.conftest import wait_for
from tests.core.tfevents import write_events
from tfstudio.core.eventfile import TagColumns
from tfstudio.core.exact_points import ExactPoints, ExactRange, last_writes, splice
from tfstudio.core.run_loading import FolderFeed


def columns(first: int, last: int) -> dict[str, TagColumns]:
    steps = np.arange(first, last + 1, dtype=np.int64)
    return {"loss": TagColumns(steps, steps * 0.5, steps.astype(np.float64))}


def test_a_moving_range_is_read_once_it_stops_and_stale_reads_are_dropped():
    calls: list[tuple[int, int]] = []
    release = threading.Event()

    def read(first, last, stale):
        calls.append((first, last))
        release.wait(10)  # a slow disk: the range moves on while this reads
        return {} if stale() else columns(first, last)

    exact = ExactPoints(read, debounce_s=0.05)
    try:
        exact.want(0, 10)
        wait_for(lambda: calls, timeout=10)
        for k in range(1, 20):  # the user keeps zooming while the first read goes on
            exact.want(k, 10 + k)
        release.set()
        wait_for(lambda: exact.reads == 1 and not exact.pending(), timeout=10)
        # the first read was superseded (dropped); the range read is the last one asked for
        held = exact.get("loss")
        assert held is not None and (held.first, held.last) == (19, 29)
        assert held.xs.tolist() == list(range(19, 30))
        assert calls[0] == (0, 10) and calls[-1] == (19, 29) and len(calls) <= 3
        assert exact.covers(20, 28) and not exact.covers(10, 28)
        exact.forget()
        assert exact.get("loss") is None and not exact.pending()
    finally:
        exact.close()
    assert not any(t.name == "tfstudio-zoom-reader" for t in threading.enumerate())


def test_the_exact_points_come_from_the_folder_as_recorded(tmp_path):
    run = tmp_path / "run"
    losses = [(s, 1.0 / s) for s in range(1, 5001)]
    write_events(run, {"step/loss": losses, "epoch/loss": [(5000, 0.5)]})
    feed = FolderFeed(run, chunk_bytes=1 << 14)  # many pieces: only some are read again
    while feed.read().more:
        pass
    exact = ExactPoints(feed.read_steps, debounce_s=0.0)
    try:
        exact.want(1200, 1300)
        wait_for(lambda: not exact.pending(), timeout=10)
        held = exact.get("loss")
        assert held.xs.tolist() == list(range(1200, 1301))
        assert held.ys.tolist() == [float(np.float32(1.0 / s)) for s in range(1200, 1301)]
        assert exact.get("loss (epoch)") is None  # per-step lines only
        exact.want(4_900, 5_200)  # past the last step read: held only as far as points go
        wait_for(lambda: exact.get("loss").first == 4_900, timeout=10)
        held = exact.get("loss")
        assert (held.first, held.last) == (4_900, 5_000) and not exact.covers(4_950, 5_100)
        reads = exact.reads
        wait_for(lambda: not exact.pending(), timeout=10)  # read once: not read over and over
        wait_for(lambda: not any(t.name == "tfstudio-zoom-reader" for t in threading.enumerate()))
        assert exact.reads == reads
    finally:
        exact.close()
    exact.want(0, 1)  # closed: nothing more is read
    assert exact.wanted == (1200, 1300) or exact.wanted is None
    assert not any(t.name == "tfstudio-zoom-reader" for t in threading.enumerate())


def test_a_restore_keeps_the_points_recorded_last_and_splice_replaces_the_envelope():
    steps = np.array([1, 2, 3, 4, 5, 3, 4, 5, 6], dtype=np.float64)
    values = np.array([1, 2, 3, 4, 5, 30, 40, 50, 60], dtype=np.float64)
    xs, ys = last_writes(steps, values)
    assert xs.tolist() == [1, 2, 3, 4, 5, 6] and ys.tolist() == [1, 2, 30, 40, 50, 60]
    env_x = np.array([0.0, 0.0, 8.0, 8.0, 16.0, 16.0])
    env_y = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    held = ExactRange(8, 15, np.arange(8.0, 16.0), np.arange(8.0, 16.0) * 10)
    x, y = splice(env_x, env_y, held)
    assert x.tolist() == [0, 0, *range(8, 16), 16, 16]
    assert y.tolist() == [1, 2, *(v * 10 for v in range(8, 16)), 5, 6]
