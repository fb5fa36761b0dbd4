"""Stop, pause, checkpoints and learning rate at custom-loop steps (``engine/control.py``).

The controls begin at a loop's first step, with what checkpoints hold as their "model"
(``engine/loop_state.py``: the models, modules and optimizers discovery found).
"""

from __future__ import annotations

from typing import Any

from tfstudio.engine.loops.series import LoopBook
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.script import RunStopped


class LoopControls:
    """The run's :class:`TrainingController` (made here when no fit made one) driven from
    custom-loop steps."""

    def __init__(self, monitor: RunMonitor, book: LoopBook) -> None:
        self.monitor = monitor
        self.book = book
        self.started = False
        self.optimizer: Any = None  # the last Keras optimizer seen applying gradients
        self.control: Any = None  # the run's TrainingController, once the controls began
        self._state: Any = None  # what checkpoints hold (engine/loop_state.py)
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
                from tfstudio.engine.loop_state import loop_state

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
        optimizer = self.optimizer
        current = self.book.current()
        for s in current.series if current is not None else ():
            if s.optimizer is not None:
                optimizer = s.optimizer
                break
        self.control = mon.control
        try:
            mon.control.begin(self._state, optimizer, mon.request_stop)
        except Exception as exc:  # noqa: BLE001
            mon.report_error("controls (custom loop)", exc)
