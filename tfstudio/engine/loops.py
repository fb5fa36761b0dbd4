"""Custom training loops: ``GradientTape`` + optimizer / ``assign_sub`` steps, found with no edits.

While a run lasts, :class:`LoopInterceptor` wraps ``tf.GradientTape.gradient``,
the Keras optimizer's ``apply`` (``apply_gradients`` calls it) and
``assign_sub``/``assign_add`` of TensorFlow's resource variables. A training
step is a tape gradient whose sources are variables followed by an update of
those variables; a gradient of an input (saliency maps), or code that only
evaluates, updates nothing and is no step.

Steps are grouped into *series* keyed by the variables they update (a GAN's
discriminator and generator are two series) and series into *loops*: a series
that appears before its loop's first series has done two steps joins that loop,
a later one starts the next loop. Each loop is a segment of the run, announced
with ``FitStarted(kind="loop")``.

Eager steps carry their loss and global gradient norm at once. Inside a
``tf.function`` they exist only when the graph runs: the wrapper, at trace time,
adds a write of the row ``(loss, sum of l2_loss(grad))`` into a device-side ring
buffer (one ``tf.Variable[RING, 1 + parts]`` per series, made with ``tf.init_scope`` so
retracing reuses it) and a counter; a background thread reads the buffers every
200 ms. A step is reported once the next step of the loop's first series exists
(so a GAN's two losses share one event), at once for a loop of one series once it
is announced, and at the end of the loop.

The inspector's views (model tree, weight and gradient statistics) come from
``engine/loop_inspect.py``; what checkpoints hold from ``engine/loop_state.py``
(the controls get it as their "model").
"""

from __future__ import annotations

import math
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import numpy as np

from tfstudio.core.events import FitEnded, FitStarted, ModelSummary, StepEnded
from tfstudio.engine.loop_inspect import FIRST_SAMPLE, LoopInspector, new_cadence
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.script import RunStopped

RING = 16384  # steps a graph series' buffer holds between two reads (80,000 steps/s)
# Seconds between reads of the graph buffers: 5 plot updates a second. Each read costs
# a thread wake and two eager reads (~0.5 ms of CPU on a busy 2-core VM): every 50 ms
# that was ~1% of a 1 ms step's time.
READ_EVERY = 0.2
MAX_PARTS = 16  # columns of gradient norms per row (more gradients are added in groups)
NEVER = 1 << 62
_NO_RUNNING: dict[str, float] = {}  # StepEnded.running of a loop step (shared, never mutated)
_MISSING = object()


def _is_variable(x: Any) -> bool:
    return hasattr(x, "assign_sub") and hasattr(x, "trainable")


def _flat(x: Any) -> list[Any]:
    if isinstance(x, dict):
        out: list[Any] = []
        for v in x.values():
            out.extend(_flat(v))
        return out
    if isinstance(x, list | tuple):
        out = []
        for v in x:
            out.extend(_flat(v))
        return out
    return [x]


