"""The inspector's views for custom training loops: model tree, weights and gradients.

:class:`LoopInspector` is used by :class:`tfstudio.engine.loops.LoopInterceptor`
(``engine/loops/``).
It samples a loop's steps on the inspector's cadence (``Cadence``: the run's
``inspector_budget`` or a fixed ``sample_every``) and emits the events the
inspector's views draw, exactly as for a ``fit``: ``ModelTree`` when the loop
is announced, ``WeightStats`` and ``GradientStats`` (one of each per sampled
step, covering every series of the loop, so a GAN's two models share a step).

Eager loops: the gradients are in hand when the step's update happens; a
sampled step summarises them (and the variables after the update) right there.
Unsampled steps cost one integer comparison.

``tf.function`` loops: the gradients exist only inside the graph. Like the fit
inspector's copies path (``probes/gradients.py``), the step function's *twin*
(``engine/loops/sampling.py``: the same Python function, traced again while recording
is on) adds ops that write each gradient's norm, min, max and histogram into
device-side ``tf.Variable`` buffers. A sampled step calls the
twin instead of the user's function (once); unsampled steps run the user's own
graph, with nothing added. Costs: one extra trace at the first sample, and the
summaries on sampled steps. (A ``tf.cond`` on a flag inside the one function was
measured for ``fit``: its untaken branch cost ~25% of a small MLP's step.)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from tfstudio.core.events import (
    GradientStats,
    GradientVariable,
    InspectorStatus,
    ModelNode,
    ModelTree,
    VariableInfo,
    VariableStats,
    WeightStats,
)
from tfstudio.core.message_size import LargestMessage
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.probes.cadence import Cadence

FIRST_SAMPLE = 2  # a loop's first sampled step: by then a GAN's second series has joined
# Why the layer outputs and forward walk views stay empty for a custom loop (its status says)
LOOP_OUTPUTS_OFF = (
    "Layer outputs are not sampled in a custom training loop: tfstudio never reads the "
    "loop's data, so it has no batch to probe the model with. Its weights and gradients "
    "are sampled (Weights and Gradients views)."
)


class _Variables:
    """What ``WeightProbe`` needs of a model: its trainable variables."""

    def __init__(self, variables: list[Any]) -> None:
        self.trainable_variables = variables


class _Sample:
    """An eager sampled step being collected, one series after the other."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.series: list[Any] = []
        self.grads: list[GradientVariable] = []
        self.cost = 0.0


