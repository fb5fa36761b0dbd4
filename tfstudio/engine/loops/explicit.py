"""The explicit API's sink: what ``tfstudio.monitor.log`` and ``.watch`` do inside a run."""

from __future__ import annotations

import threading
from typing import Any

from tfstudio.engine.loops.emission import LoopEmitter
from tfstudio.engine.loops.owners import variables_of
from tfstudio.engine.loops.series import Loop, LoopBook
from tfstudio.engine.monitor import RunMonitor


class ExplicitApi:
    """``tfstudio.monitor._sink`` while a run lasts (the interceptor installs it)."""

    def __init__(
        self, monitor: RunMonitor, book: LoopBook, emitter: LoopEmitter, lock: threading.RLock
    ) -> None:
        self.monitor = monitor
        self.book = book
        self.emitter = emitter
        self.lock = lock
        self.watched: dict[int, tuple[str, Any]] = {}  # variable id -> (name, watched object)
        self._segment: Loop | None = None  # the segment monitor.log reports into

    def watch(self, obj: Any, name: str | None) -> None:
        """``monitor.watch``: loops training ``obj``'s variables are named after it."""
        try:
            label = name or str(getattr(obj, "name", "") or type(obj).__name__)
            for v in variables_of(obj) or []:
                self.watched[id(v)] = (label, obj)
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("monitor.watch", exc)

    def log(self, step: Any, scalars: dict[str, Any]) -> None:
        """``monitor.log``: scalars at a step, in the current loop, else a segment of their own.
        What it cannot take (a tensor of a ``tf.function`` being traced, a string) is reported,
        never raised: outside tfstudio the call does nothing, and the script must not fail."""
        try:
            step, scalars = int(step), {k: float(v) for k, v in scalars.items()}
        except Exception as exc:  # noqa: BLE001
            error: BaseException = exc
            if any(hasattr(v, "graph") for v in scalars.values()):  # symbolic: a trace's
                error = TypeError(
                    "monitor.log was called inside a tf.function, whose tensors have no value "
                    "while it is traced: call it outside, with the values the function returns"
                )
            self.monitor.report_error("monitor.log", error)
            return
        mon = self.monitor
        with self.lock:
            current = self.book.current()
            if current is not None and current.series and not current.ended:
                if not current.announced:
                    self.emitter.announce(current)
                # the step the script is at: a graph loop's steps are reported up to 0.2 s
                # later than they run (its step counter is one read)
                ahead = max(0, current.series[0].written() - current.emitted)
                fit_index, global_step = current.fit_index, mon.global_step + ahead
            else:
                loop = self._segment
                if loop is None:
                    loop = self._segment = self.book.new_loop(mon.fits + len(self.book.loops))
                    mon.loops = len(self.book.loops)
                    self.emitter.announce_explicit(loop)
                mon.global_step = max(mon.global_step + 1, loop.start_step + step)
                fit_index, global_step = loop.fit_index, mon.global_step
            mon.channel.step(fit_index, global_step, 0, step, 1, scalars, {}, mon.now())
