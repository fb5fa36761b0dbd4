"""The Keras metrics a custom loop's training step updates (``train_acc.update_state``).

A graph loop's metrics are the Keras metrics whose variables its step function's graph
captures, looked at once the call that traced it returns (a graph read mid-trace may still
grow); an evaluation step's metric is not (its graph has no gradient step). An eager loop's
are those that changed between its first two updates. Their values are sent with the newest
step as *running* values (a metric accumulates until the script resets it); a metric just
reset (all its variables zero) has no value and is skipped.
"""

from __future__ import annotations

import math
import sys
import time
import types
import weakref
from typing import Any

import numpy as np

from tfstudio.engine.loops.owners import is_user_file

MAX_METRICS = 16  # per loop: more are not plotted (and not read)
# A loop's metrics are read on the training thread between two steps, where no step is
# writing them and no reset is half done: a graph loop's after the step function's call
# that follows a beat of its reader (5 a second; a mean: two raw variable reads, another
# metric one traced call, ~0.1-0.2 ms), an eager loop's at most this often.
EAGER_READ_EVERY_S = 0.2


class LoopMetrics:
    """The training metrics of a run's loops (``report_error``: told of a failure, after which
    training goes on and the metrics are dropped)."""

    def __init__(self, report_error: Any) -> None:
        self._report_error = report_error
        # graph id -> (graph, loop, the metrics its trace could reach): to look at once
        # the trace is over (by the training thread, after the call that traced it)
        self.traced_graphs: dict[int, tuple[Any, Any, list[Any]]] = {}
        self._seen_graphs: weakref.WeakSet[Any] = weakref.WeakSet()  # looked at already
        # loop -> [(key, metric, reader)]: reader gives its value (None: nothing to show)
        self._metrics: dict[int, list[tuple[str, Any, Any]]] = {}
        # eager loops: loop -> (the metrics its first update could reach, their states)
        self._eager: dict[int, tuple[list[Any], list[list[bytes]]]] = {}
        self._eager_read: dict[int, float] = {}  # loop -> when its metrics were last read

    def traced(self, graph: Any, loop: Any) -> None:
        """While a step of ``loop`` is traced in ``graph``: note the graph and the Keras metrics
        the script's frames reach (``self.train_acc``), to match once the trace is over."""
        outer = function_graph(graph)
        if outer in self._seen_graphs:
            return
        self._seen_graphs.add(outer)
        try:
            candidates = _reachable_metrics(sys._getframe(1))
        except Exception as exc:  # noqa: BLE001
            self._report_error("custom loop (metrics)", exc)
            return
        if candidates:
            self.traced_graphs[id(outer)] = (outer, loop, candidates)

    def discover(self, tf: Any) -> None:
        """Find the metrics of the graphs traced since the last call (a trace is over)."""
        if not self.traced_graphs:
            return
        pending = list(self.traced_graphs.values())
        self.traced_graphs.clear()
        try:
            for graph, loop, metrics in pending:
                captured = {id(t) for t in graph.external_captures}
                found = self._metrics.setdefault(id(loop), [])
                known = {id(m) for _, m, _ in found}
                for metric in metrics:
                    if id(metric) in known or len(found) >= MAX_METRICS:
                        continue
                    handles = [_handle(v) for v in metric.variables]
                    if handles and any(id(h) in captured for h in handles if h is not None):
                        found.append(_entry(tf, metric, found))
        except Exception as exc:  # noqa: BLE001
            self._report_error("custom loop (metrics)", exc)

    def eager_step(self, loop: Any, tf: Any) -> dict[str, float] | None:
        """At an eager step's update: the loop's metrics due a read, or None.

        The metrics the script's frames reach at the loop's first update that changed by its
        second are its training metrics. The guides update them after the optimizer's update,
        so a read holds the steps before it: it goes with the previous step (:meth:`holds`).
        """
        key = id(loop)
        pending = self._eager.get(key)
        try:
            if pending is None and key not in self._metrics:  # the loop's first update
                found = _reachable_metrics(sys._getframe(1))[: 4 * MAX_METRICS]
                self._eager[key] = (found, [_state(m) for m in found])
                return None
            if pending is not None:  # its second: the metrics its step changed
                del self._eager[key]
                chosen = self._metrics.setdefault(key, [])
                for metric, before in zip(*pending, strict=True):
                    if len(chosen) < MAX_METRICS and before != _state(metric):
                        chosen.append(_entry(tf, metric, chosen))
                return None
        except Exception as exc:  # noqa: BLE001
            self._eager.pop(key, None)
            self._metrics[key] = []
            self._report_error("custom loop (metrics)", exc)
            return None
        if not self._metrics.get(key):
            return None
        now = time.monotonic()
        if now - self._eager_read.get(key, -math.inf) < EAGER_READ_EVERY_S:
            return None
        self._eager_read[key] = now
        return self.sample(loop)

    def carry(self, ended: Any, loop: Any) -> None:
        """``loop`` goes on with the series of ``ended``, and with its metrics (a step function
        is not traced again to find them)."""
        found = self._metrics.get(id(ended))
        if found is not None:
            self._metrics[id(loop)] = list(found)

    def holds(self, loop: Any) -> bool:
        """Whether the eager loop's steps wait for the next one (its metrics are read)."""
        return bool(self._metrics.get(id(loop)))

    def sample(self, loop: Any) -> dict[str, float]:
        """The values of the loop's metrics now (a reset one has none)."""
        found = self._metrics.get(id(loop))
        if not found:
            return {}
        out: dict[str, float] = {}
        try:
            for _, _, reader in found:
                out.update(reader())
        except Exception as exc:  # noqa: BLE001
            self._report_error("custom loop (metrics)", exc)
            self._metrics[id(loop)] = []
        return out


