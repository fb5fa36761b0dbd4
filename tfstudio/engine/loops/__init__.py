"""Custom training loops: ``GradientTape`` + optimizer / ``assign_sub`` steps, found with no edits.

While a run lasts, :class:`LoopInterceptor` wraps ``tf.GradientTape.gradient``,
the Keras optimizer's ``apply`` (``apply_gradients`` calls it) and
``assign_sub``/``assign_add`` of TensorFlow's resource variables. A training
step is a tape gradient whose sources are variables followed by an update of
those variables; a gradient of an input (saliency maps), or code that only
evaluates, updates nothing and is no step.

Steps are grouped into *series* keyed by the variables they update (a GAN's
discriminator and generator are two series) and by where the script runs them (an
eager loop and a ``tf.function`` loop of one model are two series), and series into
*loops*, each a segment of the run announced with ``FitStarted(kind="loop")``. Eager steps
carry their loss and global gradient norm at once; inside a ``tf.function``
they are written to a device-side ring buffer that a background thread reads.

One module per concern:

- ``interceptor.py``: :class:`LoopInterceptor`, the context manager that ties them together;
- ``patching.py``: what is wrapped while a run lasts, and the wrappers;
- ``steps.py``: step detection (a gradient, then the update it pairs with);
- ``owners.py``: whose variables a loop trains, and so what it is called;
- ``series.py``: series and loops (grouping);
- ``ring.py``: the graph ring buffer and its reader thread;
- ``sampling.py``: step functions and the inspector's recording twins;
- ``controls.py``: stop, pause, checkpoints, learning rate at loop steps;
- ``explicit.py``: the sink of ``tfstudio.monitor.log`` / ``.watch``;
- ``emission.py``: the events.

The inspector's views (model tree, weight and gradient statistics) come from
``engine/loop_inspect.py``; what checkpoints hold from ``engine/loop_state.py``.
"""

from tfstudio.engine.loops.interceptor import LoopInterceptor

__all__ = ["LoopInterceptor"]
