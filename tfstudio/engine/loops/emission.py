"""The events of custom loops: ``FitStarted(kind="loop")``, steps (as columns), ``FitEnded``.

A step is reported once the next step of the loop's first series exists (so a GAN's two
losses share one row), at once for an announced loop of one series, and at the loop's end.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tfstudio.core.events import ExecutionMode, FitEnded, FitStarted, ModelSummary, StepColumns
from tfstudio.engine.loop_inspect import LoopInspector
from tfstudio.engine.loops.owners import size
from tfstudio.engine.loops.series import Loop, Series
from tfstudio.engine.monitor import RunMonitor


class LoopEmitter:
    """Turns a run's loops into events on the run's channel (looked up at each emit);
    ``traces`` gives how many times step functions were traced so far."""

    def __init__(
        self,
        monitor: RunMonitor,
        inspector: LoopInspector | None,
        traces: Callable[[], int] = lambda: 0,
    ) -> None:
        self.monitor = monitor
        self.inspector = inspector
        self.traces = traces

    def announce(self, loop: Loop) -> None:
        """Start the loop's segment: name its series' metrics, emit ``FitStarted``."""
        mon = self.monitor
        loop.announced = True
        loop.start_step = mon.global_step
        multi = len(loop.series) > 1
        for s in loop.series:
            s.loss_key = f"loss ({s.name})" if multi else "loss"
            s.norm_key = s.norm_name(f"gradient norm ({s.name})" if multi else "gradient norm")
        name = " + ".join(s.name for s in loop.series)
        params = sum(size(v) for s in loop.series for v in s.variables)
        # a loop is announced once its second step exists (a GAN's second series may join
        # it until then): it began at its first read, after its first step
        self._started(loop, name, params, mon.now() if loop.read_at is None else loop.read_at)
        # how the loop's steps run: the window's eager/graph label says so
        mon.channel.emit(ExecutionMode(not loop.is_graph(), self.traces(), mon.global_step))
        if self.inspector is not None:
            self.inspector.announce(loop)

    def announce_explicit(self, loop: Loop) -> None:
        """Start the segment ``monitor.log`` reports into when no loop was found."""
        loop.announced = True
        loop.start_step = self.monitor.global_step
        loop.output = self.monitor.output_mark()  # monitor.log's call, on the script's thread
        self._started(loop, "monitor.log", 0, self.monitor.now())

    def _started(self, loop: Loop, name: str, params: int, time: float) -> None:
        mon = self.monitor
        mon.report_devices()  # as a fit does at its start (once a run; None before TF runs)
        mon.channel.emit(
            FitStarted(
                fit_index=loop.fit_index,
                model=ModelSummary(name, "custom loop", (), params, params),
                epochs=0,
                initial_epoch=0,
                steps_per_epoch=None,
                steps_per_execution=1,
                global_step=mon.global_step,
                time=time,
                kind="loop",
                loop_index=loop.number,
                output=loop.output,
            )
        )
        mon.flush()  # the viewer has the loop's line before the script's next output

    def drain(self, loop: Loop, final: bool = False, hold_newest: bool = False) -> None:
        """Report the loop's steps whose next primary step exists (all if ``final``), the
        Keras metrics the training thread read at a step (``loop.running_at``) on that step.
        ``hold_newest``: keep the newest back even so (an eager loop's metrics, read at an
        update, hold the steps before it)."""
        if not loop.series:
            return
        series = loop.series
        counts = [s.snapshot() for s in series]
        whole = final or (loop.announced and len(series) == 1 and not hold_newest)
        limit = counts[0] if whole else counts[0] - 1
        first = loop.emitted
        mon = self.monitor
        if limit <= first:
            loop.read_at = mon.now()
            return
        if not loop.announced:
            self.announce(loop)  # dated at the loop's first read (when its first step was)
        # Graph steps arrive in batches (a read every 200 ms): each step's time is spread
        # evenly since the previous read, which happens even with no step (a pause).
        now = mon.now()
        start = now if loop.read_at is None else loop.read_at
        loop.read_at = now
        n = limit - first
        at, running = n - 1, None  # the row the running values go with; those values
        pending = loop.running_at
        if pending is not None and pending[0] <= limit:
            loop.running_at = None
            if pending[0] > first:
                at, running = pending[0] - first - 1, pending[1]
        if running and first + at + 1 - loop.metrics_step < 2:
            running = None  # a step after the last sample: it would read as per-step values
        elif running:
            loop.metrics_step = first + at + 1
        g0, s0 = mon.global_step, mon.global_step - loop.start_step
        ks = np.arange(1, n + 1, dtype=np.int64)
        values, absent = _values(series, counts, first, limit)
        newest: dict[str, np.ndarray] = {}
        for key, value in (running or {}).items():
            newest[key] = np.full(n, np.nan)
            newest[key][at] = value
        others = np.arange(n) != at  # the running means go with that one step
        mon.channel.emit(
            StepColumns(
                loop.fit_index,
                g0 + ks,
                np.zeros(n, dtype=np.int64),
                s0 + ks,
                np.ones(n, dtype=np.int64),
                start + (now - start) / n * ks,
                values,
                newest,
                absent,
                dict.fromkeys(newest, others) if n > 1 else {},
            )
        )
        mon.global_step = g0 + n
        loop.emitted = limit
        for s in series:
            s.trim(limit)

    def end(self, loop: Loop, running: dict[str, float] | None = None) -> None:
        """Report the loop's last steps (``running``: its metrics now) and close its segment."""
        if loop.ended:
            return
        if running and loop.series:
            loop.running_at = (loop.series[0].written(), running)
        self.drain(loop, final=True)
        if self.inspector is not None:
            self.inspector.flush(loop)
            self.inspector.settle()
        loop.ended = True
        if loop.announced:
            mon = self.monitor
            mon.channel.emit(
                FitEnded(
                    loop.fit_index,
                    mon.global_step,
                    mon.stop_requested.is_set(),
                    mon.now(),
                    mon.output_mark(),
                )
            )
            mon.flush()  # a loop's end reaches the viewer even if the process dies next


def _values(
    series: list[Series], counts: list[int], first: int, limit: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Steps ``first..limit-1`` as columns (each series' loss and gradient norm, the tiny
    variables' value lines) and masks of the steps that lack a key, keys in the order steps
    first have them (the order their plots appear in; within a step, the series' order)."""
    n = limit - first
    values: dict[str, np.ndarray] = {}
    absent: dict[str, np.ndarray] = {}
    starts: dict[str, int] = {}

    def put(key: str, column: list[float], present: np.ndarray | None = None) -> None:
        col = np.array(column + [math.nan] * (n - len(column)), dtype=np.float64)
        present = ~np.isnan(col) if present is None else present  # (a NaN loss is a value)
        if present.any():
            values[key], starts[key] = col, int(present.argmax())
            if not present.all():
                absent[key] = ~present

    for s, count in zip(series, counts, strict=True):
        rows = s.rows(first, min(max(count, first), limit))
        put(s.loss_key, [r[0] for r in rows], np.arange(n) < len(rows))
        put(s.norm_key, [r[1] for r in rows])
    for s in series:  # eager: the guide's W and b, where they were read
        tiny = [r[2] for r in s.rows(first, limit)]
        for i, label in enumerate(s.small_labels):
            put(label, [t[i] if len(t) > i else math.nan for t in tiny])
    order = sorted(values, key=starts.__getitem__)  # stable
    return {k: values[k] for k in order}, {k: absent[k] for k in order if k in absent}
