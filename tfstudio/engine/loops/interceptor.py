"""``LoopInterceptor``: one run's custom-loop monitoring, put together (see ``__init__``)."""

from __future__ import annotations

import inspect
import threading
from typing import Any

import tfstudio.monitor as explicit_api
from tfstudio.core.ticker import Ticker
from tfstudio.engine.control_loops import LoopControls
from tfstudio.engine.loop_inspect import LoopInspector, new_sampling
from tfstudio.engine.loops import ring
from tfstudio.engine.loops.emission import LoopEmitter
from tfstudio.engine.loops.explicit import ExplicitApi
from tfstudio.engine.loops.metrics import LoopMetrics
from tfstudio.engine.loops.owners import discover, user_site, variable_label
from tfstudio.engine.loops.patching import patch_tensorflow
from tfstudio.engine.loops.sampling import Sampler
from tfstudio.engine.loops.series import Loop, LoopBook, Series
from tfstudio.engine.loops.steps import PendingStep, StepDetector, scalar, unscale
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.patches import Patches
from tfstudio.engine.script import RunStopped


class LoopInterceptor:
    """Observes one run's custom training loops while entered (the hooks ``patching`` calls)."""

    def __init__(self, monitor: RunMonitor) -> None:
        self.monitor = monitor
        self.tf: Any = None  # the tensorflow module, once the script imported it
        self._lock = threading.RLock()  # the reader thread drains loops too
        self._hook: Any = None
        self._patches = Patches()
        self.book = LoopBook()
        self.detector = StepDetector(None)
        self.inspector: LoopInspector | None = (
            LoopInspector(monitor, lambda: self.sampler.probing_context())
            if monitor.options.inspector
            else None
        )
        self.emitter = LoopEmitter(monitor, self.inspector, lambda: self.sampler.traces)
        self.controls = LoopControls(
            monitor, lambda: [s.optimizer for lp in self.book.loops[-1:] for s in lp.series]
        )
        self.metrics = LoopMetrics(monitor.report_error)  # the Keras metrics steps update
        self.sampler = Sampler(
            monitor,
            self.inspector,
            self.book,
            self.emitter,
            self.controls,
            self._lock,
            self.sync,
            self.read_metrics,
            self._function_called,
            lambda: self.metrics.discover(self.tf),
        )
        self.explicit = ExplicitApi(monitor, self.book, self.emitter, self._lock)
        self.reader = Ticker(  # the graph loops' reader: their steps, 5 times a second
            "tfstudio-loop-reader",
            ring.READ_EVERY,
            self._read,
            lambda exc: monitor.report_error("custom loop (reader)", exc),
        )

    def __enter__(self) -> LoopInterceptor:
        explicit_api._sink = self.explicit  # tfstudio.monitor's calls reach this run
        from tfstudio.engine.instrument import patch_on_import

        self._hook = patch_on_import(
            "tensorflow",
            "GradientTape",
            self._patch,
            self.monitor.report_error,
            "intercepting custom training loops",
        )
        return self

    def _patch(self, tf: Any) -> None:
        self.tf = tf
        self.detector.tf = tf
        patch_tensorflow(tf, self._patches, self)

    def __exit__(self, *exc: object) -> None:
        if explicit_api._sink is self.explicit:
            explicit_api._sink = None
        if self._hook is not None:
            self._hook.remove()
        self._patches.restore()
        self.reader.stop()
        try:
            with self._lock:
                for loop in self.book.loops:
                    if not loop.ended:
                        self.emitter.end(loop, self.metrics.sample(loop))
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("custom loop end", exc)
        self.controls.end()
        self.tf = None

    def eager(self) -> bool:
        """Whether the script's code runs eagerly now (False while a tf.function traces)."""
        tf = self.tf
        return tf is not None and tf.executing_eagerly()

    def gradient_taken(self, target: Any, sources: Any, grads: Any) -> None:
        """A tape gradient: it may begin a step (failures are reported, never raised)."""
        try:
            eager = self.eager()
            inspector = self.inspector
            if eager and inspector is not None and inspector.deferred is not None:
                inspector.settle()  # the sampled step's updates are all done
            self.detector.gradient(target, sources, grads, eager)
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("custom loop (gradient)", exc)

    def updated(self, variables: list[Any], optimizer: Any, where: str) -> None:
        """Variables were updated: a step when a gradient of them came first."""
        try:
            if optimizer is not None:
                self.controls.optimizer = optimizer  # the last one seen applying gradients
            found = self.detector.update(variables)
            if found is not None:
                self._step(found, optimizer)
        except RunStopped:
            raise
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error(where, exc)

    def sync(self) -> None:
        """Report every graph step that ran (a device sync); a reported NaN or Inf loss goes
        to the NaN guard, with its step, at the next step boundary."""
        with self._lock:
            for loop in self.book.open_graph_loops():
                self.emitter.drain(loop)
                found = [s.non_finite for s in loop.series if s.non_finite is not None]
                bad = min(found, default=None)  # (a GAN's: either model's, the earlier)
                if bad is not None and bad[0] < loop.emitted:  # reported: its run step is
                    for s in loop.series:  # counted back from the newest
                        s.non_finite = None
                    step = self.monitor.global_step - (loop.emitted - 1 - bad[0])
                    self.controls.non_finite(step, bad[1])

    def read_metrics(self) -> None:
        """On the training thread, between two steps (no step writes them, no reset is half
        done): the graph loops' Keras metrics and the step they hold, for the next report."""
        with self._lock:
            for loop in self.book.open_graph_loops():
                if self.metrics.holds(loop) and loop.series:
                    loop.running_at = (loop.series[0].written(), self.metrics.sample(loop))

    def _read(self) -> None:
        """The reader's beat: report the graph steps, ask for the loops' metrics at the next
        step function's return and for a schedule's rate."""
        self.sync()
        with self._lock:
            if any(self.metrics.holds(lp) for lp in self.book.open_graph_loops()):
                self.sampler.metrics_due = True
        self.controls.beat()

    def _function_called(self, series: Series) -> None:
        """Before a call of a step function whose loop ended: it goes on in a new loop."""
        try:
            with self._lock:
                self._continue(series.loop)
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("custom loop (next loop)", exc)

    def _step(self, found: PendingStep, optimizer: Any) -> None:
        eager = self.eager()
        if eager and self.monitor.stop_requested.is_set():
            raise RunStopped()
        function = None
        if eager:
            site: tuple[Any, ...] = ("eager", *user_site())
        else:
            function = self.sampler.calling_function()
            site = ("graph", _function_code(function))
        with self._lock:
            series = self.book.find(found.key, site)
            if series is None:
                series = self._new_series(found.key, found.variables, site)
            elif series.loop is not None and series.loop.ended:
                self._continue(series.loop)  # steps of an earlier loop come again
            if optimizer is not None and series.optimizer is None:
                series.optimizer = optimizer
                self.controls.track(getattr(optimizer, "name", "optimizer"), optimizer)
            loop = series.loop
        assert loop is not None
        if eager:
            loss = scalar(found.target)
            # the loop's Keras metrics as of its previous step (read before this one's
            # update_state), reported with that step. Only at its first series' updates: a
            # GAN's second update comes before the step's metrics are updated
            if not loop.series or series is loop.series[0]:
                running = self.metrics.eager_step(loop, self.tf)
                if running is not None:
                    loop.running_at = (series.written(), running)
            with self._lock:
                series.add(loss, found.norm, found.small)
                self.emitter.drain(loop, hold_newest=self.metrics.holds(loop))
            if self.inspector is not None:
                self.inspector.eager_step(loop, series, found.pairs)
            if series is loop.series[0]:
                self.controls.after_step(loss)
        else:  # tracing a tf.function: record the loss on the device at run time
            tf = self.tf
            graph = tf.compat.v1.get_default_graph()
            ring = series.graph_ring()
            recording = self.sampler.recording
            norm = self.sampler.traced_step(graph, function, series)
            if norm and not recording:
                series.norm_sampled = False  # its own graph writes every step's norm
            pairs = found.pairs
            if found.scaled is not None and (norm or recording):  # (not in the script's graph)
                pairs = unscale(tf, pairs, found.scaled, found.target)
            if recording and self.inspector is not None:
                self.inspector.record_graph(series, pairs)
            ring.write(tf, found.target, pairs, norm)
            self.metrics.traced(graph, loop)
            self.reader.start()

    def _new_series(
        self, key: frozenset[int], variables: list[Any], site: tuple[Any, ...]
    ) -> Series:
        owner = discover(variables, self.explicit.watched)
        small = [
            owner.labels.get(id(v)) or variable_label(v) for v in self.detector.small_variables(key)
        ]
        series = Series(key, owner.name, variables, small, site)
        if self.inspector is not None:
            series.tree = self.inspector.tree_of(owner.obj, owner.name, variables)
        if owner.obj is not None and owner.holds_all:
            self.controls.track(owner.name, owner.obj, variables)
        else:  # raw variables (of no module, or attributes a Keras model does not track)
            for v in variables:
                self.controls.track(owner.labels.get(id(v)) or "variable", v, [v])
        loop = self.book.current() if self.book.joins_current(key, site) else self._next_loop()
        assert loop is not None
        self.book.add(series, loop)
        return series

    def _continue(self, ended: Loop) -> None:
        """An ended loop's steps come again: the current loop ends, a new one holds its series."""
        self.metrics.carry(ended, self._next_loop(ended))

    def _next_loop(self, ended: Loop | None = None) -> Loop:
        """End the current loop and start the next (with ``ended``'s series, if given). Also
        while a ``tf.function`` traces: the reads run eagerly (``init_scope``), never as ops of
        the graph being traced."""
        previous = self.book.current()
        if previous is not None:
            with self.tf.init_scope():
                if not previous.ended:
                    self.emitter.end(previous, self.metrics.sample(previous))
                self.controls.end()
        mon, book = self.monitor, self.book
        index, sampling = mon.fits + len(book.loops), new_sampling(mon)
        loop = (
            book.new_loop(index, sampling) if ended is None else book.reopen(ended, index, sampling)
        )
        loop.output = mon.output_mark()  # its first step: before the script prints it
        mon.loops = len(book.loops)
        return loop


def _function_code(function: Any) -> Any:
    """What tells a ``tf.function``'s steps from another's: its Python function's code (a
    retrace, or the same function wrapped again, is the same loop), else its id."""
    if function is None:
        return None
    python = getattr(function, "python_function", None)
    python = getattr(python, "__func__", python)  # a method
    code = getattr(inspect.unwrap(python), "__code__", None) if python is not None else None
    return code if code is not None else id(function)