class _Series:
    """The steps that update one set of variables.

    Losses and global gradient norms not yet reported are kept from step ``_base``
    on (eager: appended as the steps happen; graph: read from the device ring
    buffer); reported ones are dropped.
    """

    def __init__(self, key: frozenset[int], name: str, variables: list[Any]) -> None:
        self.key = key
        self.name = name
        self.variables = variables
        self.owner: Any = None  # the model or module these variables belong to
        self.optimizer: Any = None  # the Keras optimizer that updates them (if any)
        self.loop: _Loop | None = None
        self.loss_key = "loss"
        self.norm_key = "gradient norm"
        self.graph = False
        # graph: tf.Variable[RING, 1 + parts] per step: the loss, then l2_loss of each
        # gradient (or of groups of them, at most MAX_PARTS); the reader sums them
        self.buffer: Any = None
        self.counter: Any = None  # graph: tf.Variable int64, steps written
        self.grads: Any = None  # graph: the inspector's device buffers (loop_inspect)
        self.tree: Any = None  # the inspector's (ModelNode, summary text) of the owner
        self._count = 0  # steps seen so far
        self._losses: list[float] = []  # losses of steps _base.._count-1
        self._norms: list[float] = []  # their global gradient norms
        self._extra: list[dict[str, float]] = []  # eager: values of tiny variables (W, b)
        self._base = 0
        self._tf: Any = None

    def make_buffer(self, tf: Any, parts: int) -> None:
        """Create the device-side ring buffer (outside any traced function).

        Args:
            parts: the columns after the loss (kept by a retrace that has other gradients).
        """
        self._tf = tf
        if self.buffer is None:
            with tf.init_scope():
                self.buffer = tf.Variable(tf.zeros([RING, 1 + parts], tf.float32), trainable=False)
                self.counter = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.graph = True

    def add(self, loss: float, norm: float, extra: dict[str, float] | None) -> None:
        """An eager step's loss, global gradient norm (and tiny variables' values)."""
        self._losses.append(loss)
        self._norms.append(norm)
        if extra:
            self._extra.extend([{}] * (len(self._losses) - 1 - len(self._extra)))
            self._extra.append(extra)
        self._count += 1

    def step_count(self) -> int:
        """Steps seen so far (eager; graph: as of the last read)."""
        return self._count

    def snapshot(self) -> int:
        """How many steps exist now (graph: read from the device buffer)."""
        if not self.graph:
            return self._count
        tf = self._tf
        if tf.executing_eagerly():  # the reader thread: raw reads (~20 us, .numpy() ~110 us)
            count = int(_read(self.counter.handle, tf.int64))
            if count <= self._count:
                return count
            data = _read(self.buffer.handle, tf.float32)
        else:  # while tracing (a new series asks how far the loop is)
            with tf.init_scope():
                count = int(self.counter.numpy())
                if count <= self._count:
                    return count
                data = self.buffer.numpy()
        lost = max(0, count - self._count - RING)  # overwritten before this read
        if lost:
            self._losses.extend([math.nan] * lost)
            self._norms.extend([math.nan] * lost)
        first = self._count + lost
        if first < count:
            lo, hi = first % RING, count % RING or RING
            rows = data[lo:hi] if lo < hi else np.concatenate((data[lo:], data[:hi]))
            self._losses.extend(rows[:, 0].tolist())
            # columns 1.. hold l2_loss(g) = sum(g**2) / 2: the global norm is sqrt(2 sum)
            squares = rows[:, 1:].astype(np.float64).sum(axis=1)
            self._norms.extend(np.sqrt(2.0 * squares).tolist())
        self._count = count
        return count

    def trim(self, emitted: int) -> None:
        """Forget the values of steps already reported."""
        if emitted > self._base:
            drop = emitted - self._base
            del self._losses[:drop]
            del self._norms[:drop]
            del self._extra[:drop]
            self._base = emitted

    def values(self, first: int, last: int) -> tuple[list[float], list[float]]:
        """Losses and global gradient norms of steps ``first..last-1`` (NaN where unknown)."""
        i, k = first - self._base, last - self._base
        losses, norms = self._losses[i:k], self._norms[i:k]
        missing = (last - first) - len(losses)
        if missing > 0:
            losses = losses + [math.nan] * missing
            norms = norms + [math.nan] * missing
        return losses, norms

    def extra(self, j: int) -> dict[str, float]:
        """Values of the tiny variables at step ``j`` (empty when not tracked)."""
        i = j - self._base
        return self._extra[i] if 0 <= i < len(self._extra) else {}


class _Loop:
    """One discovered custom loop: a segment of the run."""

    def __init__(self, number: int, fit_index: int, cadence: Any = None) -> None:
        self.number = number
        self.fit_index = fit_index
        self.series: list[_Series] = []
        self.emitted = 0
        self.announced = False
        self.ended = False
        self.start_step = 0
        self.read_at: float | None = None  # run time of the last read of its steps
        # the inspector's sampling (engine/loop_inspect.py)
        self.cadence = cadence
        self.sample_at = FIRST_SAMPLE  # the loop's next sampled step (1-based)
        self.sample: Any = None  # eager: the sampled step being collected
        self.weights: Any = None  # its WeightProbe, made at the first sample
        self.t0 = 0.0  # the cadence's clock: when the first sample ended
        self.step0: int | None = None  # the step of the first sample
        self.first_cost = 0.0  # what the first sample cost (traces included)


