"""Which ``tf.function`` calls are steps, and the inspector's samples of them (recording twins).

A ``tf.function`` whose trace found a step is a *step function*; each call of
one is a step boundary. On the inspector's cadence a call runs the function's
recording twin instead (``engine/loop_inspect.py``): the same Python function,
traced again with the gradients' summaries written on the device.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tfstudio.engine.loop_inspect import FIRST_SAMPLE, LoopInspector
from tfstudio.engine.loops.emission import LoopEmitter
from tfstudio.engine.loops.series import LoopBook
from tfstudio.engine.monitor import RunMonitor

NEVER = 1 << 62


class TwinSampler:
    """The step functions of a run and their sampled calls.

    Args:
        monitor: the run (error reporting).
        inspector: the inspector's sampler, or None when the run turned it off.
        book: the run's loops.
        emitter: announces and drains a loop before its sample is emitted.
        lock: the interceptor's lock (the reader thread drains loops too).
    """

    def __init__(
        self,
        monitor: RunMonitor,
        inspector: LoopInspector | None,
        book: LoopBook,
        emitter: LoopEmitter,
        lock: threading.RLock,
    ) -> None:
        self.monitor = monitor
        self.inspector = inspector
        self.book = book
        self.emitter = emitter
        self.lock = lock
        self.probing = 0  # >0 while the inspector's own tf.functions run: no steps
        self.tracing: int | None = None  # id of the tf.function being called (traced)
        self.step_fns: set[int] = set()  # ids of tf.functions whose graph holds a step
        self.recording = False  # the twin is being traced: add the gradient summaries
        self.calls = 0  # calls of step functions
        self.sample_call = FIRST_SAMPLE  # the call that runs the twin
        self._twins: dict[int, Any] = {}  # the step functions' recording twins
        self._round: set[int] = set()  # step functions whose twin ran for this sample
        self._round_cost = 0.0
        self._twin_failed = False

    @contextmanager
    def probing_context(self) -> Iterator[None]:
        """While entered, tf.function calls are the inspector's own: no steps."""
        self.probing += 1
        try:
            yield
        finally:
            self.probing -= 1

    def traced_step(self) -> None:
        """A trace found a step: the function being called is a step function."""
        if self.tracing is not None:
            self.step_fns.add(self.tracing)

    def sampled_call(
        self, function: Any, original: Callable[..., Any], args: Any, kwargs: Any
    ) -> Any:
        """Run this step with the recording twin; emit the sample once every step function ran.

        A sample is a round: each step function (a GAN may train its two models in two
        ``tf.function``s) runs its twin once, then the sample is read and emitted. The
        round also ends when a function of the round is called again (a function of an
        earlier loop may never be called again).
        """
        fid = id(function)
        if self.inspector is None or self._twin_failed:
            self.sample_call = NEVER
            self.tracing = fid
            return original(function, *args, **kwargs)
        if fid in self._round:
            self._finish_sample()
            self.tracing = fid
            return original(function, *args, **kwargs)
        twin = self._twins.get(fid)
        if twin is None:
            try:
                twin = function._clone(None)  # same Python function, traced again
            except Exception as exc:  # noqa: BLE001
                self._twin_failed = True
                self.monitor.report_error("inspector: gradients (tf.function twin)", exc)
                self.tracing = fid
                return original(function, *args, **kwargs)
            self._twins[fid] = twin
        started = time.perf_counter()
        self.recording = True
        self.tracing = fid
        try:
            result = original(twin, *args, **kwargs)
        finally:
            self.recording = False
            self._round_cost += time.perf_counter() - started
        self._round.add(fid)
        if self._round >= self.step_fns:
            self._finish_sample()
        return result

    def clear(self) -> None:
        """Drop the twins (the run is over)."""
        self._twins.clear()

    def _finish_sample(self) -> None:
        """Read what the round's twins recorded, emit it, schedule the next sample."""
        cost, self._round_cost = self._round_cost, 0.0
        calls_per_step = max(1, len(self._round))  # e.g. a GAN's two step functions
        self._round = set()
        assert self.inspector is not None
        try:
            started = time.perf_counter()
            with self.lock:
                loops = self.book.open_graph_loops()
                for loop in loops:
                    if not loop.announced:
                        self.emitter.drain(loop)
                        if not loop.announced:
                            self.emitter.announce(loop)
                self.inspector.graph_sample(loops, cost + time.perf_counter() - started)
                gaps = [lp.sample_at - lp.series[0].snapshot() for lp in loops if lp.series]
            gap = max(1, min(gaps) if gaps else 1)
            self.sample_call = self.calls + 1 + (gap - 1) * calls_per_step + 1
        except Exception as exc:  # noqa: BLE001
            self.sample_call = NEVER
            self.monitor.report_error("inspector: custom loop sample", exc)
