"""Sampling: which ``tf.function`` calls are steps, and which run the step function's twin.

Each call of a *step function* (a ``tf.function`` whose trace found a step) is a step
boundary; its graph writes each step's loss (``ring.py``). On the loop's sampling cadence
(the inspector's budget or ``--sample-every``) a call runs its *twin* instead
(``Function._clone``: the same Python function traced again), whose graph also writes the
gradient norm and, with the inspector on, the gradients' summaries. A step function with a
stateful random op (its state lives in the op, so a twin would replay the draws) gets no
twin: its own graph writes the norm at every step.

Once a step was traced, each eager ``tf.function`` call is a step boundary
(:meth:`Sampler.wrap`): the controls' work runs after a call when it has some, and what
came between two calls (a stop, a pause, a command) is taken before the next.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tfstudio.core.events import ExecutionMode
from tfstudio.engine.control_loops import LoopControls
from tfstudio.engine.loop_inspect import FIRST_SAMPLE, LoopInspector, schedule
from tfstudio.engine.loops.emission import LoopEmitter
from tfstudio.engine.loops.metrics import function_graph
from tfstudio.engine.loops.series import LoopBook, Series
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.script import RunStopped

NEVER = 1 << 62
# Ops that keep their random state in the kernel, one state per graph: a twin's copy of
# the op would start its draws over (tf.random.Generator and the stateless ops keep
# theirs in a variable or take a seed: a twin shares them).
STATEFUL_RANDOM = frozenset(
    "RandomUniform RandomUniformInt RandomStandardNormal TruncatedNormal RandomShuffle "
    "ParameterizedTruncatedNormal RandomGamma RandomPoisson RandomPoissonV2 RandomCrop "
    "Multinomial SampleDistortedBoundingBox SampleDistortedBoundingBoxV2 "
    "NonDeterministicInts".split()
)
RANDOM_NOTE = (
    "this loop's gradients and weights are not sampled: its step function draws from a "
    "stateful random op (e.g. tf.random.normal), and a recording twin would replay those "
    "draws, so your script would compute something else (a tf.random.Generator or "
    "stateless random ops keep the samples)."
)


class Sampler:
    """The run's step functions, their calls, and the sampled calls that run a twin.

    ``sync`` reports every graph step that ran; ``read_metrics`` reads the loops' Keras
    metrics between two steps (when ``metrics_due``); ``resumed`` is told the series of an
    ended loop's step function before its call; ``traced`` runs after each call (a trace may
    have ended in it).
    """

    def __init__(
        self,
        monitor: RunMonitor,
        inspector: LoopInspector | None,
        book: LoopBook,
        emitter: LoopEmitter,
        controls: LoopControls,
        lock: threading.RLock,
        sync: Callable[[], None],
        read_metrics: Callable[[], None],
        resumed: Callable[[Series], None],
        traced: Callable[[], None],
    ) -> None:
        self.monitor = monitor
        self.inspector = inspector
        self.book = book
        self.emitter = emitter
        self.controls = controls
        self.lock = lock
        self._sync = sync
        self._read_metrics = read_metrics
        self._resumed = resumed
        self._traced = traced
        self.probing = 0  # >0 while the inspector's own tf.functions run: no steps
        self.call_code: Any = None  # the wrapper's code: its frame holds the function called
        # tf.functions whose graph holds a step: id -> the (first) series its traces write
        self.step_fns: dict[int, Series] = {}
        self.graph_active = False  # a step was traced: tf.function calls are step boundaries
        self.recording = False  # a twin is being traced: write the norm (and summaries)
        self.calls = 0  # calls of step functions
        self.metrics_due = False  # the reader's beat: read the loops' metrics after a call
        self.traces = 0  # traces of step functions (twins not counted)
        self._graphs: set[int] = set()  # ids of the graphs counted
        self.sample_call = FIRST_SAMPLE  # the call that runs the twin
        self._twins: dict[int, Any] = {}  # step function id -> its twin (None: none can be)
        self._round: set[int] = set()  # step functions whose twin ran for this sample
        self._round_cost = 0.0

    @contextmanager
    def probing_context(self) -> Iterator[None]:
        """While entered, tf.function calls are the inspector's own: no steps."""
        self.probing += 1
        try:
            yield
        finally:
            self.probing -= 1

    def calling_function(self) -> Any:
        """At trace time: the ``tf.function`` the script is calling, or None (the outermost
        wrapper frame: a twin's call runs in its function's frame, a nested call inside it)."""
        found = None
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code is self.call_code:
                found = frame.f_locals.get("function")
            frame = frame.f_back
        return found

    def traced_step(self, graph: Any, function: Any, series: Series) -> bool:
        """A trace of ``function`` (the one called, see :meth:`calling_function`) found a
        step of ``series``: it is a step function. Returns whether this trace writes the
        gradient norm (a twin's, or one with a stateful random op)."""
        if function is not None:
            self.step_fns.setdefault(id(function), series)
        self.graph_active = True
        outer = id(function_graph(graph))
        if not self.recording and outer not in self._graphs:  # a trace (or a retrace)
            self._graphs.add(outer)
            self.traces += 1
            mon = self.monitor
            mon.channel.emit(ExecutionMode(False, self.traces, mon.global_step))
        return self.recording or draws_stateful_random(graph)

    def wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """The ``Function.__call__`` wrapper around TensorFlow's ``original``."""
        from tensorflow.python.eager.context import executing_eagerly

        monitor, controls = self.monitor, self.controls
        commands = monitor.channel.command_queue
        resume, stop = monitor.resume, monitor.stop_requested
        step_fns = self.step_fns

        def boundary(always: bool) -> None:
            """A step boundary: what came since the last (a stop, a pause, a command, a rate
            the script set) is taken here; the controls' work runs only when there is some
            (a learning-rate read syncs the device: ~5% of a small graph loop at every call)."""
            if stop.is_set():
                raise RunStopped()
            control = controls.control
            if always or commands or not resume.is_set() or (control is not None and control.due):
                self._sync()
                controls.after_step(None)

        def __call__(function: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
            if self.probing or monitor.in_fit or not executing_eagerly():
                return original(function, *args, **kwargs)  # probes, fit, nested calls
            fid = id(function)
            series = step_fns.get(fid)
            if self.graph_active:
                if series is not None and series.loop.ended:
                    self._resumed(series)  # a step function of an ended loop: it goes on anew
                boundary(False)  # the one before this call: no step runs after a stop
            if series is not None and self.calls + 1 >= self.sample_call:
                result = self._sampled_call(function, original, args, kwargs)
            else:
                result = original(function, *args, **kwargs)
            self._traced()  # a trace may have ended in this call: its Keras metrics
            if self.graph_active:  # the step boundary after the call
                if fid in step_fns:  # (also its first call, which traced the step)
                    self.calls += 1
                boundary(controls.per_step or controls.control is None)
                if self.metrics_due:  # the reader's beat asked (no step writes them now)
                    self.metrics_due = False
                    self._read_metrics()
            return result

        self.call_code = __call__.__code__
        return __call__

    def _sampled_call(
        self, function: Any, original: Callable[..., Any], args: Any, kwargs: Any
    ) -> Any:
        """Run this step with the twin; the sample ends once every step function ran its twin
        (a GAN's two ``tf.function``s), or when a function of the round is called again."""
        fid = id(function)
        if fid in self._round:
            self._finish_sample()
            return original(function, *args, **kwargs)
        twin = self._twin(function)
        if twin is None:
            self.sample_call = NEVER
            return original(function, *args, **kwargs)
        started = time.perf_counter()
        self.recording = True
        try:
            result = original(twin, *args, **kwargs)
        finally:
            self.recording = False
            self._round_cost += time.perf_counter() - started
        self._round.add(fid)
        if self._round >= self.step_fns.keys():
            self._finish_sample()
        return result

    def _twin(self, function: Any) -> Any:
        """The function's twin, made at its first use (None: it can have none)."""
        fid = id(function)
        if fid not in self._twins:
            twin = None
            try:
                if any(
                    draws_stateful_random(c.graph) for c in function._list_all_concrete_functions()
                ):
                    if self.inspector is not None:
                        self.monitor.note("Inspector: " + RANDOM_NOTE)
                else:
                    twin = function._clone(None)  # same Python function, traced again
            except Exception as exc:  # noqa: BLE001
                self.monitor.report_error("custom loop (tf.function twin)", exc)
            self._twins[fid] = twin
        return self._twins[fid]

    def _finish_sample(self) -> None:
        """Emit what the round's twins recorded and schedule the next sample."""
        cost, self._round_cost = self._round_cost, 0.0
        calls_per_step = max(1, len(self._round))  # e.g. a GAN's two step functions
        self._round = set()
        inspector = self.inspector
        try:
            with self.lock:
                loops = self.book.open_graph_loops()
                if inspector is not None:
                    for loop in loops:
                        if not loop.announced:
                            self.emitter.drain(loop)
                            if not loop.announced:
                                self.emitter.announce(loop)
                    inspector.graph_sample(loops, cost)
                else:
                    now = LoopInspector.clock()
                    for loop in loops:
                        if loop.series:
                            schedule(loop, loop.series[0].written(), cost, now)
                gaps = [lp.sampling.sample_at - lp.series[0].written() for lp in loops if lp.series]
            gap = max(1, min(gaps) if gaps else 1)
            self.sample_call = self.calls + 1 + (gap - 1) * calls_per_step + 1
        except Exception as exc:  # noqa: BLE001
            self.sample_call = NEVER
            self.monitor.report_error("custom loop sample", exc)


def draws_stateful_random(graph: Any) -> bool:
    """Whether a ``FuncGraph`` (while tracing: its ops so far), a function it calls or a graph
    it is traced in has a stateful random op."""
    seen: set[str] = set()
    while graph is not None:
        for op in graph.get_operations():
            if op.type in STATEFUL_RANDOM or _calls_random(graph, op.node_def, seen):
                return True
        graph = getattr(graph, "outer_graph", None)
    return False


def _calls_random(graph: Any, node: Any, seen: set[str]) -> bool:
    """Whether a node's function attributes (a call, a loop's body...) name a random function
    (one that cannot be looked up counts as random: no twin is the safe side)."""
    for attr in node.attr.values():
        names = [attr.func.name] if attr.HasField("func") else [f.name for f in attr.list.func]
        for name in names:
            if not name or name in seen:
                continue
            seen.add(name)
            found = graph._get_function(name)
            if found is None:
                return True
            for inner in found.definition.node_def:
                if inner.op in STATEFUL_RANDOM or _calls_random(graph, inner, seen):
                    return True
    return False