def function_graph(graph: Any) -> Any:
    """The graph of the ``tf.function`` being traced around ``graph`` (a cond's or a loop's
    branch, a nested function's graph)."""
    while hasattr(getattr(graph, "outer_graph", None), "external_captures"):
        graph = graph.outer_graph
    return graph


def _state(metric: Any) -> list[bytes]:
    """A metric's variables' values, bit for bit."""
    return [np.asarray(v.numpy()).tobytes() for v in metric.variables]


def _reachable_metrics(frame: Any) -> list[Any]:
    """Keras metrics the script's frames hold in their locals and globals, and one level
    inside them. (Not ``gc.get_objects()``: from a thread beside training it can take a
    reference to a tuple another thread is still resizing: CPython raises SystemError.)"""
    import keras

    metric_type = keras.metrics.Metric
    found: dict[int, Any] = {}
    seen: set[int] = set()

    def look(obj: Any, depth: int) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, metric_type):
            found[id(obj)] = obj
        elif depth and not isinstance(obj, _SKIPPED):
            if isinstance(obj, list | tuple | set):
                items = list(obj)[:_MAX_ITEMS]
            elif isinstance(obj, dict):
                items = list(obj.values())[:_MAX_ITEMS]
            else:  # (an autograph Undefined's every attribute is itself)
                attributes = getattr(obj, "__dict__", None)
                items = list(attributes.values())[:_MAX_ITEMS] if type(attributes) is dict else []
            for item in items:
                look(item, depth - 1)

    scanned: set[int] = set()
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):  # autograph's copies too (temporary files)
            for pool in (frame.f_locals, frame.f_globals):
                if id(pool) not in scanned:
                    scanned.add(id(pool))
                    for value in list(pool.values()):
                        look(value, 1)
        frame = frame.f_back
    return list(found.values())


_SKIPPED = (types.ModuleType, type, types.FunctionType, types.MethodType, str, bytes)
_MAX_ITEMS = 1000


def _handle(variable: Any) -> Any:
    """The resource handle a graph captures for a Keras or TensorFlow variable."""
    inner = getattr(variable, "value", variable)  # a Keras variable wraps a tf.Variable
    return getattr(inner, "handle", None)


def _entry(tf: Any, metric: Any, found: list[tuple[str, Any, Any]]) -> tuple[str, Any, Any]:
    """(key, metric, reader) of a metric: its name made unique among the loop's metrics, and a
    function giving its values now, ``{key: value}`` (a Keras model's compiled metrics, as
    ``train_on_batch`` updates them: one per metric) or ``{}`` while it holds nothing (reset):
    one traced call of its ``result()`` (~0.15 ms, 5 times a second)."""
    name = str(getattr(metric, "name", "") or type(metric).__name__)
    taken = {k for k, _, _ in found}
    key, n = name, 2
    while key in taken:
        key, n = f"{name} ({n})", n + 1

    def both() -> tuple[Any, Any]:  # its value, and whether it holds anything
        held = [tf.reduce_any(tf.not_equal(tf.convert_to_tensor(v), 0)) for v in metric.variables]
        return metric.result(), tf.reduce_any(tf.stack(held))

    traced = tf.function(both, autograph=False).get_concrete_function()

    def result() -> dict[str, float]:
        value, held = traced()
        values = value if isinstance(value, dict) else {key: value}
        arrays = {k: np.asarray(v) for k, v in values.items()} if bool(held) else {}
        return {k: float(v) for k, v in arrays.items() if v.size == 1}

    return key, metric, result
