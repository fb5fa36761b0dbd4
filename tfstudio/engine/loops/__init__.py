"""Custom training loops: ``GradientTape`` + optimizer / ``assign_sub`` steps, found with no edits.

A training step is a tape gradient of variables followed by an update of those variables.
Steps group into *series* (the variables they update, and where the script runs them) and
series into *loops*, each a segment announced as ``FitStarted(kind="loop")``. By concern:

- discovery and patching: ``patching.py`` (the wrappers), ``steps.py`` (a gradient, then
  its update), ``series.py`` (series and loops), ``owners.py`` (what a loop is called);
- the graph step's device-side record and its reader: ``ring.py``;
- sampling: ``sampling.py`` (step functions, the twins), ``metrics.py`` (Keras metrics);
- emission: ``emission.py``, ``explicit.py`` (``tfstudio.monitor``); ``interceptor.py`` puts
  them together. The controls at loop steps are ``engine/control_loops.py``'s.
"""

from tfstudio.engine.loops.interceptor import LoopInterceptor

__all__ = ["LoopInterceptor"]