class LoopInspector:
    """Samples the loops of one run for the inspector's views.

    Args:
        monitor: the run (channel, options, error reporting).
        probing: a context manager factory; while it is entered, the interceptor
            ignores ``tf.function`` calls (the probes' own functions are no steps).
    """

    # Seconds, for the budget's schedule (a loop's elapsed time and its samples' cost).
    # A benchmark interleaving monitored steps with bare ones gives it a clock of the
    # loop's own time, as ``Inspector.clock`` for fits (a callable object, not a function).
    clock: Callable[[], float] = time.perf_counter

    def __init__(self, monitor: RunMonitor, probing: Callable[[], Any]) -> None:
        self.monitor = monitor
        self.probing = probing
        self._sizes = LargestMessage()
        self.deferred: tuple[Any, _Sample] | None = None  # eager: emitted at the next gradient
        self._failed: set[str] = set()

    # -- model tree ----------------------------------------------------
    def tree_of(self, owner: Any, name: str, variables: list[Any]) -> tuple[ModelNode, str] | None:
        """The tree node and summary text of a series' model or module (training thread)."""
        try:
            from tfstudio.engine.probes.model import model_summary_text, model_tree

            if _is_model_of(owner, variables):
                return model_tree(owner), model_summary_text(owner)
            return _module_node(owner, name, variables)
        except Exception as exc:  # noqa: BLE001
            self._error("inspector: model tree (custom loop)", exc)
            return None

    def announce(self, loop: Any) -> None:
        """Emit the loop's model tree (one root; a GAN's models are its children)."""
        trees = [s.tree for s in loop.series if s.tree is not None]
        if not trees:
            return
        if len(trees) == 1:
            root, summary = trees[0]
        else:
            nodes = tuple(t[0] for t in trees)
            root = ModelNode(
                name=" + ".join(n.name for n in nodes),
                path="",
                class_name="custom loop",
                output_shape="",
                dtype="",
                trainable_params=sum(n.trainable_params for n in nodes),
                non_trainable_params=sum(n.non_trainable_params for n in nodes),
                variables=(),
                children=nodes,
            )
            summary = "\n\n".join(t[1] for t in trees)
        self._emit(ModelTree(loop.fit_index, root, summary))

    # -- eager steps ---------------------------------------------------
    def eager_step(self, loop: Any, series: Any, pairs: list[tuple[Any, Any]]) -> None:
        """A series' eager step happened (after its update): sample it if it is due."""
        j = series.written()
        sample = loop.sampling.sample
        if sample is not None and series is loop.series[0] and j > sample.step:
            self.flush(loop)  # a series of the sampled step never came: report what came
            sample = None
        if j < loop.sampling.sample_at:
            return
        if self.deferred is not None and self.deferred[0] is loop:
            return  # the previous sample is not out yet (its weights are read first)
        if sample is None:
            sample = loop.sampling.sample = _Sample(j)
        if j != sample.step or any(s is series for s in sample.series):
            return
        started = self.clock()
        sample.series.append(series)
        try:
            sample.grads.extend(_eager_gradients(pairs))
        except Exception as exc:  # noqa: BLE001
            self._error("inspector: gradients (custom loop)", exc)
        sample.cost += self.clock() - started
        if len(sample.series) >= len(loop.series):
            self.flush(loop)

    def flush(self, loop: Any) -> None:
        """The eager sample of ``loop`` is complete: emit it at the next gradient (:meth:`settle`).

        An ``assign_sub`` loop updates its variables one after the other and its step
        is found at the first: the weights are read when the next step's gradient
        comes (or the loop ends), after every update of the sampled step.
        """
        sample, loop.sampling.sample = loop.sampling.sample, None
        if sample is None:
            return
        self.settle()
        self.deferred = (loop, sample)

    def settle(self) -> None:
        """Emit the completed eager sample, if one waits (the weights are read now)."""
        deferred, self.deferred = self.deferred, None
        if deferred is not None:
            loop, sample = deferred
            self._emit_sample(loop, sample.step, sample.grads, sample.cost)

    # -- graph steps ---------------------------------------------------
    def record_graph(self, series: Any, pairs: list[tuple[Any, Any]]) -> None:
        """At trace time of the recording twin: write the gradients' summaries on the device."""
        import numpy as np
        import tensorflow as tf

        from tfstudio.engine.probes.values import own_variable
        from tfstudio.engine.probes.weights import BINS, summarize

        pairs = [(v, g) for v, g in pairs if g is not None]
        if not pairs:
            return
        if series.grads is None:
            n = len(series.variables)
            series.grads = (
                own_variable(np.zeros([n, 3], np.float32)),
                own_variable(np.zeros([n, BINS], np.int32)),
                own_variable(np.zeros([n], np.float32)),
            )
        index = {id(v): i for i, v in enumerate(series.variables)}
        stats_buf, hists_buf, seen_buf = series.grads
        rows, stats, hists = [], [], []
        for v, g in pairs:
            i = index.get(id(v))
            if i is None:
                continue
            if isinstance(g, tf.IndexedSlices):
                g = tf.convert_to_tensor(g)
            s, h = summarize(g, BINS)
            rows.append([i])
            stats.append(tf.stack([s[4], s[2], s[3]]))
            hists.append(h)
        if not rows:
            return
        indices = tf.constant(rows, tf.int32)
        stats_buf.scatter_nd_update(indices, tf.stack(stats))
        hists_buf.scatter_nd_update(indices, tf.stack(hists))
        seen_buf.scatter_nd_update(indices, tf.ones([len(rows)]))

    def graph_sample(self, loops: list[Any], cost: float) -> None:
        """After the twin ran a step: read what it recorded, per loop, and emit it."""
        for loop in loops:
            grads: list[GradientVariable] = []
            started = self.clock()
            found = False
            for s in loop.series:
                if s.grads is None:
                    continue
                try:
                    grads.extend(_read_graph(s))
                    found = True
                except Exception as exc:  # noqa: BLE001
                    self._error("inspector: gradients (custom loop)", exc)
            if not found:
                continue
            step = loop.series[0].snapshot()
            self._emit_sample(loop, step, grads, cost + self.clock() - started)

    # -- both ------------------------------------------------------------
    def _emit_sample(
        self, loop: Any, step: int, grads: list[GradientVariable], cost: float
    ) -> None:
        started = self.clock()
        weights = self._weights(loop)
        global_step = loop.start_step + step
        if weights is not None:
            self._emit(WeightStats(loop.fit_index, global_step, weights))
        if grads:
            total = math.sqrt(sum(g.norm * g.norm for g in grads))
            self._emit(GradientStats(loop.fit_index, global_step, total, tuple(grads)))
        now = self.clock()
        cost += now - started
        cadence = loop.sampling.cadence
        gap = schedule(loop, step, cost, now)
        self._plan_weight_trace(loop, now)
        self._emit(
            InspectorStatus(
                loop.fit_index,
                global_step,
                cadence.mode,
                gap,
                cadence.budget,
                cadence.overhead(now - loop.sampling.t0 + loop.sampling.first_cost),
                cost * 1000.0,
                self.largest_message,
                outputs_off=LOOP_OUTPUTS_OFF,
                capped=cadence.capped,
            )
        )

    def _weights(self, loop: Any) -> tuple[VariableStats, ...] | None:
        """The loop's weights summarised: on the host (numpy, no trace) until the budget
        has paid for tracing the device function (see :meth:`_plan_weight_trace`)."""
        variables = [v for s in loop.series for v in s.variables]
        if not variables:
            return None
        try:
            from tfstudio.engine.probes.weights import WeightProbe

            own = loop.sampling
            if own.weights is None:
                own.weights = WeightProbe(_Variables(variables))
            started = self.clock()
            with self.probing():
                event = own.weights.sample(loop.fit_index, 0, traced=own.trace_weights)
            if not own.trace_weights:
                own.host_weights_s = self.clock() - started
        except Exception as exc:  # noqa: BLE001
            self._error("inspector: weights (custom loop)", exc)
            return None
        return event.variables if event is not None else None

    def _plan_weight_trace(self, loop: Any, now: float) -> None:
        """Trace the weights' device function once it pays, as a fit's inspector does.

        Tracing costs ~50 ms a variable (a 6-variable MLP: ~0.3 s, a whole short run's
        budget), a host summary of a small model well under a millisecond. So the host
        summary stays while it is cheap, and a model whose host summary is not is traced
        once the budget's credit (its share of the training time so far, less what the
        inspector spent) covers the estimate; a fixed cadence traces at once.
        """
        from tfstudio.engine.probes.inspector import weight_trace_estimate

        own = loop.sampling
        probe, cadence = own.weights, own.cadence
        if own.trace_weights or probe is None or cadence is None:
            return
        if cadence.mode == "fixed":
            own.trace_weights = True
            return
        estimate = weight_trace_estimate(own.host_weights_s, len(probe.variables))
        if estimate is not None:
            train = now - own.t0 + own.first_cost - cadence.probe_seconds
            own.trace_weights = cadence.credit(train) >= estimate

    @property
    def largest_message(self) -> int:
        """Bytes of the largest event sent so far (pickled; see ``core/message_size.py``)."""
        return self._sizes.largest

    def _emit(self, event: object) -> None:
        self._sizes.note(event)
        self.monitor.channel.emit(event)

    def _error(self, where: str, exc: BaseException) -> None:
        if where not in self._failed:
            self._failed.add(where)
            self.monitor.report_error(where, exc)


