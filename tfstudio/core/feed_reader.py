"""Feeds read on a thread of its own; the thread that owns the results takes them.

A feed is anything with ``read()`` (the file work, any thread), ``cancel()`` and a
``cancelled`` event: a run folder's metrics (:class:`~tfstudio.core.run_loading.FolderFeed`,
read by a :class:`~tfstudio.core.run_loading.FolderLoader`) or its other parts
(:class:`~tfstudio.core.run_parts.PartsFeed`, read by a
:class:`~tfstudio.core.run_parts.PartsReader`). Finished reads wait in
:meth:`FeedReader.take`, which the owner calls (e.g. on a timer on the GUI thread), so
reading never blocks the owner's thread. Nothing here imports Qt.
"""

from __future__ import annotations

import threading
from typing import Any, Generic, Protocol, TypeVar


class Feed(Protocol):
    """What a :class:`FeedReader` reads."""

    cancelled: threading.Event

    def cancel(self) -> None: ...

    def read(self) -> Any: ...


F = TypeVar("F", bound=Feed)
R = TypeVar("R")


class FeedReader(Generic[F, R]):
    """Reads feeds on a thread of its own (named :attr:`thread_name`); the owner takes the
    results with :meth:`take`. A cancelled feed's read is skipped, or dropped when it was
    cancelled while read; :meth:`close` cancels what is queued or being read."""

    thread_name = "tfstudio-feed-reader"

    def __init__(self) -> None:
        self._todo: list[F] = []
        self._done: list[tuple[F, R | Exception]] = []
        self._lock = threading.Lock()
        self._has_work = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reading: F | None = None

    def read_on(self, result: R) -> bool:
        """Whether the feed is read again at once after this read (more is waiting)."""
        return False

    def submit(self, feed: F) -> bool:
        """Read ``feed`` once more, soon; False when it is queued or being read already."""
        with self._lock:
            if feed in self._todo or feed is self._reading:
                return False
            self._todo.append(feed)
        self._has_work.set()
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
            self._thread.start()
        return True

    def busy(self, feed: F | None = None) -> bool:
        """Whether ``feed`` (any feed, when None) is queued, being read, or not taken yet."""
        with self._lock:
            if feed is None:
                return bool(self._todo or self._done) or self._reading is not None
            return (
                feed in self._todo or feed is self._reading or any(f is feed for f, _ in self._done)
            )

    def idle(self) -> bool:
        """Whether nothing is queued, being read, or waiting to be taken."""
        return not self.busy()

    def take(self) -> list[tuple[F, R | Exception]]:
        """The reads finished since the last call (a failed read gives its exception)."""
        with self._lock:
            done, self._done = self._done, []
        return done

    def close(self) -> None:
        """Stop the thread (a read in progress is cancelled, and ends early)."""
        self._stop.set()
        with self._lock:
            reading = self._reading
            for feed in self._todo:
                feed.cancel()
        if reading is not None:
            reading.cancel()
        self._has_work.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._has_work.wait()
            with self._lock:
                if not self._todo:
                    self._has_work.clear()
                    continue
                feed = self._reading = self._todo.pop(0)
            result: R | Exception = RuntimeError("cancelled")  # (dropped below)
            if not feed.cancelled.is_set():
                try:
                    result = feed.read()
                except Exception as exc:  # noqa: BLE001 - an unreadable folder is said, not fatal
                    result = exc
            with self._lock:
                self._reading = None
                if not feed.cancelled.is_set():
                    self._done.append((feed, result))
                    if not isinstance(result, Exception) and self.read_on(result):
                        self._todo.append(feed)  # read on: the rest comes chunk by chunk
