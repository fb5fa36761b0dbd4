"""Step detection: a tape gradient of variables, then an update of those variables.

A gradient of variables waits as a :class:`PendingStep` until an optimizer ``apply`` or
``assign_sub``/``assign_add`` of one of them completes it. A gradient of inputs only
(saliency maps) is no step, and code that only evaluates updates nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from tfstudio.engine.loop_inspect import host_float
from tfstudio.engine.loops.owners import is_variable, size

SMALL = 4  # series whose variables hold this many numbers at most are plotted as value lines
KEEP = 4  # gradients waiting for their update (older ones were evaluation, not steps)


class PendingStep(NamedTuple):
    """A tape gradient of variables, waiting for the update that makes it a step."""

    key: frozenset[int]  # ids of the variables (the series' key)
    match: frozenset[int]  # ids an update may name: key's and the tf.Variable in a Keras one
    target: Any  # the loss (before a LossScaleOptimizer scaled it)
    variables: list[Any]  # in the tape's order
    small: tuple[float, ...] | None  # eager: the tiny scalar variables' values
    norm: float  # eager: the global gradient norm (NaN in a trace or without gradients)
    pairs: list[tuple[Any, Any]]  # (variable, gradient) for each that got a gradient
    scaled: Any  # graph: the scaled loss the gradients are of (None: not scaled)


class StepDetector:
    """Pairs tape gradients with the updates that follow them."""

    def __init__(self, tf: Any) -> None:
        self.tf = tf
        self.pending: list[PendingStep] = []
        self.updating = 0  # >0 inside an optimizer's apply: its assigns are no steps
        self._small: dict[frozenset[int], list[Any]] = {}  # key -> its tiny scalar variables
        self._scaled: list[tuple[Any, Any]] = []  # the last (scaled loss, loss) of scale_loss

    def gradient(self, target: Any, sources: Any, grads: Any, eager: bool) -> bool:
        """A tape gradient was taken; True when it may begin a step (it has variable sources)."""
        flat_sources = self.tf.nest.flatten(sources)
        variables = [s for s in flat_sources if is_variable(s)]
        if not variables:
            return False  # a gradient of inputs (saliency), not a training step
        key = frozenset(id(v) for v in variables)
        flat_grads = self.tf.nest.flatten(grads)
        pairs: list[tuple[Any, Any]] = []
        if len(flat_grads) == len(flat_sources):
            pairs = [
                (s, g)
                for g, s in zip(flat_grads, flat_sources, strict=True)
                if g is not None and is_variable(s)
            ]
        small = scaled = None
        norm = math.nan
        for scaled_loss, loss in self._scaled:  # mixed precision: the loss and gradients
            if scaled_loss is target:  # the script knows are the unscaled ones
                scaled, target = target, loss
        if scaled is not None and eager:
            pairs, scaled = unscale(self.tf, pairs, scaled, target), None
        if eager:
            tiny = self._small.get(key)
            if tiny is None:  # a tiny model's scalar variables, else none
                scalars = len(variables) <= SMALL and all(size(v) == 1 for v in variables)
                tiny = self._small[key] = variables if scalars else []
            if tiny:  # the guide's W and b: the values this loss was computed with
                small = tuple(scalar(v) for v in tiny)
            if pairs:
                norm = global_norm(self.tf, [g for _, g in pairs])
        inner = [getattr(v, "_value", None) for v in variables]
        match = key | {id(i) for i in inner if i is not None and hasattr(i, "assign_sub")}
        keep = [p for p in self.pending if p.key != key][-(KEEP - 1) :]
        keep.append(PendingStep(key, match, target, variables, small, norm, pairs, scaled))
        self.pending = keep
        return True

    def scaled_loss(self, scaled: Any, loss: Any) -> None:
        """An optimizer's ``scale_loss``: a gradient of ``scaled`` is a step of ``loss``."""
        if scaled is not loss:
            self._scaled = [*self._scaled[-(KEEP - 1) :], (scaled, loss)]

    @contextmanager
    def applying(self) -> Iterator[None]:
        """While entered, an optimizer's apply runs: its own assigns are no steps."""
        self.updating += 1
        try:
            yield
        finally:
            self.updating -= 1

    def update(self, variables: list[Any]) -> PendingStep | None:
        """The step that an update of ``variables`` completes (None: no gradient came first)."""
        pending = self.pending
        ids = {id(v) for v in variables}
        for i in range(len(pending) - 1, -1, -1):
            if pending[i].match & ids:
                return pending.pop(i)
        return None  # no tape step before this update (a counter, a metric)

    def small_variables(self, key: frozenset[int]) -> list[Any]:
        """The tiny scalar variables of a series (plotted as value lines), in tape order."""
        return self._small.get(key) or []


def unscale(tf: Any, pairs: list[tuple[Any, Any]], scaled: Any, loss: Any) -> list[Any]:
    """Gradients of a loss ``scale_loss`` scaled, divided by the scale ``scaled / loss`` (a power
    of two: exact; the optimizer's own is read after its ``apply``, which may change it)."""
    scale, ix = tf.cast(scaled, tf.float32) / tf.cast(loss, tf.float32), tf.IndexedSlices
    out = []
    for v, g in pairs:
        s = tf.cast(scale, g.dtype)
        out.append((v, ix(g.values / s, g.indices, g.dense_shape) if isinstance(g, ix) else g / s))
    return out


def global_norm(tf: Any, grads: list[Any]) -> float:
    """The global norm of eager gradients (``tf.linalg.global_norm``'s value), cheaply.

    Float32/64 gradients in host memory are read in place by numpy (~25 us for the
    benchmark's MLP); ``tf.linalg.global_norm`` runs a dozen eager ops (~0.3-1 ms, ~3%
    of that MLP's eager step). Others (on a GPU, half precision) go the TensorFlow way.
    """
    values = [g.values if isinstance(g, tf.IndexedSlices) else g for g in grads]
    if all(host_float(tf, v) for v in values):
        total = 0.0
        with np.errstate(over="ignore", invalid="ignore"):  # a diverging step's: inf, NaN
            for v in values:
                a = v.numpy().ravel()
                total += float(np.dot(a, a))
        return math.sqrt(total)
    return float(tf.linalg.global_norm(values))


def scalar(target: Any) -> float:
    """A loss (or variable) as one float: its mean when it is not a scalar; NaN if unreadable."""
    if target is None:
        return float("nan")
    try:
        value = target.numpy() if hasattr(target, "numpy") else target
        arr = np.asarray(value, dtype=np.float64)
        return float(arr.mean()) if arr.size != 1 else float(arr.reshape(()))
    except Exception:  # noqa: BLE001 - a loss we cannot read
        return float("nan")
