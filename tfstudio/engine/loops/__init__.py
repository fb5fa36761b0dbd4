"""Custom training loops: ``GradientTape`` + optimizer / ``assign_sub`` steps, found with no edits.

While a run lasts, ``tf.GradientTape.gradient``, the Keras optimizer's ``apply``,
variables' ``assign_sub``/``assign_add`` and ``tf.function``'s ``__call__`` are wrapped.
A training step is a tape gradient of variables followed by an update of those
variables. Steps group into *series* (the variables they update, and where the script
runs them) and series into *loops*, each a segment announced as ``FitStarted(kind="loop")``.

By concern:

- discovery and patching: ``patching.py`` (the wrappers), ``steps.py`` (a gradient, then
  its update), ``series.py`` (series and loops), ``owners.py`` (what a loop is called);
- the graph step's device-side record and its reader: ``ring.py``;
- sampling: ``sampling.py`` (step functions, their calls, the twins on the sampling
  cadence), ``metrics.py`` (the script's Keras metrics);
- emission: ``emission.py``;
- ``controls.py`` (stop, pause, checkpoints, learning rate at loop steps), ``explicit.py``
  (``tfstudio.monitor``), and ``interceptor.py``, which puts them together.

The inspector's views come from ``engine/loop_inspect.py``; what checkpoints hold from
``engine/loop_state.py``.
"""

from tfstudio.engine.loops.interceptor import LoopInterceptor

__all__ = ["LoopInterceptor"]
