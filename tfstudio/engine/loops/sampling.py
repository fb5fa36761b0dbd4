"""Which ``tf.function`` calls are steps, and the calls that run a twin of the step function.

A ``tf.function`` whose trace found a step is a *step function*; each call of
one is a step boundary. A step function's own graph writes only each step's loss.
Every :data:`~tfstudio.engine.loops.ring.NORM_EVERY` calls (and no more often than
every :data:`~tfstudio.engine.loops.ring.NORM_MIN_GAP_S`) a call runs its *norm
twin* instead: the same Python function traced again, whose graph also writes the
gradient norm. On the inspector's cadence a call runs the function's *recording
twin* (``engine/loop_inspect.py``), which writes the norm and the gradients'
summaries. A step function whose graph draws from a stateful random op (whose
state lives in the op, so a twin would replay its draws) gets no norm twin: its own
graph writes the norm at every step.

Between those calls the ``Function.__call__`` wrapper (``patching.py``) takes a
quiet path (a count and a comparison) until call :attr:`TwinSampler.quiet_until`:
the wrapper's full path sets it after each call, and anything the training thread
must see at the next call (a stop, a control's rate, a new step function) sets it to 0.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tfstudio.engine.loop_inspect import FIRST_SAMPLE, LoopInspector
from tfstudio.engine.loops.emission import LoopEmitter
from tfstudio.engine.loops.ring import NORM_EVERY, NORM_MIN_GAP_S
from tfstudio.engine.loops.series import LoopBook
from tfstudio.engine.monitor import RunMonitor

NEVER = 1 << 62
# Ops that keep their random state in the kernel, one state per graph: a twin's copy of
# the op would start its draws over (tf.random.Generator and the stateless ops keep
# theirs in a variable or take a seed: a twin shares them).
STATEFUL_RANDOM = frozenset(
    {
        "RandomUniform",
        "RandomUniformInt",
        "RandomStandardNormal",
        "TruncatedNormal",
        "ParameterizedTruncatedNormal",
        "RandomShuffle",
        "RandomGamma",
        "RandomPoisson",
        "RandomPoissonV2",
        "RandomCrop",
        "Multinomial",
        "SampleDistortedBoundingBox",
        "SampleDistortedBoundingBoxV2",
        "NonDeterministicInts",
    }
)


class TwinSampler:
    """The step functions of a run and their sampled calls.

    Args:
        monitor: the run (error reporting).
        inspector: the inspector's sampler, or None when the run turned it off.
        book: the run's loops.
        emitter: announces and drains a loop before its sample is emitted.
        lock: the interceptor's lock (the reader thread drains loops too).
    """

    # Seconds, for the norm twins' cap of calls a second. A benchmark that interleaves
    # a monitored loop's steps with bare ones gives it a clock of the loop's own time,
    # as it would have in a run of its own (as ``Inspector.clock``; a callable object,
    # not a function, which would bind as a method).
    clock: Callable[[], float] = time.monotonic

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
        # the code of the Function.__call__ wrapper: its outermost frame on the stack
        # holds the tf.function being called (see calling)
        self.call_code: Any = None
        self.step_fns: set[int] = set()  # ids of tf.functions whose graph holds a step
        # ... those of the current loop (the wrapper's quiet path is for them only: a call
        # of another loop's step function takes its full path, which begins that loop again)
        self.current_fns: set[int] = set()
        self.recording = False  # the twin is being traced: add the gradient summaries
        self.norming = False  # a norm twin is being traced: write the gradient norm
        self.calls = 0  # calls of step functions
        self.sample_call = FIRST_SAMPLE  # the call that runs the twin
        self.norm_call = NORM_EVERY  # the call that opens the next round of norm twins
        # the first call that is not a plain call of a step function's own graph (the
        # wrapper's one comparison per call)
        self.special_call = min(FIRST_SAMPLE, NORM_EVERY)
        # calls of step functions before this one take the wrapper's quiet path (0: none)
        self.quiet_until = 0
        self.every_step: set[int] = set()  # step functions whose graph writes every norm
        self._twins: dict[int, Any] = {}  # the step functions' recording twins
        self._norm_twins: dict[int, Any] = {}  # their norm twins (None: cannot have one)
        self._norm_due: set[int] = set()  # step functions yet to run their norm twin
        self._norm_done: set[int] = set()  # those that ran it (kept until the next round opens)
        self._norm_opened: int | None = None  # the call that opened the round (None: no round)
        self._norm_time = -math.inf  # time.monotonic() when the last round opened
        self._norm_time_call = 0  # the call that opened it
        self._pace = 0.0  # seconds a call between the last two rounds' openings (0: unknown)
        self._round: set[int] = set()  # step functions whose twin ran for this sample
        self._round_cost = 0.0
        self._twin_failed = False
        self._woken = False  # wake() was called since special() began
        # the step boundary that runs before a call when the controls have work (see wake)
        self.before_call: Callable[[], None] = lambda: None

    @contextmanager
    def probing_context(self) -> Iterator[None]:
        """While entered, tf.function calls are the inspector's own: no steps."""
        self.probing += 1
        try:
            yield
        finally:
            self.probing -= 1

    def calling(self) -> int | None:
        """The id of the ``tf.function`` the script is calling (and tracing), or None
        (see :meth:`calling_function`)."""
        found = self.calling_function()
        return None if found is None else id(found)

    def calling_function(self) -> Any:
        """The ``tf.function`` the script is calling (and tracing), or None.

        Its call is the outermost frame of the ``Function.__call__`` wrapper on this
        thread's stack (a twin's call runs in the frame of the function it twins; a
        nested function's call, made while the outer one traces, is inside it). Walked
        at trace time only: the wrapper's quiet path keeps no record of its calls.
        """
        found = None
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code is self.call_code:
                found = frame.f_locals.get("function")
            frame = frame.f_back
        return found

    def traced_step(self) -> None:
        """A trace found a step: the function being called is a step function (its next
        call takes the wrapper's full path, which counts it)."""
        fid = self.calling()
        if fid is not None:
            self.step_fns.add(fid)
        self.quiet_until = 0

    def measures_norm(self, graph: Any) -> bool:
        """At trace time of a step: whether this trace writes the step's gradient norm.

        Twins do; a step function's own graph does only when it draws from a stateful
        random op (then it gets no norm twin: see the module's docstring).
        """
        if self.recording or self.norming:
            return True
        if draws_stateful_random(graph):
            fid = self.calling()
            if fid is not None:
                self.every_step.add(fid)
            return True
        return False

    def wake(self) -> None:
        """The controls have work: the next call of a step function takes :meth:`special`
        (which runs :attr:`before_call`). From another thread too: a wake while
        :meth:`special` runs is kept (it looks at :attr:`_woken` after setting
        :attr:`special_call`; the controller's ``due`` flag is set before this is called,
        so a wake before it is seen by its :attr:`before_call`)."""
        self._woken = True
        self.special_call = 0
        self.quiet_until = 0

    def stop_due(self) -> None:
        """A stop was asked (any thread): the next call takes the wrapper's full path."""
        self.quiet_until = 0

    def special(self, function: Any, original: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        """A call of a step function at or after :attr:`special_call`: a twin may run it.

        From :attr:`norm_call` on, a round of norm twins: every step function runs its
        norm twin once (a GAN may train its two models in two ``tf.function``s); the
        round also ends when a function of the round is called again. The next round
        comes :data:`NORM_EVERY` loop steps after this one began, once
        :data:`NORM_MIN_GAP_S` has passed for each twin's call of the last round (the
        twins' calls, not the rounds, are capped at 10 a second); else it is looked at
        again about when that gap will have passed, at the calls' pace so far, and
        NORM_EVERY calls on at the soonest; when a round ends, the next is planned for
        about when its gap will have passed, at the pace between the last two rounds
        (one long quiet stretch between rounds, not a short one and a long one). The
        inspector's sample comes first (its recording twin writes the norm too).
        """
        self._woken = False
        self.before_call()
        fid = id(function)
        call = self.calls + 1
        if call >= self.norm_call and self._norm_opened is None:
            now = self.clock()
            elapsed = now - self._norm_time
            # per twin call of the last round (its set is kept until the next opens):
            # a GAN's round is two twins' calls
            gap = NORM_MIN_GAP_S * max(1, len(self._norm_done))
            if elapsed >= gap:
                if elapsed < math.inf:  # the calls' pace between the last two rounds
                    self._pace = elapsed / max(1, call - self._norm_time_call)
                self._norm_time = now
                self._norm_time_call = call
                self._norm_due = self.step_fns - self.every_step
                self._norm_done = set()
                self._norm_opened = call
            else:  # fast steps: not yet (the twin's calls stay within ~0.3% of the time)
                # looked at again about when the gap has passed, at the calls' pace so far
                per_call = elapsed / max(1, call - self._norm_time_call)
                wait = gap - elapsed
                later = math.ceil(wait / per_call) if per_call > 0 else NORM_EVERY
                self.norm_call = call + min(max(NORM_EVERY, later), 100 * NORM_EVERY)
        measured = True
        if call >= self.sample_call:
            result = self.sampled_call(function, original, args, kwargs)
        elif fid in self._norm_due:
            result = self._norm_twin_call(function, original, args, kwargs)
        else:
            measured = False
            if fid in self._norm_done:
                self._norm_due = set()  # called again: the round is over
            result = original(function, *args, **kwargs)
        if self._norm_opened is not None:
            if measured:
                self._norm_due.discard(fid)
                self._norm_done.add(fid)
            if not self._norm_due:
                calls_per_step = max(1, len(self._norm_done))
                self.norm_call = self._norm_opened + NORM_EVERY * calls_per_step
                self._norm_opened = None
                if self._pace > 0:  # fast steps: about when the next gap will have passed
                    wait = NORM_MIN_GAP_S * calls_per_step - (self.clock() - self._norm_time)
                    later = min(math.ceil(wait / self._pace), 100 * NORM_EVERY)
                    self.norm_call = max(self.norm_call, call + later)
        later = call + 1 if self._norm_opened is not None else self.norm_call
        self.special_call = min(self.sample_call, later)
        if self._woken:  # woken by another thread meanwhile: the next call is special too
            self.special_call = 0
        return result

    def _norm_twin_call(
        self, function: Any, original: Callable[..., Any], args: Any, kwargs: Any
    ) -> Any:
        """Run this step with the function's norm twin (made at its first use)."""
        fid = id(function)
        if fid not in self._norm_twins:
            twin = None
            try:
                # A stateful random op found once the whole graph exists (after the step,
                # or in an enclosing function): no twin, no norm, the same draws.
                if not any(
                    draws_stateful_random(c.graph) for c in function._list_all_concrete_functions()
                ):
                    twin = function._clone(None)  # same Python function, traced again
            except Exception as exc:  # noqa: BLE001
                self.monitor.report_error("gradient norm (tf.function twin)", exc)
            self._norm_twins[fid] = twin
        twin = self._norm_twins[fid]
        if twin is None:
            return original(function, *args, **kwargs)
        self.norming = True
        try:
            return original(twin, *args, **kwargs)
        finally:
            self.norming = False

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
            return original(function, *args, **kwargs)
        if fid in self._round:
            self._finish_sample()
            return original(function, *args, **kwargs)
        twin = self._twins.get(fid)
        if twin is None:
            try:
                if any(
                    draws_stateful_random(c.graph) for c in function._list_all_concrete_functions()
                ):
                    # A twin has its own copy of the op, whose draws restart: the script
                    # would compute something else. No graph-loop samples in this run.
                    self._twin_failed = True
                    self.sample_call = NEVER
                    self.monitor.note(
                        "Inspector: this loop's gradients and weights are not sampled: its "
                        "step function draws from a stateful random op (e.g. tf.random.normal), "
                        "and a recording twin would replay those draws, so your script would "
                        "compute something else (a tf.random.Generator or stateless random ops "
                        "keep the samples)."
                    )
                    return original(function, *args, **kwargs)
                twin = function._clone(None)  # same Python function, traced again
            except Exception as exc:  # noqa: BLE001
                self._twin_failed = True
                self.monitor.report_error("inspector: gradients (tf.function twin)", exc)
                return original(function, *args, **kwargs)
            self._twins[fid] = twin
        started = time.perf_counter()
        self.recording = True
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
        self._norm_twins.clear()

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


def draws_stateful_random(graph: Any) -> bool:
    """Whether ``graph``, a function it calls or a graph it is traced in has a stateful random op.

    Args:
        graph: a ``FuncGraph`` (while tracing: the ops made so far).
    """
    seen: set[str] = set()
    while graph is not None:
        for op in graph.get_operations():
            if op.type in STATEFUL_RANDOM or _calls_random(graph, op.node_def, seen):
                return True
        graph = getattr(graph, "outer_graph", None)
    return False


def _calls_random(graph: Any, node: Any, seen: set[str]) -> bool:
    """Whether a node's function attributes (a call, a loop's body...) name a random function.

    A function that cannot be looked up counts as random: no twin is the safe side.
    """
    for attr in node.attr.values():
        names = [attr.func.name] if attr.HasField("func") else [f.name for f in attr.list.func]
        for name in names:
            if not name or name in seen:
                continue
            seen.add(name)
            found = graph._get_function(name)
            if found is None:
                return True
            definition = found.definition
            for inner in definition.node_def:
                if inner.op in STATEFUL_RANDOM or _calls_random(graph, inner, seen):
                    return True
    return False
