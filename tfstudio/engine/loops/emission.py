"""The events of custom loops: ``FitStarted(kind="loop")``, steps (as columns), ``FitEnded``.

A step is reported once the next step of the loop's first series exists (so a
GAN's two losses share one event), at once for a loop of one series once it is
announced, and at the end of the loop. Graph steps arrive in batches (one read
every 200 ms); each step's time is spread evenly since the previous read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfstudio.core.events import FitEnded, FitStarted, ModelSummary, StepColumns
from tfstudio.engine.loop_inspect import LoopInspector
from tfstudio.engine.loops.owners import size
from tfstudio.engine.loops.series import Loop
from tfstudio.engine.monitor import RunMonitor

_NO_RUNNING: dict[str, float] = {}  # a loop step's running means (shared, never mutated)


class LoopEmitter:
    """Turns a run's loops into events on the run's channel.

    Args:
        monitor: the run (its channel is looked up at each emit, never cached).
        inspector: the inspector's sampler, or None when the run turned it off.
    """

    def __init__(self, monitor: RunMonitor, inspector: LoopInspector | None) -> None:
        self.monitor = monitor
        self.inspector = inspector

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

    def drain(
        self,
        loop: Loop,
        final: bool = False,
        running: dict[str, float] | None = None,
        hold_newest: bool = False,
    ) -> None:
        """Report the loop's steps whose next primary step exists (all of them if final).

        A loop of one series, once announced, reports every step at once: no other
        series can join it any more.

        Args:
            running: values of the loop's Keras metrics read now: they go with the newest
                step reported (dropped when no step is). They may also hold the updates of
                the step that was running meanwhile (one at most): in its graph the
                metrics' updates and the step counter's are not ordered.
            hold_newest: keep the newest step back even so (an eager loop whose metrics,
                read at a step's update, hold the steps before it).
        """
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
        tick = (now - start) / (limit - first)
        fit_index = loop.fit_index
        columns = []
        for s, n in zip(series, counts, strict=True):
            upto = min(limit, n)
            losses, norms = s.values(first, max(upto, first))
            columns.append((s.loss_key, s.norm_key, losses, norms, upto - first))
        extras = [s for s in series if s.has_extra()]
        if running and not whole and not hold_newest and len(series) == 1:
            # A graph loop's first read, before it is announced: its newest step is held
            # back, and metrics read now hold that step's updates (or later ones), never
            # only those up to `limit`'s. The next beat reads them again.
            running = None
        elif running and limit - loop.metrics_step < 2:
            running = None  # a step after the last sample: it would read as per-step values
        elif running:
            loop.metrics_step = limit
        g0 = mon.global_step
        s0 = g0 - loop.start_step
        n = limit - first
        if len(columns) == 1 and not extras and columns[0][4] == n:
            # The common case (one series, graph steps read in bulk): the steps as columns
            # at once, the least Python per step (the reader competes with training).
            loss_key, norm_key, losses, norms, _ = columns[0]
            ks = np.arange(1, n + 1, dtype=np.int64)
            norm = np.asarray(norms, dtype=np.float64)
            values = {loss_key: np.asarray(losses, dtype=np.float64), norm_key: norm}
            missing = np.isnan(norm)  # no gradients to measure at that step
            absent = {norm_key: missing} if missing.any() else {}
            if missing.all():
                del values[norm_key]
                absent = {}
            columns_running: dict[str, np.ndarray] = {}
            running_absent: dict[str, np.ndarray] = {}
            if running:
                earlier = np.ones(n, dtype=bool)
                earlier[-1] = False  # only the newest step has them
                for key, value in running.items():
                    col = np.full(n, np.nan)
                    col[-1] = value
                    columns_running[key] = col
                    running_absent[key] = earlier
            mon.channel.emit(
                StepColumns(
                    fit_index,
                    g0 + ks,
                    np.zeros(n, dtype=np.int64),
                    s0 + ks,
                    np.ones(n, dtype=np.int64),
                    start + tick * ks,
                    values,
                    columns_running,
                    absent,
                    running_absent,
                )
            )
            columns = []
        step_row = mon.channel.step
        for k in range(0 if columns else n, n):
            values: dict[str, float] = {}
            for loss_key, norm_key, losses, norms, count in columns:
                if k < count:
                    values[loss_key] = losses[k]
                    norm = norms[k]
                    if norm == norm:  # not NaN: the step had gradients to measure
                        values[norm_key] = norm
            for s in extras:
                values.update(s.extra(first + k))
            means = running if running and k == n - 1 else _NO_RUNNING
            step_row(fit_index, g0 + k + 1, 0, s0 + k + 1, 1, values, means, start + tick * (k + 1))
        mon.global_step = g0 + (limit - first)
        loop.emitted = limit
        for s in series:
            s.trim(limit)

    def end(self, loop: Loop, running: dict[str, float] | None = None) -> None:
        """Report the loop's last steps and close its segment (once).

        Args:
            running: the loop's Keras metrics read now, for its last step.
        """
        if loop.ended:
            return
        self.drain(loop, final=True, running=running)
        if self.inspector is not None:
            self.inspector.flush(loop)
            self.inspector.settle()
        loop.ended = True
        if loop.announced:
            mon = self.monitor
            # (ended on the training thread: at the next loop's first step, or the run's end)
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

    def logged(self, fit_index: int, global_step: int, step: int, scalars: dict[str, Any]) -> None:
        """One ``monitor.log`` call's scalars as a step."""
        mon = self.monitor
        mon.channel.step(fit_index, global_step, 0, step, 1, scalars, _NO_RUNNING, mon.now())