class LoopInterceptor:
    """Observes custom training loops for one run; a context manager.

    Args:
        monitor: the run's shared state; each loop becomes a segment.
    """

    def __init__(self, monitor: RunMonitor) -> None:
        self.monitor = monitor
        self._tf: Any = None
        self._saved: list[tuple[type, str, Any]] = []
        self._hook: Any = None
        self._pending: list[tuple[Any, ...]] = []
        self._series: dict[frozenset[int], _Series] = {}
        self._loops: list[_Loop] = []
        self._lock = threading.RLock()
        self._updating = 0
        self._reader: threading.Thread | None = None
        self._stop_reader = threading.Event()
        self._control_started = False
        self._optimizer: Any = None
        self.graph_active = False
        opts = monitor.options
        self._watched: dict[int, tuple[str, Any]] = {}  # variable id -> monitor.watch's name
        self._explicit: _Loop | None = None  # the segment monitor.log reports into
        self._per_step = bool(
            opts.stop_at_step is not None or opts.checkpoint_every or opts.checkpoint_minutes
        )
        self._state: Any = None  # what checkpoints hold (engine/loop_state.py)
        # the inspector (engine/loop_inspect.py): None when the run turned it off
        self._inspect: LoopInspector | None = (
            LoopInspector(monitor, self._probing_context) if opts.inspector else None
        )
        self._probing = 0  # >0 while the inspector's own tf.functions run
        self._tracing: int | None = None  # id of the tf.function being called (traced)
        self._step_fns: set[int] = set()  # ids of tf.functions whose graph holds a step
        self._twins: dict[int, Any] = {}  # their recording twins
        self._recording = False  # the twin is being traced: add the gradient summaries
        self._calls = 0  # calls of step functions
        self._sample_call = FIRST_SAMPLE  # the call that runs the twin
        self._round: set[int] = set()  # step functions whose twin ran for this sample
        self._round_cost = 0.0
        self._twin_failed = False

    # -- install / restore ---------------------------------------------
    def __enter__(self) -> LoopInterceptor:
        import tfstudio.monitor as explicit

        explicit._sink = self
        from tfstudio.engine.instrument import patch_on_import

        self._hook = patch_on_import(
            "tensorflow",
            "GradientTape",
            self._patch,
            self.monitor.report_error,
            "intercepting custom training loops",
        )
        return self

    def _replace(self, cls: type, name: str, make: Callable[[Any], Any]) -> None:
        saved = cls.__dict__.get(name, _MISSING)
        self._saved.append((cls, name, saved))
        setattr(cls, name, make(getattr(cls, name)))

    def _patch(self, tf: Any) -> None:
        from tensorflow.python.eager.polymorphic_function import polymorphic_function
        from tensorflow.python.ops import resource_variable_ops

        self._tf = tf
        self._replace(tf.GradientTape, "gradient", self._wrap_gradient)
        # ResourceVariable overrides BaseResourceVariable's methods: wrap both.
        for var_cls in (
            resource_variable_ops.ResourceVariable,
            resource_variable_ops.BaseResourceVariable,
        ):
            for name in ("assign_sub", "assign_add"):
                if name in var_cls.__dict__:
                    self._replace(var_cls, name, self._wrap_assign)
        self._replace(polymorphic_function.Function, "__call__", self._wrap_function_call)
        keras = sys.modules.get("keras")
        if keras is not None and hasattr(keras, "optimizers"):
            self._patch_keras(keras)
        else:
            self.monitor.on_keras_imported.append(lambda: self._patch_keras(sys.modules["keras"]))

    def _patch_keras(self, keras: Any) -> None:
        if self._tf is None:
            return
        from keras.src.backend.common.variables import Variable
        from keras.src.optimizers.base_optimizer import BaseOptimizer

        self._replace(BaseOptimizer, "apply", self._wrap_apply)
        # keras.Variable.assign_sub is assign(self - value): it never calls tf's assign_sub
        for name in ("assign_sub", "assign_add"):
            self._replace(Variable, name, self._wrap_assign)

    def __exit__(self, *exc: object) -> None:
        import tfstudio.monitor as explicit

        if explicit._sink is self:
            explicit._sink = None
        if self._hook is not None:
            self._hook.remove()
        for cls, name, saved in reversed(self._saved):
            if saved is _MISSING:
                try:
                    delattr(cls, name)
                except AttributeError:
                    pass
            else:
                setattr(cls, name, saved)
        self._saved = []
        self._stop_reader.set()
        if self._reader is not None:
            self._reader.join(timeout=2.0)
        try:
            self._end_loops()
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("custom loop end", exc)
        if self._control_started and self.monitor.control is not None:
            try:
                self.monitor.control.end()
            except Exception as exc:  # noqa: BLE001
                self.monitor.report_error("controls (custom loop end)", exc)
        self._twins.clear()
        self._tf = None

    @contextmanager
    def _probing_context(self) -> Iterator[None]:
        """While entered, tf.function calls are the inspector's own: no steps."""
        self._probing += 1
        try:
            yield
        finally:
            self._probing -= 1

    # -- the explicit API (tfstudio.monitor) -----------------------------
    def watch(self, obj: Any, name: str | None) -> None:
        """``monitor.watch``: loops training ``obj``'s variables are named after it."""
        try:
            label = name or str(getattr(obj, "name", "") or type(obj).__name__)
            for v in _variables_of(obj) or []:
                self._watched[id(v)] = (label, obj)
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("monitor.watch", exc)

    def log(self, step: int, scalars: dict[str, float]) -> None:
        """``monitor.log``: scalars at a step, in the current loop or a segment of their own."""
        mon = self.monitor
        with self._lock:
            current = self._loops[-1] if self._loops else None
            if current is not None and current.series and not current.ended:
                if not current.announced:
                    self._announce(current)
                fit_index, global_step = current.fit_index, mon.global_step
            else:
                loop = self._explicit
                if loop is None:
                    loop = _Loop(len(self._loops) + 1, mon.fits + len(self._loops))
                    self._loops.append(loop)
                    mon.loops = len(self._loops)
                    self._explicit = loop
                    loop.announced = True
                    loop.start_step = mon.global_step
                    summary = ModelSummary("monitor.log", "custom loop", (), 0, 0)
                    mon.channel.emit(
                        FitStarted(
                            loop.fit_index,
                            summary,
                            0,
                            0,
                            None,
                            1,
                            mon.global_step,
                            mon.now(),
                            kind="loop",
                            loop_index=loop.number,
                        )
                    )
                mon.global_step = max(mon.global_step + 1, loop.start_step + step)
                fit_index, global_step = loop.fit_index, mon.global_step
            mon.channel.emit(StepEnded(fit_index, global_step, 0, step, 1, scalars, {}, mon.now()))

    # -- wrappers ------------------------------------------------------
    def _wrap_gradient(self, original: Callable[..., Any]) -> Callable[..., Any]:
        interceptor = self
        monitor = self.monitor

        def gradient(tape: Any, target: Any, sources: Any, *args: Any, **kwargs: Any) -> Any:
            grads = original(tape, target, sources, *args, **kwargs)
            if monitor.in_fit or interceptor._updating:
                return grads
            if monitor.stop_requested.is_set() and interceptor._eager():
                raise RunStopped()
            try:
                interceptor._on_gradient(target, sources, grads)
            except Exception as exc:  # noqa: BLE001
                monitor.report_error("custom loop (gradient)", exc)
            return grads

        gradient.__wrapped__ = original  # type: ignore[attr-defined]
        return gradient

    def _wrap_apply(self, original: Callable[..., Any]) -> Callable[..., Any]:
        interceptor = self
        monitor = self.monitor

        def apply(optimizer: Any, grads: Any, trainable_variables: Any = None) -> Any:
            if monitor.in_fit or interceptor._updating:
                return original(optimizer, grads, trainable_variables)
            variables = list(trainable_variables) if trainable_variables is not None else []
            if not variables:
                variables = list(getattr(optimizer, "_trainable_variables", []) or [])
            interceptor._updating += 1
            try:
                result = original(optimizer, grads, trainable_variables)
            finally:
                interceptor._updating -= 1
            try:
                interceptor._optimizer = optimizer
                interceptor._on_update(variables, optimizer)
            except RunStopped:
                raise
            except Exception as exc:  # noqa: BLE001
                monitor.report_error("custom loop (optimizer)", exc)
            return result

        apply.__wrapped__ = original  # type: ignore[attr-defined]
        return apply

    def _wrap_assign(self, original: Callable[..., Any]) -> Callable[..., Any]:
        interceptor = self
        monitor = self.monitor

        def assign(variable: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(variable, *args, **kwargs)
            if interceptor._pending and not interceptor._updating and not monitor.in_fit:
                try:
                    interceptor._on_update([variable], None)
                except RunStopped:
                    raise
                except Exception as exc:  # noqa: BLE001
                    monitor.report_error("custom loop (assign)", exc)
            return result

        assign.__wrapped__ = original  # type: ignore[attr-defined]
        return assign

    def _wrap_function_call(self, original: Callable[..., Any]) -> Callable[..., Any]:
        interceptor = self
        monitor = self.monitor

        def __call__(function: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
            it = interceptor
            if it._probing or monitor.in_fit or not it._eager():
                return original(function, *args, **kwargs)  # probes, fit, nested calls
            fid = id(function)
            if it._calls + 1 >= it._sample_call and fid in it._step_fns:
                result = it._sampled_call(function, original, args, kwargs)
            else:
                it._tracing = fid  # a trace that finds a step marks this function
                result = original(function, *args, **kwargs)
            if it.graph_active:
                # A graph step ran: the step boundary for stop, pause and commands.
                if monitor.stop_requested.is_set():
                    raise RunStopped()
                if fid in it._step_fns:
                    it._calls += 1
                # The full step boundary only when it has work: a per-call control step
                # (learning-rate reads sync the device) cost ~5% of a small graph loop.
                if (
                    it._per_step
                    or not it._control_started
                    or not monitor.resume.is_set()
                    or monitor.channel.has_commands()
                ):
                    it._sync()
                    it._after_step(None)
            return result

        __call__.__wrapped__ = original  # type: ignore[attr-defined]
        return __call__

    def _sampled_call(
        self, function: Any, original: Callable[..., Any], args: Any, kwargs: Any
    ) -> Any:
        """Run this step with the recording twin; emit the sample once every step function ran.

        A sample is a round: each step function (a GAN may train its two models in two
        ``tf.function``s) runs its twin once, then the sample is read and emitted. The
        round also ends when a function of the round is called again (a function of an
        earlier loop may never be called again).
        """
        fid = id(function)
        if self._inspect is None or self._twin_failed:
            self._sample_call = NEVER
            self._tracing = fid
            return original(function, *args, **kwargs)
        if fid in self._round:
            self._finish_sample()
            self._tracing = fid
            return original(function, *args, **kwargs)
        twin = self._twins.get(fid)
        if twin is None:
            try:
                twin = function._clone(None)  # same Python function, traced again
            except Exception as exc:  # noqa: BLE001
                self._twin_failed = True
                self.monitor.report_error("inspector: gradients (tf.function twin)", exc)
                self._tracing = fid
                return original(function, *args, **kwargs)
            self._twins[fid] = twin
        started = time.perf_counter()
        self._recording = True
        self._tracing = fid
        try:
            result = original(twin, *args, **kwargs)
        finally:
            self._recording = False
            self._round_cost += time.perf_counter() - started
        self._round.add(fid)
        if self._round >= self._step_fns:
            self._finish_sample()
        return result

    def _finish_sample(self) -> None:
        """Read what the round's twins recorded, emit it, schedule the next sample."""
        cost, self._round_cost = self._round_cost, 0.0
        calls_per_step = max(1, len(self._round))  # e.g. a GAN's two step functions
        self._round = set()
        assert self._inspect is not None
        try:
            started = time.perf_counter()
            with self._lock:
                loops = [
                    lp for lp in self._loops if not lp.ended and any(s.graph for s in lp.series)
                ]
                for loop in loops:
                    if not loop.announced:
                        self._drain(loop)
                        if not loop.announced:
                            self._announce(loop)
                self._inspect.graph_sample(loops, cost + time.perf_counter() - started)
                gaps = [lp.sample_at - lp.series[0].snapshot() for lp in loops if lp.series]
            gap = max(1, min(gaps) if gaps else 1)
            self._sample_call = self._calls + 1 + (gap - 1) * calls_per_step + 1
        except Exception as exc:  # noqa: BLE001
            self._sample_call = NEVER
            self.monitor.report_error("inspector: custom loop sample", exc)

    # -- step derivation -----------------------------------------------
    def _eager(self) -> bool:
        tf = self._tf
        return tf is not None and tf.executing_eagerly()

    def _on_gradient(self, target: Any, sources: Any, grads: Any) -> None:
        flat_sources = _flat(sources)
        variables = [s for s in flat_sources if _is_variable(s)]
        if not variables:
            return  # a gradient of inputs (saliency), not a training step
        key = frozenset(id(v) for v in variables)
        flat_grads = _flat(grads)
        pairs: list[tuple[Any, Any]] = []
        if len(flat_grads) == len(flat_sources):
            pairs = [
                (s, g)
                for g, s in zip(flat_grads, flat_sources, strict=True)
                if g is not None and _is_variable(s)
            ]
        small = None
        norm = math.nan
        if self._eager():
            if self._inspect is not None and self._inspect.deferred is not None:
                self._inspect.settle()  # the sampled step's updates are all done
            # the guide's W and b: the values this loss was computed with
            small = {name: _scalar(v) for name, v in _small_names(variables)}
            if pairs:
                norm = float(self._tf.linalg.global_norm([g for _, g in pairs]))
        # a Keras variable's assign_sub updates the tf.Variable it wraps: match both
        inner = [getattr(v, "_value", None) for v in variables]
        match = key | {id(i) for i in inner if i is not None and hasattr(i, "assign_sub")}
        self._pending = [p for p in self._pending if p[0] != key][-3:]
        self._pending.append((key, match, target, variables, small, norm, pairs))

    def _on_update(self, variables: list[Any], optimizer: Any) -> None:
        ids = {id(v) for v in variables}
        found = None
        for i in range(len(self._pending) - 1, -1, -1):
            if self._pending[i][1] & ids:
                found = self._pending.pop(i)
                break
        if found is None:
            return  # no tape step before this update (a counter, a metric)
        key, _, target, tracked, small, norm, pairs = found
        eager = self._eager()
        if eager and self.monitor.stop_requested.is_set():
            raise RunStopped()
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._new_series(key, tracked)
            if optimizer is not None and series.optimizer is None:
                series.optimizer = optimizer
                self._track(
                    optimizer.name if hasattr(optimizer, "name") else "optimizer", optimizer
                )
            loop = series.loop
        assert loop is not None
        tf = self._tf
        if eager:
            loss = _scalar(target)
            with self._lock:
                series.add(loss, norm, small)
                self._drain(loop)
            if self._inspect is not None:
                self._inspect.eager_step(loop, series, pairs)
            if series is loop.series[0]:
                self._after_step(loss)
        else:  # tracing a tf.function: record the loss on the device at run time
            if target is not None and target.dtype == tf.float32 and target.shape.rank == 0:
                value = target  # the usual scalar float32 loss: no op needed
            elif target is not None:
                value = tf.reduce_mean(tf.cast(target, tf.float32))
            else:
                value = tf.constant(math.nan, tf.float32)
            grads = [g.values if isinstance(g, tf.IndexedSlices) else g for _, g in pairs]
            # l2_loss(g) = sum(g**2) / 2 per gradient, one op each, each in its own column:
            # the reader sums them (bench/loop_write_cost.py: an add_n here cost 0.4-2% of
            # a 1 ms step more than the columns, within that bench's resolution)
            parts = [tf.nn.l2_loss(tf.cast(g, tf.float32)) for g in grads]
            series.make_buffer(tf, min(len(parts), MAX_PARTS) or 1)
            parts = _columns(tf, parts, int(series.buffer.shape[1]) - 1)
            if self._recording and self._inspect is not None:
                self._inspect.record_graph(series, pairs)
            # Values first, then the count: a reader that sees the count sees the values.
            # (a raw read: read_value() adds an Identity op to every step)
            index = tf.raw_ops.ReadVariableOp(resource=series.counter.handle, dtype=tf.int64)
            # One row at a scalar index (no reshapes): buffer[index % RING] = (loss, parts).
            written = tf.raw_ops.ResourceScatterUpdate(
                resource=series.buffer.handle,
                indices=index % RING,
                updates=tf.stack([value, *parts]),
            )
            with tf.control_dependencies([written]):
                series.counter.assign_add(1, read_value=False)
            if self._tracing is not None:
                self._step_fns.add(self._tracing)
            self.graph_active = True
            self._start_reader()

    def _new_series(self, key: frozenset[int], variables: list[Any]) -> _Series:
        watched = [self._watched[id(v)] for v in variables if id(v) in self._watched]
        if watched:
            name, owner = watched[0]
        else:
            name, owner = _owner(variables)
        series = _Series(key, name, variables)
        series.owner = owner
        series.tree = self._inspect.tree_of(owner, name, variables) if self._inspect else None
        self._series[key] = series
        if owner is not None:
            self._track(name, owner, variables)
        else:
            for v in variables:
                label = str(getattr(v, "name", "") or "variable").split(":")[0].split("/")[-1]
                self._track(label, v, [v])
        loop = self._loops[-1] if self._loops else None
        if loop is None or loop.ended or loop.announced or self._primary_count(loop) > 1:
            if loop is not None:
                self._end_loop(loop)
            mon = self.monitor
            cadence = new_cadence(mon) if self._inspect is not None else None
            loop = _Loop(len(self._loops) + 1, mon.fits + len(self._loops), cadence)
            mon.loops = len(self._loops) + 1
            self._loops.append(loop)
        loop.series.append(series)
        series.loop = loop
        return series

    def _track(self, name: str, obj: Any, variables: list[Any] = ()) -> None:
        """Add ``obj`` to what the run's checkpoints hold."""
        try:
            if self._state is None:
                from tfstudio.engine.loop_state import loop_state

                self._state = loop_state()
            self._state.track(name, obj, list(variables))
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("custom loop (checkpoint objects)", exc)

    def _primary_count(self, loop: _Loop) -> int:
        if not loop.series:
            return 0
        return loop.series[0].snapshot()

    def _begin_control(self) -> None:
        if self._control_started:
            return
        self._control_started = True
        from tfstudio.engine.control import TrainingController

        mon = self.monitor
        if mon.control is None:
            mon.control = TrainingController(mon)
        optimizer = self._optimizer
        for s in self._loops[-1].series if self._loops else ():
            if s.optimizer is not None:
                optimizer = s.optimizer
                break
        try:
            mon.control.begin(self._state, optimizer, mon.request_stop)
        except Exception as exc:  # noqa: BLE001
            mon.report_error("controls (custom loop)", exc)

    def _after_step(self, loss: float | None) -> None:
        if not self._control_started:
            self._begin_control()
        control = self.monitor.control
        if control is None:
            return
        try:
            control.after_step(loss)
        except RunStopped:
            raise
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("controls (custom loop step)", exc)
        if self.monitor.stop_requested.is_set():
            raise RunStopped()

    def _sync(self) -> None:
        """Report every graph step that ran (a device sync): the controls see the true step."""
        with self._lock:
            for loop in self._loops:
                if not loop.ended and any(s.graph for s in loop.series):
                    self._drain(loop)

    # -- events --------------------------------------------------------
    def _announce(self, loop: _Loop) -> None:
        mon = self.monitor
        loop.announced = True
        loop.start_step = mon.global_step
        multi = len(loop.series) > 1
        for s in loop.series:
            s.loss_key = f"loss ({s.name})" if multi else "loss"
            s.norm_key = f"gradient norm ({s.name})" if multi else "gradient norm"
        name = " + ".join(s.name for s in loop.series)
        params = sum(_size(v) for s in loop.series for v in s.variables)
        summary = ModelSummary(name, "custom loop", (), params, params)
        mon.channel.emit(
            FitStarted(
                fit_index=loop.fit_index,
                model=summary,
                epochs=0,
                initial_epoch=0,
                steps_per_epoch=None,
                steps_per_execution=1,
                global_step=mon.global_step,
                # a loop is announced once its second step exists (a GAN's second series
                # may join it until then): it began at its first read, after its first step
                time=mon.now() if loop.read_at is None else loop.read_at,
                kind="loop",
                loop_index=loop.number,
            )
        )
        if self._inspect is not None:
            self._inspect.announce(loop)

    def _drain(self, loop: _Loop, final: bool = False) -> None:
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
            self._announce(loop)  # dated at the loop's first read (when its first step was)
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
            columns.append((s.loss_key, s.norm_key, losses, norms, upto - first, s))
        extras = [s for s in series if s._extra]
        g0 = mon.global_step
        s0 = g0 - loop.start_step
        if len(columns) == 1 and not extras and columns[0][4] == limit - first:
            # The common case (one series, graph steps read in bulk): the least Python per
            # step, since the reader thread competes with training for the GIL.
            loss_key, norm_key, losses, norms, _, _ = columns[0]
            for k, (loss, norm) in enumerate(zip(losses, norms, strict=True), 1):
                values = {loss_key: loss, norm_key: norm} if norm == norm else {loss_key: loss}
                t = start + tick * k
                emit(StepEnded(fit_index, g0 + k, 0, s0 + k, 1, values, _NO_RUNNING, t))
            columns = []
        for k in range(0 if columns else limit - first, limit - first):
            values: dict[str, float] = {}
            for loss_key, norm_key, losses, norms, n, _ in columns:
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

    def _end_loop(self, loop: _Loop) -> None:
        if loop.ended:
            return
        self._drain(loop, final=True)
        if self._inspect is not None:
            self._inspect.flush(loop)
            self._inspect.settle()
        loop.ended = True
        if loop.announced:
            mon = self.monitor
            mon.channel.emit(
                FitEnded(loop.fit_index, mon.global_step, mon.stop_requested.is_set(), mon.now())
            )

    def _end_loops(self) -> None:
        with self._lock:
            for loop in self._loops:
                self._end_loop(loop)

    # -- the graph buffers' reader -------------------------------------
    def _start_reader(self) -> None:
        if self._reader is not None:
            return
        self._reader = threading.Thread(
            target=self._read_loop, name="tfstudio-loop-reader", daemon=True
        )
        self._reader.start()

    def _read_loop(self) -> None:
        while not self._stop_reader.wait(READ_EVERY):
            try:
                self._sync()
            except Exception as exc:  # noqa: BLE001
                self.monitor.report_error("custom loop (reader)", exc)


def _columns(tf: Any, parts: list[Any], n: int) -> list[Any]:
    """``parts`` (scalars whose sum is the squared norm / 2) as exactly ``n`` columns.

    No gradient at all: NaN (the step's norm is unknown). More parts than columns:
    groups of neighbours are added; fewer: zeros fill the rest.
    """
    if not parts:
        return [tf.constant(math.nan, tf.float32)] * n
    if len(parts) > n:
        size = -(-len(parts) // n)  # ceil: at most n groups
        groups = [parts[i : i + size] for i in range(0, len(parts), size)]
        parts = [g[0] if len(g) == 1 else tf.add_n(g) for g in groups]
    return parts + [tf.constant(0.0, tf.float32)] * (n - len(parts))


def _read(handle: Any, dtype: Any) -> np.ndarray:
    """A resource variable's value as numpy, with the least Python (the reader's hot path)."""
    from tensorflow.python.ops import gen_resource_variable_ops

    return gen_resource_variable_ops.read_variable_op(handle, dtype).numpy()


def _scalar(target: Any) -> float:
    if target is None:
        return float("nan")
    try:
        value = target.numpy() if hasattr(target, "numpy") else target
        import numpy as np

        arr = np.asarray(value, dtype=np.float64)
        return float(arr.mean()) if arr.size != 1 else float(arr.reshape(()))
    except Exception:  # noqa: BLE001 - a loss we cannot read
        return float("nan")


SMALL = 4  # series whose variables hold this many numbers at most are plotted as value lines


def _small_names(variables: list[Any]) -> list[tuple[str, Any]]:
    """``(name, variable)`` for scalar variables of a tiny model (the guide's W and b)."""
    if sum(_size(v) for v in variables) > SMALL or any(_size(v) != 1 for v in variables):
        return []
    out = []
    for v in variables:
        name = str(getattr(v, "name", "") or "").split(":")[0].split("/")[-1] or "variable"
        out.append((name, v))
    return out


def _size(variable: Any) -> int:
    n = 1
    for d in tuple(variable.shape):
        n *= int(d or 1)
    return n


_AUTO_NAME = re.compile(r"^(sequential|functional|model|module)(_\d+)?$")


def _owner(variables: list[Any]) -> tuple[str, Any]:
    """Name and object of the model or module whose variables these are (caller's frames)."""
    ids = {id(v) for v in variables}
    best: tuple[int, str, Any] | None = None
    frame = sys._getframe(1)
    seen: set[int] = set()
    depth = 0
    while frame is not None and depth < 40:
        for scope in (frame.f_locals, frame.f_globals):
            for binding, obj in list(scope.items()):
                if id(obj) in seen or isinstance(obj, type | ModuleType):
                    continue
                seen.add(id(obj))
                owned = _variables_of(obj)
                if owned is None:
                    continue
                owned_ids = {id(v) for v in owned}
                if not ids <= owned_ids:
                    continue
                name = str(getattr(obj, "name", "") or "")
                if not name or _AUTO_NAME.match(name) or name == _snake(type(obj).__name__):
                    name = binding if not binding.startswith("_") else (name or binding)
                if best is None or len(owned_ids) < best[0]:
                    best = (len(owned_ids), name, obj)
        frame = frame.f_back
        depth += 1
    if best is not None:
        return best[1], best[2]
    first = variables[0]
    path = str(getattr(first, "path", "") or getattr(first, "name", "") or "variables")
    return path.split("/")[0].split(":")[0], None


def _variables_of(obj: Any) -> list[Any] | None:
    try:
        if not (hasattr(obj, "trainable_variables") and hasattr(obj, "name")):
            return None
        owned = obj.trainable_variables
        if not isinstance(owned, list | tuple):
            return None  # e.g. autograph's Undefined, whose every attribute is itself
        return list(owned) if owned else None
    except Exception:  # noqa: BLE001 - properties of arbitrary objects
        return None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
