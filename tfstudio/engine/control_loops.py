"""The controls at custom-loop steps: stop, pause, checkpoints and learning rate.

:class:`LoopControls` drives the run's :class:`~tfstudio.engine.control.TrainingController`
(the one ``fit`` drives) from custom-loop step boundaries. It begins at a loop's first step,
with a :func:`loop_state` as the "model" its checkpoints hold: a ``tf.Module`` whose
attributes are the loop's trackables found by discovery (the model or module that owns the
trained variables, the Keras optimizers that applied the gradients; bare ``tf.Variable``
objects when no owner is found). Attributes added as later loops appear are saved from then
on, with ``tf.train.Checkpoint(model=..., optimizer=..., step=...)`` as a fit's are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.script import RunStopped


class LoopControls:
    """The run's :class:`TrainingController` (made here when no fit made one) driven from
    custom-loop steps."""

    def __init__(self, monitor: RunMonitor, optimizers: Callable[[], list[Any]]) -> None:
        self.monitor = monitor
        self._optimizers = optimizers  # those of the current loop's series (None: none)
        self.started = False
        self.optimizer: Any = None  # the last Keras optimizer seen applying gradients
        self.control: Any = None  # the run's TrainingController, once the controls began
        self._state: Any = None  # what checkpoints hold (a loop_state, below)
        self._non_finite: tuple[int, float] | None = None  # a graph step's NaN, for the guard
        opts = monitor.options
        # whether every graph call must sync and run the controls (else only when due)
        self.per_step = bool(
            opts.stop_at_step is not None or opts.checkpoint_every or opts.checkpoint_minutes
        )

    def track(self, name: str, obj: Any, variables: list[Any] = ()) -> None:
        """Add ``obj`` (or bare ``variables``) to what the run's checkpoints hold."""
        try:
            if self._state is None:
                self._state = loop_state()
            self._state.track(name, obj, list(variables))
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("custom loop (checkpoint objects)", exc)

    def after_step(self, loss: float | None) -> None:
        """A step boundary: apply commands, checkpoint, pause; raise RunStopped to stop."""
        if not self.started:
            self._begin()
        control = self.monitor.control
        if control is None:
            return
        step = None
        if loss is None and self._non_finite is not None:  # a graph step's, read since
            (step, loss), self._non_finite = self._non_finite, None
        try:
            control.after_step(loss, step)
        except RunStopped:
            raise
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("controls (custom loop step)", exc)
        if self.monitor.stop_requested.is_set():
            raise RunStopped()

    def end(self) -> None:
        """A loop ended: the controls finish (a final checkpoint...), and begin again at the
        next loop's first step, with its optimizer."""
        control, self.control = self.control, None
        if self.started and control is not None:
            try:
                control.end()
            except Exception as exc:  # noqa: BLE001
                self.monitor.report_error("controls (custom loop end)", exc)
        self.started = False

    def non_finite(self, step: int, loss: float) -> None:
        """From the reader's thread: a graph step's loss was NaN or Inf; the guard acts at the
        next step boundary (and names this step)."""
        control = self.control
        if control is not None and self._non_finite is None:
            self._non_finite = (step, loss)
            control.due = True

    def beat(self) -> None:
        """From the reader's thread: ask for a schedule's rate once its last read is old."""
        control = self.control
        if control is not None and not control.due and control.rate_due():
            control.due = True

    def _begin(self) -> None:
        self.started = True
        from tfstudio.engine.control import TrainingController

        mon = self.monitor
        if mon.control is None:
            mon.control = TrainingController(mon)
        optimizer = next((o for o in self._optimizers() if o is not None), self.optimizer)
        self.control = mon.control
        try:
            mon.control.begin(self._state, optimizer, mon.request_stop)
        except Exception as exc:  # noqa: BLE001
            mon.report_error("controls (custom loop)", exc)


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
