"""The learning rate of a live training: read, sent, watched, set (part of the controls).

:class:`LearningRateControl` is a part of :class:`~tfstudio.engine.control.TrainingController`
(the controls' state is one object: these methods use its optimizer, model and monitor).
A plain rate is not read every few steps: its variable's ``assign`` tells when it changes;
a schedule's rate is read at most every :data:`LR_MIN_S`. A ``train_step`` that applies
optimizers of its own (a GAN's) is followed after the fit's first step.
"""

from __future__ import annotations

import time
from typing import Any

from tfstudio.core.commands import SetLearningRate
from tfstudio.core.events import LearningRate, Notice
from tfstudio.engine.monitor import RunMonitor

LR_EVERY = 10  # steps between learning-rate events (the UI draws them as a line) ...
LR_MIN_S = 0.25  # ... and seconds: a fast fit reads its rate 4 times a second, not 60
# A plain rate no one assigned since it was sent is the same value again: said again this
# often (a record read elsewhere, TensorBoard's own view, draws it as a line), not every
# LR_MIN_S. The window holds a rate's last value to the newest step anyway, and each
# event splits the block of steps around it on the way (docs/benchmarks.md's history).
LR_REPEAT_S = 2.0


def _optimizer_candidates(model: Any, optimizer: Any) -> list[tuple[str, Any, int]] | None:
    """``model.optimizer`` and the Keras optimizers in the model's attributes, with their
    ``iterations`` now; None when there is no other optimizer (the usual case)."""
    import keras

    base = keras.optimizers.Optimizer
    others: list[tuple[str, Any]] = []
    for name, value in vars(model).items():
        if (
            isinstance(value, base)
            and value is not optimizer
            and all(value is not o for _, o in others)
        ):
            others.append((name, value))
    if not others:
        return None
    pairs = ([("optimizer", optimizer)] if optimizer is not None else []) + others
    return [(name, opt, int(opt.iterations.numpy())) for name, opt in pairs]


