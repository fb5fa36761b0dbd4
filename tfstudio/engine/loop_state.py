"""What a checkpoint of a custom loop holds: the models, modules and optimizers it trains.

The controls (``engine/control.py``) checkpoint ``TrainingController.model``
with ``tf.train.Checkpoint(model=..., optimizer=..., step=...)``. A ``fit``
gives them its Keras model; a custom loop gives them a :func:`loop_state`: a
``tf.Module`` whose attributes are the loop's trackables, found by discovery
(the model or module that owns the trained variables, the Keras optimizers
that applied the gradients; bare ``tf.Variable`` objects when no owner is
found). Attributes added as later loops appear are saved from then on.
"""

from __future__ import annotations

import re
from typing import Any

_state_class: Any = None


def loop_state() -> Any:
    """A new, empty container (a ``tf.Module``) for one run's loops."""
    global _state_class
    if _state_class is None:
        import tensorflow as tf

        class LoopState(tf.Module):
            """The trackables of a run's custom loops, under readable attribute names."""

            run_eagerly = True  # no Keras train function to rebuild after an LR change

            def __init__(self) -> None:
                super().__init__(name="custom_loop")
                # plain dicts, not tracked (object.__setattr__ skips tf.Module's tracking)
                object.__setattr__(self, "_tfstudio_names", {})
                object.__setattr__(self, "_tfstudio_vars", {})

            @property
            def trainable_variables(self) -> list[Any]:
                """The variables the loops train (what the NaN guard checks)."""
                return list(self._tfstudio_vars.values())

            def track(self, name: str, obj: Any, variables: list[Any] = ()) -> None:
                """Save ``obj`` under ``name`` from now on (once per object)."""
                for v in variables:
                    self._tfstudio_vars.setdefault(id(v), v)
                if obj is None or id(obj) in self._tfstudio_names:
                    return
                base = re.sub(r"\W", "_", name).strip("_") or "object"
                if base[0].isdigit():
                    base = "_" + base
                unique, n = base, 1
                while unique in self._tfstudio_names.values() or hasattr(self, unique):
                    n += 1
                    unique = f"{base}_{n}"
                self._tfstudio_names[id(obj)] = unique
                setattr(self, unique, obj)

            def reset_metrics(self) -> None:
                """Nothing to reset: a loop keeps its own metrics (called after a restore)."""

        _state_class = LoopState
    return _state_class()
