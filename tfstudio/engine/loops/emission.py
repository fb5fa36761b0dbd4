"""The events of custom loops: ``FitStarted(kind="loop")``, ``StepEnded``, ``FitEnded``.

A step is reported once the next step of the loop's first series exists (so a
GAN's two losses share one event), at once for a loop of one series once it is
announced, and at the end of the loop. Graph steps arrive in batches (one read
every 200 ms); each step's time is spread evenly since the previous read.
"""

from __future__ import annotations

from typing import Any

from tfstudio.core.events import FitEnded, FitStarted, ModelSummary, StepEnded
from tfstudio.engine.loop_inspect import LoopInspector
from tfstudio.engine.loops.owners import size
from tfstudio.engine.loops.series import Loop
from tfstudio.engine.monitor import RunMonitor

_NO_RUNNING: dict[str, float] = {}  # StepEnded.running of a loop step (shared, never mutated)


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
        self._started(loop, "monitor.log", 0, self.monitor.now())

    def _started(self, loop: Loop, name: str, params: int, time: float) -> None:
        mon = self.monitor
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
            )
        )

    def drain(self, loop: Loop, final: bool = False) -> None:
        """Report the loop's steps whose next primary step exists (all of them if final).

        A loop of one series, once announced, reports every step at once: no other
        series can join it any more.
        """
        if not loop.series:
            return
        series = loop.series
        counts = [s.snapshot() for s in series]
        whole = final or (loop.announced and len(series) == 1)
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
        emit = mon.channel.emit
        fit_index = loop.fit_index
        columns = []
        for s, n in zip(series, counts, strict=True):
            upto = min(limit, n)
            losses, norms = s.values(first, max(upto, first))
            columns.append((s.loss_key, s.norm_key, losses, norms, upto - first))
        extras = [s for s in series if s.has_extra()]
        g0 = mon.global_step
        s0 = g0 - loop.start_step
        if len(columns) == 1 and not extras and columns[0][4] == limit - first:
            # The common case (one series, graph steps read in bulk): the least Python per
            # step, since the reader thread competes with training for the GIL.
            loss_key, norm_key, losses, norms, _ = columns[0]
            for k, (loss, norm) in enumerate(zip(losses, norms, strict=True), 1):
                values = {loss_key: loss, norm_key: norm} if norm == norm else {loss_key: loss}
                t = start + tick * k
                emit(StepEnded(fit_index, g0 + k, 0, s0 + k, 1, values, _NO_RUNNING, t))
            columns = []
        for k in range(0 if columns else limit - first, limit - first):
            values: dict[str, float] = {}
            for loss_key, norm_key, losses, norms, n in columns:
                if k < n:
                    values[loss_key] = losses[k]
                    norm = norms[k]
                    if norm == norm:  # not NaN: the step had gradients to measure
                        values[norm_key] = norm
            for s in extras:
                values.update(s.extra(first + k))
            t = start + tick * (k + 1)
            emit(StepEnded(fit_index, g0 + k + 1, 0, s0 + k + 1, 1, values, {}, t))
        mon.global_step = g0 + (limit - first)
        loop.emitted = limit
        for s in series:
            s.trim(limit)

    def end(self, loop: Loop) -> None:
        """Report the loop's last steps and close its segment (once)."""
        if loop.ended:
            return
        self.drain(loop, final=True)
        if self.inspector is not None:
            self.inspector.flush(loop)
            self.inspector.settle()
        loop.ended = True
        if loop.announced:
            mon = self.monitor
            mon.channel.emit(
                FitEnded(loop.fit_index, mon.global_step, mon.stop_requested.is_set(), mon.now())
            )
            mon.flush()  # a loop's end reaches the viewer even if the process dies next

    def logged(self, fit_index: int, global_step: int, step: int, scalars: dict[str, Any]) -> None:
        """One ``monitor.log`` call's scalars as a step."""
        mon = self.monitor
        mon.channel.emit(StepEnded(fit_index, global_step, 0, step, 1, scalars, {}, mon.now()))