class LoopSampling:
    """A loop's sampling state: its cadence, the next sampled step, the inspector's probes."""

    def __init__(self, cadence: Cadence | None = None) -> None:
        self.cadence = cadence
        self.sample_at = FIRST_SAMPLE  # the loop's next sampled step (1-based)
        self.sample: _Sample | None = None  # eager: the sampled step being collected
        self.weights: Any = None  # its WeightProbe, made at the first sample
        self.trace_weights = False  # summarise the weights on the device (see _weights)
        self.host_weights_s = 0.0  # what the last host summary of the weights took
        self.t0 = 0.0  # the cadence's clock: when the first sample ended
        self.step0: int | None = None  # the step of the first sample
        self.first_cost = 0.0  # what the first sample cost (traces included)


def new_sampling(monitor: RunMonitor) -> LoopSampling:
    """A loop's sampling state, on the cadence the run's options give."""
    opts = monitor.options
    return LoopSampling(Cadence(opts.inspector_budget, opts.sample_every))


def schedule(loop: Any, step: int, cost: float, now: float) -> int:
    """After a sample of ``loop`` at its ``step`` that cost ``cost`` s: the gap to the next
    (``loop.sampling.sample_at``), on its cadence.

    The step time is measured from the end of the first sample on: before it, the loop's
    time holds its own trace (and the first sample traces the twin and the weight probe),
    which would make steps look slow and samples too frequent. The first sample's cost
    still counts in the overhead.
    """
    own = loop.sampling
    if own.step0 is None:
        gap = own.cadence.next_gap(cost, 1, cost + 1.0)  # the first sample: FIRST_GAP
        own.t0, own.step0, own.first_cost = now, step, cost
    else:
        elapsed = now - own.t0 + own.first_cost
        gap = own.cadence.next_gap(cost, max(step - own.step0, 1), elapsed)
    own.sample_at = step + gap
    return gap


