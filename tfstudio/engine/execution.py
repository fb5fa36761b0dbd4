"""Eager/graph switching of a live model, trace counting, TensorFlow's retracing warnings.

Keras reads ``run_eagerly`` when it makes the train function, so setting the
attribute alone is ignored until the next ``compile``/``fit``:
:func:`set_execution_mode` also rebuilds the train function
(``make_train_function(force=True)``), which works between two steps of a running
``fit`` and keeps the optimizer's state.

Traces are counted by wrapping the model's ``train_step`` once per model (an
instance attribute; see :func:`install_step_hook`): in graph mode TensorFlow
calls it only while tracing, so the wrapper costs nothing per step; a call made
while not executing eagerly is one trace.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

RETRACING = re.compile(r"triggered tf\.function retracing", re.IGNORECASE)


def set_execution_mode(model: Any, eager: bool) -> bool:
    """Make ``model`` train eagerly (or as a graph) from its next step; True if it changed."""
    if bool(model.run_eagerly) == bool(eager):
        return False
    model.run_eagerly = bool(eager)
    model.make_train_function(force=True)
    return True


class StepHook:
    """What tfstudio adds to a model's train step: a trace count and the last batch kept.

    Installed once per model by :func:`install_step_hook` and left in place, so
    later fits reuse the train function Keras already traced (no retrace per fit).

    Attributes:
        on_trace: called on the training thread, while tracing, after each trace.
        keeper: holds the last batch (see nan_guard.BatchKeeper); None: not kept.
        traces: traces of this model's train step so far.
    """

    def __init__(self, keeper: Any = None) -> None:
        self.on_trace: Callable[[int], None] | None = None
        self.keeper = keeper
        self.traces = 0


def install_step_hook(model: Any, keeper: Any = None) -> StepHook:
    """Wrap ``model.train_step`` (an instance attribute) once; returns the model's hook."""
    import tensorflow as tf

    hook = model.__dict__.get("_tfstudio_step_hook")
    if hook is not None:
        return hook
    hook = StepHook(keeper)
    original = model.train_step  # bound: the class's or the user's own

    def train_step(data: Any) -> Any:
        if not tf.executing_eagerly():
            hook.traces += 1
            if hook.on_trace is not None:
                hook.on_trace(hook.traces)
        logs = original(data)
        if hook.keeper is not None:
            hook.keeper.keep(data)
        return logs

    object.__setattr__(model, "train_step", train_step)
    object.__setattr__(model, "_tfstudio_step_hook", hook)
    # Keras captured the bound train_step when fit made the train function: make it
    # again (nothing was traced yet, so this costs no trace).
    model.make_train_function(force=True)
    return hook


class RetracingWatcher(logging.Handler):
    """Turns TensorFlow's "triggered tf.function retracing" warnings into calls of ``notify``.

    Attach with :meth:`attach` for the length of a run; the warning still reaches
    the console as before.
    """

    def __init__(self, notify: Callable[[str], None]) -> None:
        super().__init__(level=logging.WARNING)
        self.notify = notify
        self.count = 0
        self._logger = logging.getLogger("tensorflow")

    def emit(self, record: logging.LogRecord) -> None:
        """Forward a retracing warning (others are left alone)."""
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad log record must not break training
            return
        if RETRACING.search(text):
            self.count += 1
            self.notify(text)

    def attach(self) -> None:
        """Start listening on TensorFlow's logger."""
        self._logger.addHandler(self)

    def detach(self) -> None:
        """Stop listening."""
        self._logger.removeHandler(self)
