"""Find where a non-finite loss came from: recompute the offending batch in the worker.

:class:`BatchKeeper` keeps the batch of the step whose loss went non-finite. In
eager mode it holds a reference to every batch (free). In graph mode a kept batch
costs ops in every traced step (measured on the benchmark MLP: ~10-25 us a step to
copy it aside, ~25-55 us to copy it only when a result is non-finite with a
``tf.cond``), so by default a traced step keeps nothing until the keeper is
*armed*: at the run's first non-finite loss (the guard says that batch was not kept,
arms the keeper and has the train function made again), or from the first step
with ``--nan-batch``. An armed step copies its batch into shapeless variables (made
outside the graph with ``tf.init_scope``): the Python side checks the loss after
every step, so the copy it reads then is the offending step's batch.

:func:`diagnose` runs the model eagerly on that batch with every layer's
``call`` wrapped, and names the first layer (in the order layers finish) whose
output holds a NaN or Inf, then the first variable whose gradient does. The
step that produced the NaN has usually already written NaNs into the weights,
so when a checkpoint is at hand its model weights are loaded for the
recomputation and the live weights put back afterwards; the detail says which.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class BatchKeeper:
    """Holds the batch of the last step (eager), or of the last traced step when armed.

    Args:
        armed: traced steps copy their batch from the first trace on.
    """

    def __init__(self, armed: bool = False) -> None:
        self._eager: Any = None
        self._vars: list[Any] | None = None
        self._structure: Any = None
        self.disabled = ""  # why keeping is off ("" when on)
        self.armed = armed  # read when a step is traced: does it copy its batch?

    def keep(self, data: Any) -> None:
        """Record ``data``, the batch of a step: eagerly a reference; traced, a copy when armed."""
        import tensorflow as tf

        if self.disabled:
            return
        if tf.executing_eagerly():
            self._eager = data
            return
        if not self.armed:
            return
        if tf.distribute.has_strategy() and tf.distribute.in_cross_replica_context() is False:
            # Per-replica batches under a distribution strategy: not kept (variables made
            # in a replica context would be mirrored).
            self.disabled = "a distribution strategy is in use"
            return
        try:
            self._keep_traced(data)
        except Exception as exc:  # noqa: BLE001 - keeping the batch must never break training
            self.disabled = f"the batch could not be kept ({type(exc).__name__}: {exc})"
            self._vars = None

    def _keep_traced(self, data: Any) -> None:
        import tensorflow as tf

        flat = tf.nest.flatten(data)
        if self._vars is None or len(self._vars) != len(flat):
            with tf.init_scope():
                self._vars = [
                    tf.Variable(
                        tf.zeros([0] * max(len(t.shape), 0), dtype=t.dtype),
                        shape=tf.TensorShape(None),
                        trainable=False,
                        name="tfstudio_last_batch",
                    )
                    for t in flat
                ]
            self._structure = data
        for var, tensor in zip(self._vars, flat, strict=True):
            var.assign(tensor, read_value=False)
        self._eager = None

    def last(self) -> Any:
        """The last batch kept (eager tensors), or None."""
        import tensorflow as tf

        if self._eager is not None:
            return self._eager
        if self._vars is None:
            return None
        return tf.nest.pack_sequence_as(self._structure, [v.read_value() for v in self._vars])


def first_non_finite_variable(variables: Any) -> str:
    """Path of the first variable holding a NaN or Inf ("" if none)."""
    for v in variables:
        value = np.asarray(v.numpy() if hasattr(v, "numpy") else v)
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            return _name(v)
    return ""


def diagnose(model: Any, data: Any) -> tuple[str, str]:
    """(first layer with a non-finite output, first variable with a non-finite gradient)."""
    import keras
    import tensorflow as tf

    from tfstudio.engine.probes.values import variables_restored

    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    finished: list[tuple[str, Any]] = []
    wrapped: list[Any] = []
    for layer in model._flatten_layers(include_self=False):  # noqa: SLF001
        object.__setattr__(layer, "call", _recording(layer, finished))
        wrapped.append(layer)
    # The recomputation must not count as a step: a layer's own counters, seed
    # generators and the loss tracker end as they were.
    try:
        with variables_restored(model.variables), tf.GradientTape() as tape:
            y_pred = model(x, training=False)
            loss = None
            if y is not None:
                loss = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
    finally:
        for layer in wrapped:
            layer.__dict__.pop("call", None)
    layer_name = ""
    for name, out in finished:
        if _non_finite(out):
            layer_name = name
            break
    gradient = ""
    if loss is not None:
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        for var, grad in zip(variables, grads, strict=True):
            if grad is not None and _non_finite(grad):
                gradient = _name(var)
                break
    return layer_name, gradient


def _recording(layer: Any, finished: list[tuple[str, Any]]) -> Any:
    """``layer.call`` that also notes its output, in the order layers finish."""
    original = layer.call

    def call(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        finished.append((layer.name, out))
        return out

    return call


def _non_finite(value: Any) -> bool:
    import tensorflow as tf

    for t in tf.nest.flatten(value):
        try:
            arr = np.asarray(t)
        except Exception:  # noqa: BLE001 - not a tensor: nothing to check
            continue
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            return True
    return False


def _name(variable: Any) -> str:
    for attr in ("path", "name"):
        value = getattr(variable, attr, None)
        if isinstance(value, str) and value:
            return value.removesuffix(":0")
    return repr(variable)
