"""A daemon thread that calls a function every few seconds while something lasts."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Ticker:
    """Calls ``tick`` every ``interval`` seconds on a daemon thread named ``name``, from
    :meth:`start` (once; later calls do nothing) until :meth:`stop`. A failure goes to
    ``on_error`` and the ticking goes on."""

    def __init__(
        self,
        name: str,
        interval: float,
        tick: Callable[[], object],
        on_error: Callable[[BaseException], None],
    ) -> None:
        self.name = name
        self.interval = interval
        self._tick = tick
        self._on_error = on_error
        self._stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self, first_now: bool = False) -> None:
        """Start ticking (once); ``first_now``: the first tick at once, not an interval on."""
        if self.thread is None:
            self.thread = threading.Thread(
                target=self._loop, args=(first_now,), name=self.name, daemon=True
            )
            self.thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the thread and wait for it (at most ``timeout`` seconds)."""
        self._stop.set()
        if self.thread is not None:
            self.thread.join(timeout=timeout)

    def _loop(self, first_now: bool) -> None:
        wait = 0.0 if first_now else self.interval
        while not self._stop.wait(wait):
            wait = self.interval
            try:
                self._tick()
            except Exception as exc:  # noqa: BLE001 - said, and the next tick comes
                self._on_error(exc)
