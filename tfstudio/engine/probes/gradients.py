"""Gradients as the optimizer applies them: no second forward/backward pass.

Every optimizer the model uses (``model.optimizer`` and optimizers held as
attributes, e.g. a GAN's two) gets its ``apply`` wrapped for the fit; Keras's
``train_step`` and custom ``train_step``s that call ``apply_gradients`` both go
through it. The wrapper records only while a *recording* train function is
traced (or, with ``run_eagerly``, called): it adds ops that write each
gradient's norm, min, max and histogram into device-side ``tf.Variable``
buffers. Under ``tf.distribute`` each replica's gradients are summed first, as
the optimizer sums them. Under mixed precision (a ``LossScaleOptimizer``, or ``loss_scale_factor``)
``apply`` receives the gradients times the loss scale: they are recorded divided by
it, as the weights get them.

So the model has two train functions: Keras's own, traced without any
recording ops (unsampled steps cost nothing at all), and a recording twin.
:meth:`GradientProbe.arm` swaps the twin in for exactly one call (the next
step); it puts Keras's function back itself, and the callback reads the buffers
(a few kB) after that step. Costs: one extra trace of the train step, at the
first sampled step of a model (kept across its fits), and the summaries on
sampled steps. A ``tf.cond`` on a flag inside one function was tried first: its
untaken branch still cost ~25% of a small MLP's step (Switch/Merge dead nodes).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from tfstudio.core.events import GradientStats, GradientVariable
from tfstudio.engine.probes.model import variable_path
from tfstudio.engine.probes.values import host_values, write
from tfstudio.engine.probes.weights import BINS, summarize


def find_optimizers(model: Any) -> list[Any]:
    """``model.optimizer`` and any optimizer the model holds as an attribute."""
    import keras

    found: list[Any] = []
    candidates = [getattr(model, "optimizer", None), *vars(model).values()]
    for obj in candidates:
        if isinstance(obj, keras.optimizers.Optimizer) and all(obj is not o for o in found):
            found.append(obj)
    return found


def loss_scale(optimizer: Any) -> Any:
    """The factor ``optimizer.apply`` divides the gradients by before using them, or None.

    Under mixed precision a ``LossScaleOptimizer`` receives gradients of the
    loss times its dynamic scale (2**15 at first) and unscales them; a plain
    optimizer with ``loss_scale_factor`` does the same with a fixed factor.
    """
    if getattr(optimizer, "inner_optimizer", None) is not None:  # LossScaleOptimizer
        scale = getattr(optimizer, "dynamic_scale", None)  # made when the optimizer is built
        return scale if scale is not None else getattr(optimizer, "initial_scale", None)
    return getattr(optimizer, "loss_scale_factor", None)


def _replica_sum(grads: list[Any]) -> list[Any]:
    """The gradients summed over replicas, as Keras's optimizer applies them.

    Under ``MirroredStrategy`` ``apply`` is called in each replica with that
    replica's gradients; the optimizer all-reduces (sums) them before using them.
    """
    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync <= 1:
        return grads
    return ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)


class GradientProbe:
    """Records the gradients the model's optimizers apply, on sampled steps only.

    Args:
        model: the model being trained.
        on_error: called with the exception if recording fails (training goes on).
    """

    def __init__(
        self, model: Any, on_error: Callable[[BaseException], None], bins: int = BINS
    ) -> None:
        self.model = model
        self.bins = bins
        self.on_error = on_error
        self.variables: list[Any] = []
        self.paths: list[str] = []
        self._index: dict[int, int] = {}
        self._recording = False  # the wrapper adds recording ops only while this is set
        self._plain: Any = None  # Keras's own train function
        self._recorder: Any = None  # its recording twin
        self._stats: Any = None
        self._hists: Any = None
        self._seen: Any = None
        self._unseen: Any = None  # zeros to reset _seen with after a sample
        self._wrapped: list[Any] = []
        self.armed = False
        self.traced = False  # whether the recording twin has run (been traced) yet
        # Seconds a trace of the model's train step took: its first fit's first steps (a
        # later fit reuses Keras's trace and starts fast). The twin's trace costs about that.
        self.trace_estimate = 0.0

    def _ensure_buffers(self) -> None:
        """Index the trainable variables and make the buffers, once they exist.

        Subclassed models create their variables in the first step, so this runs
        when the first gradients arrive (at trace time: under ``init_scope``, as
        Keras's optimizers create their own variables).
        """
        if self._stats is not None:
            return
        self.variables = list(self.model.trainable_variables)
        self.paths = [variable_path(v) for v in self.variables]
        self._index = {id(v): i for i, v in enumerate(self.variables)}
        for i, v in enumerate(self.variables):
            inner = getattr(v, "value", None)  # keras.Variable wraps a tf.Variable
            if inner is not None and not callable(inner):
                self._index.setdefault(id(inner), i)
        n, bins = max(len(self.variables), 1), self.bins
        # Under a tf.distribute strategy these become mirrored variables, written from
        # the replicas' step: every replica computes the same (all-reduced) figures and
        # the first replica's are kept.
        first = tf.VariableAggregation.ONLY_FIRST_REPLICA
        with tf.init_scope():
            self._stats = tf.Variable(
                tf.zeros([n, 3]), trainable=False, name="tfstudio_grad", aggregation=first
            )
            self._hists = tf.Variable(
                tf.zeros([n, bins], tf.int32), trainable=False, aggregation=first
            )
            self._seen = tf.Variable(tf.zeros([n]), trainable=False, aggregation=first)
            self._unseen = tf.zeros([n])  # (tf.zeros_like of a read array: ~0.5 ms a sample)

    # -- install / remove ------------------------------------------------
    def install(self) -> int:
        """Wrap the optimizers' ``apply`` and make the recording twin; returns how many."""
        model = self.model
        for opt in find_optimizers(model):
            if "apply" in vars(opt):
                continue  # already wrapped (by us or someone else): leave it
            original = opt.apply
            opt.__dict__["apply"] = self._wrap(original)
            self._wrapped.append(opt)
        if not self._wrapped:
            return 0
        plain = model.train_function
        if plain is None:
            model.make_train_function()
            plain = model.train_function
        if self._recorder is None or plain is not self._plain:
            # A new (or recompiled) model: make its twin. Otherwise the twin of an
            # earlier fit is reused, already traced.
            model.make_train_function(force=True)
            self._recorder = model.train_function
            model.train_function = plain
            self._plain = plain
            self.traced = False
        return len(self._wrapped)

    def remove(self) -> None:
        """Put the optimizers and Keras's train function back."""
        for opt in self._wrapped:
            opt.__dict__.pop("apply", None)
        if self._plain is not None and self.model.train_function == self._one_shot:
            self.model.train_function = self._plain
        self._wrapped = []
        self.armed = False

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def apply(grads: Any, trainable_variables: Any = None, *args: Any, **kwargs: Any) -> Any:
            if self._recording:
                try:
                    opt = original.__self__
                    variables = trainable_variables
                    if variables is None:
                        variables = getattr(opt, "_trainable_variables", None) or []
                    self._record(list(grads), list(variables), loss_scale(opt))
                except Exception as exc:  # noqa: BLE001 - monitoring never breaks training
                    self.on_error(exc)
            if trainable_variables is None:
                return original(grads, *args, **kwargs)
            return original(grads, trainable_variables, *args, **kwargs)

        return apply

    def _record(self, grads: list[Any], variables: list[Any], scale: Any = None) -> None:
        self._ensure_buffers()
        pairs = []
        for g, v in zip(grads, variables, strict=False):
            i = self._index.get(id(v))
            if i is None:
                i = self._index.get(id(getattr(v, "value", None)))
            if g is not None and i is not None:
                pairs.append((i, g))
        if not pairs:
            return
        indices = tf.constant([[i] for i, _ in pairs], tf.int32)
        stats, hists = [], []
        for g in _replica_sum([tf.convert_to_tensor(g) for _, g in pairs]):
            if scale is not None:  # the gradients the model really gets: unscaled
                g = g / tf.cast(tf.convert_to_tensor(scale), g.dtype)
            s, h = summarize(g, self.bins)
            stats.append(tf.stack([s[4], s[2], s[3]]))
            hists.append(h)
        # assign, not scatter_nd_update: mirrored variables only support assign.
        for buffer, rows in (
            (self._stats, tf.stack(stats)),
            (self._hists, tf.stack(hists)),
            (self._seen, tf.ones([len(pairs)])),
        ):
            buffer.assign(tf.tensor_scatter_nd_update(buffer.read_value(), indices, rows))

    def _one_shot(self, iterator: Any) -> Any:
        """The recording twin, for one call; then Keras's own function is back."""
        self._recording = True
        try:
            return self._recorder(iterator)
        finally:
            self._recording = False
            self.traced = True
            self.model.train_function = self._plain

    # -- sampling ----------------------------------------------------------
    def arm(self) -> None:
        """Record the gradients of the next train-function call (the coming step)."""
        if self._recorder is None:
            return
        self.model.train_function = self._one_shot
        self.armed = True

    def sample(self, fit_index: int, step: int) -> GradientStats | None:
        """Read what the last armed step recorded. None if nothing was recorded."""
        if not self.armed:
            return None
        self.armed = False
        if self.model.train_function == self._one_shot:  # armed but not yet run
            self.model.train_function = self._plain
            return None
        if self._seen is None:
            return None
        seen = host_values([self._seen])[0]
        if not seen.any():
            return None
        stats, hists = host_values([self._stats, self._hists])
        write(self._seen, self._unseen)
        out = []
        total = 0.0
        rows, counts = stats.tolist(), hists.tolist()  # Python numbers at once
        for i in np.flatnonzero(seen).tolist():
            norm, lo, hi = rows[i]
            total += norm * norm
            out.append(GradientVariable(self.paths[i], norm, lo, hi, tuple(counts[i])))
        return GradientStats(fit_index, step, math.sqrt(total), tuple(out))