class LearningRateControl:
    """The controls' learning-rate part (mixed into ``TrainingController``)."""

    monitor: RunMonitor
    options: Any
    model: Any
    optimizer: Any
    due: bool
    _lr_sent: tuple[float, bool] | None
    _lr_step: int
    _lr_time: float
    _lr_watched: Any
    _lr_assigned: bool
    _schedule_fn: tuple[Any, Any, Any] | None
    _optimizers_to_check: list[tuple[str, Any, int]] | None
    _lr_option_fit: bool
    _followed_said: set[int]

    def rate_due(self) -> bool:
        """Whether the rate must be read to be known (a schedule, or a rate whose
        assignments cannot be watched) and its last value was sent LR_MIN_S ago or more."""
        return (
            self.optimizer is not None
            and self._lr_watched is None
            and time.monotonic() - self._lr_time >= LR_MIN_S
        )

    def _watch_rate(self, optimizer: Any) -> None:
        """Know when a plain (not scheduled) learning rate is assigned, so that it need
        not be read every few steps: its variable's ``assign`` tells us (an instance
        attribute over the method, removed at the fit's end; the assignment is unchanged)."""
        old = self._lr_watched
        if old is not None:
            self._lr_watched = None
            try:
                del old.assign
            except AttributeError:
                pass
        variable = getattr(optimizer, "_learning_rate", None)
        if variable is None or callable(variable) or not hasattr(variable, "__dict__"):
            return  # no rate, a schedule (it changes every step), or one we cannot watch
        if "assign" in vars(variable):
            return  # watched already (by another run's controller?): read it as before
        original = getattr(variable, "assign", None)
        if not callable(original):
            return

        def assign(value: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(value, *args, **kwargs)
            self._lr_assigned = self.due = True
            return result

        try:
            variable.assign = assign
        except (AttributeError, TypeError):
            return
        self._lr_watched = variable

    def _find_stepping_optimizer(self) -> None:
        """After a fit's first step: follow the optimizers its train_step applies.

        A custom ``train_step`` may apply optimizers of its own (a GAN's ``d_opt`` and
        ``g_opt``, given to an overridden ``compile``), while ``model.optimizer`` is
        Keras's default, never stepped: its rate would be plotted, and set, for
        nothing. The optimizers whose ``iterations`` moved are the ones that train.
        """
        candidates, self._optimizers_to_check = self._optimizers_to_check, None
        try:
            moved = [(n, o) for n, o, it in candidates or [] if int(o.iterations.numpy()) != it]
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("finding the optimizer that trains", exc)
            return
        if not moved or any(o is self.optimizer for _, o in moved):
            return  # model.optimizer trains (or nothing moved yet: leave it)
        name, optimizer = moved[0]
        self.optimizer = optimizer
        self._watch_rate(optimizer)
        self._lr_sent = None
        model = getattr(self.model, "name", "the model")
        applied = ", ".join(f"{n} ({type(o).__name__})" for n, o in moved)
        shown = "its" if len(moved) == 1 else f"{name}'s"
        if id(self.model) not in self._followed_said:  # once a model, not at every fit
            self._followed_said.add(id(self.model))
            self.monitor.note(
                f"{model}'s train_step applies {applied}, not model.optimizer: the learning "
                f"rate shown and set is {shown}."
            )
        if self._lr_option_fit:  # --lr went to model.optimizer before the first step
            self._set_learning_rate(SetLearningRate(self.options.lr, replace_schedule=True))
        self._send_learning_rate(force=True)

    def _learning_rate(self) -> tuple[float, bool, str] | None:
        opt = self.optimizer
        # (on the class: the property itself computes a schedule's rate, eagerly)
        if opt is None or not (
            hasattr(type(opt), "learning_rate") or "learning_rate" in getattr(opt, "__dict__", {})
        ):
            return None
        raw = getattr(opt, "_learning_rate", None)
        import keras

        keras_schedule = isinstance(raw, keras.optimizers.schedules.LearningRateSchedule)
        is_schedule = keras_schedule or (callable(raw) and not hasattr(raw, "assign"))
        if keras_schedule:
            value = self._schedule_value(opt, raw)
        else:
            from tfstudio.engine.probes.values import host_value

            value = float(host_value(opt.learning_rate))
        return value, is_schedule, type(raw).__name__ if is_schedule else ""

    def _schedule_value(self, opt: Any, schedule: Any) -> float:
        """A Keras schedule's rate now: ``schedule(opt.iterations)``, as the optimizer
        computes it, through a ``tf.function`` made once per schedule. Evaluated eagerly
        it took ~2.2 ms of the training thread (a dozen eager ops), up to 4 times a
        second; the function's call takes ~0.4 ms. Schedules are pure
        functions of the step, made to be traced (Keras traces them in its train step);
        other callables are still called eagerly."""
        cached = self._schedule_fn
        if cached is None or cached[0] is not schedule or cached[1] is not opt:
            import tensorflow as tf

            iterations = opt.iterations
            fn = tf.function(lambda: schedule(iterations), autograph=False)
            try:  # its concrete function: a call skips tf.function's argument matching
                concrete = fn.get_concrete_function()
            except Exception:  # noqa: BLE001 - a schedule that cannot be traced: eagerly
                concrete = None
            cached = self._schedule_fn = (schedule, opt, concrete)
        if cached[2] is None:
            rate = opt.learning_rate
            return float(rate.numpy() if hasattr(rate, "numpy") else rate)
        return float(cached[2]())

    def _send_learning_rate(self, force: bool = False) -> None:
        try:
            current = self._learning_rate()
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("reading the learning rate", exc)
            return
        if current is None:
            return
        value, is_schedule, schedule = current
        if force or self._lr_sent != (value, is_schedule):
            self._lr_sent = (value, is_schedule)
            mon = self.monitor
            self._lr_step, self._lr_time = mon.global_step, time.monotonic()
            mon.channel.emit(LearningRate(mon.global_step, value, is_schedule, schedule))

    def _set_learning_rate(self, command: SetLearningRate) -> None:
        import keras

        mon = self.monitor
        opt = self.optimizer
        if opt is None:
            mon.note("No optimizer to set a learning rate on.")
            return
        current = self._learning_rate()
        if current is not None and current[1]:
            if not command.replace_schedule:
                mon.channel.emit(
                    Notice(
                        "control",
                        f"The learning rate comes from a schedule ({current[2]}); it was not "
                        "changed. Confirm replacing the schedule with a constant to set it.",
                    )
                )
                self._send_learning_rate(force=True)
                return
            with keras.name_scope(opt.name, caller=opt):
                variable = keras.Variable(
                    float(command.value),
                    name="learning_rate",
                    trainable=False,
                    dtype=getattr(opt, "_learning_rate_dtype", None) or "float32",
                )
            opt._track_variable(variable)  # noqa: SLF001
            opt._learning_rate = variable  # noqa: SLF001
            if self.model is not None and not self.model.run_eagerly:
                self.model.make_train_function(force=True)  # the graph read the schedule
            mon.note(f"Learning rate schedule replaced by a constant {command.value:g}.")
        else:
            opt.learning_rate = float(command.value)
            mon.note(f"Learning rate set to {command.value:g} from step {mon.global_step + 1}.")
        self._send_learning_rate(force=True)
