"""Variables read and written back with the least Python, for the probes' samples.

``variable.numpy()`` and ``variable.assign(value)`` go through several layers of
Python (Keras's wrapper, ``read_value``'s identity op, the dispatcher): ~120-170 us a
variable on an idle core, where the op itself takes ~30 us. A sample reads every
trainable variable (weights on the host) or snapshots and restores every variable
a probe may write, so for a model of a few hundred variables that Python was most of
a sample. Here a plain resource variable is read with one ``ReadVariableOp`` and
written with one ``AssignVariableOp``; anything else (a distributed or mirrored
variable, a variable of another kind, a call inside a graph) takes the public path.
The values are the same bytes either way: a read is a copy that later writes to the
variable do not touch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import gen_resource_variable_ops, resource_variable_ops

_PLAIN = resource_variable_ops.BaseResourceVariable


def tf_variable(variable: Any) -> Any:
    """The ``tf.Variable`` behind a Keras variable (Keras 3 wraps them); others as given."""
    return variable if isinstance(variable, tf.Variable) else getattr(variable, "value", variable)


def _plain(variable: Any) -> bool:
    # a resource variable of any kind (one made while a tf.function traced, as the gradient
    # probe's buffers, is an UnliftedInitializerVariable); a distributed variable is not one
    return isinstance(variable, _PLAIN) and tf.executing_eagerly()


def own_variable(initial: Any, dtype: Any = None) -> Any:
    """A non-trainable variable of tfstudio's own, made eagerly (also while a ``tf.function``
    traces): past the variable creator scopes, so the function being traced does not count
    it as one it created, and is not traced a second time because of it."""
    with tf.init_scope():
        return resource_variable_ops.ResourceVariable(initial, dtype=dtype, trainable=False)


def read(variable: Any) -> Any:
    """The variable's value now, as an eager tensor on its device."""
    v = tf_variable(variable)
    if _plain(v):
        return gen_resource_variable_ops.read_variable_op(v.handle, v.dtype)
    return v.read_value() if hasattr(v, "read_value") else tf.convert_to_tensor(v)


def read_handle(handle: Any, dtype: Any) -> np.ndarray:
    """A resource variable's value as numpy, from its handle: one ``ReadVariableOp``."""
    return gen_resource_variable_ops.read_variable_op(handle, dtype).numpy()


def host_value(value: Any) -> np.ndarray:
    """A variable's value (or a tensor's, a number's) as numpy, a copy later training does
    not change: a count, a learning rate, a weight."""
    v = tf_variable(value)
    if _plain(v):
        return read_handle(v.handle, v.dtype)
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def host_values(variables: Sequence[Any]) -> list[np.ndarray]:
    """Each variable's value as numpy (see :func:`host_value`)."""
    return [host_value(v) for v in variables]


def write(variable: Any, value: Any) -> None:
    """Set the variable to ``value`` (a tensor :func:`read` gave for this same variable)."""
    v = tf_variable(variable)
    if _plain(v):
        gen_resource_variable_ops.assign_variable_op(v.handle, value)
    else:
        v.assign(value)


@contextmanager
def variables_restored(variables: Sequence[Any]) -> Iterator[None]:
    """Whatever happens inside, ``variables`` end with the values they had on entry."""
    saved = [(v, read(v)) for v in variables]
    try:
        yield
    finally:
        for variable, value in saved:
            write(variable, value)
