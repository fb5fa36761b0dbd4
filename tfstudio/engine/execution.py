"""Eager/graph switching of a live model, trace counting, TensorFlow's retracing warnings.

Keras reads ``run_eagerly`` when it makes the train function, so setting the
attribute alone is ignored until the next ``compile``/``fit``:
:func:`set_execution_mode` also rebuilds the train function
(``make_train_function(force=True)``), which works between two steps of a running
``fit`` and keeps the optimizer's state.

Traces are counted by wrapping the model's ``train_step`` (an instance attribute,
removed after the fit; Keras captures ``train_step`` when it makes the train
function, so the caller remakes it after installing): in graph mode TensorFlow
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


class TraceCounter:
    """Counts how many times a model's train step is traced; a context for one fit.

    Args:
        model: the Keras model being fitted.
        on_trace: called (on the training thread, during tracing) after each trace.
    """

    def __init__(self, model: Any, on_trace: Callable[[int], None] | None = None) -> None:
        self.model = model
        self.on_trace = on_trace
        self.traces = 0
        self._installed = False

    def install(self) -> None:
        """Wrap ``model.train_step`` (instance attribute) to count traces."""
        import tensorflow as tf

        model = self.model
        original = model.train_step  # bound: the class's or the user's own

        def train_step(data: Any) -> Any:
            if not tf.executing_eagerly():
                self.traces += 1
                if self.on_trace is not None:
                    self.on_trace(self.traces)
            return original(data)

        object.__setattr__(model, "train_step", train_step)
        self._installed = True

    def remove(self) -> None:
        """Put the model's own ``train_step`` back."""
        if self._installed:
            self.model.__dict__.pop("train_step", None)
            self._installed = False


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