def host_float(tf: Any, value: Any) -> bool:
    """Whether an eager tensor is float32/64 in host memory: numpy reads it in place."""
    return value.dtype in (tf.float32, tf.float64) and value.device.endswith("CPU:0")


def _eager_gradients(pairs: list[tuple[Any, Any]]) -> list[GradientVariable]:
    """The sampled eager step's gradients summarised: float32/64 ones in host memory by
    numpy (no eager ops: a dozen of them a gradient, ~1 ms, more at their first run),
    others (on a GPU, half precision) on their device."""
    import tensorflow as tf

    from tfstudio.engine.probes.model import variable_path
    from tfstudio.engine.probes.weights import BINS, summarize, summarize_host

    out = []
    for v, g in pairs:
        if g is None:
            continue
        if isinstance(g, tf.IndexedSlices):
            g = tf.convert_to_tensor(g)
        if host_float(tf, g):
            s, h = summarize_host(g.numpy(), BINS)
        else:
            s, h = summarize(g, BINS)
            s, h = s.numpy(), h.numpy()
        out.append(
            GradientVariable(
                variable_path(v),
                float(s[4]),
                float(s[2]),
                float(s[3]),
                tuple(int(c) for c in h),
            )
        )
    return out


def _read_graph(series: Any) -> list[GradientVariable]:
    import numpy as np
    import tensorflow as tf

    from tfstudio.engine.probes.model import variable_path

    stats_buf, hists_buf, seen_buf = series.grads
    with tf.init_scope():
        seen = seen_buf.numpy()
        if not seen.any():
            return []
        stats, hists = stats_buf.numpy(), hists_buf.numpy()
        seen_buf.assign(tf.zeros_like(seen_buf))
    out = []
    for i in np.flatnonzero(seen):
        norm, lo, hi = (float(x) for x in stats[i])
        path = variable_path(series.variables[i])
        out.append(GradientVariable(path, norm, lo, hi, tuple(int(c) for c in hists[i])))
    return out


def _is_model_of(owner: Any, variables: list[Any]) -> bool:
    """Whether ``owner`` is a Keras model or layer whose weights hold all of ``variables``.

    (A Keras model may hold raw ``tf.Variable`` attributes its weights do not list.)
    """
    if owner is None or not (hasattr(owner, "layers") and hasattr(owner, "weights")):
        return False
    weights = {id(w) for w in owner.weights}
    return all(id(v) in weights for v in variables)


def _module_node(owner: Any, name: str, variables: list[Any]) -> tuple[ModelNode, str]:
    """A tree node for a ``tf.Module`` (or bare variables): its variables, no layers."""
    from tfstudio.engine.probes.model import variable_path

    infos = tuple(
        VariableInfo(
            name=str(getattr(v, "name", "?")),
            path=variable_path(v),
            shape=tuple(int(d) for d in v.shape),
            dtype=str(getattr(getattr(v, "dtype", None), "name", "?")),
            trainable=bool(getattr(v, "trainable", True)),
        )
        for v in variables
    )
    size = sum(math.prod(i.shape) for i in infos)
    node = ModelNode(
        name=name,
        path=name,
        class_name=type(owner).__name__ if owner is not None else "variables",
        output_shape="?",
        dtype=infos[0].dtype if infos else "?",
        trainable_params=size,
        non_trainable_params=0,
        variables=infos,
        children=(),
    )
    lines = [f"{node.class_name} {name!r}: {size} trainable parameters"]
    lines += [f"  {i.path}  shape={i.shape}  dtype={i.dtype}" for i in infos]
    return node, "\n".join(lines)
