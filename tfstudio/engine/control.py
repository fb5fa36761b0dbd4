"""The user's controls over a live training, applied between two steps.

:class:`TrainingController` is one per run. Whatever drives training calls it
at each step boundary (:meth:`TrainingController.after_step`) on the training
thread; today that is :class:`~tfstudio.engine.callback.StudioCallback`, and a
custom-loop hook can call the same methods (``begin``, ``after_step``, ``end``)
once it has found the loop's model and optimizer.

It applies commands (pause, resume, stop, save/restore/delete a checkpoint,
eager/graph, learning rate), the run's options (``--restore``, ``--lr``,
``--eager``/``--graph``, automatic checkpoints, ``--stop-at-step``) and the
NaN/Inf guard. Everything it does happens between steps, so it never races
the optimizer. Here: the fit's boundaries, the step boundary, commands, pause,
execution mode and the NaN guard; its checkpoints are ``control_checkpoints.py``'s,
its learning rate ``control_rate.py``'s (parts of the same object).

Custom loops that update variables themselves (``var.assign_sub(lr * grad)``)
have no optimizer and maybe no Keras model: there is no optimizer state to save
or restore and no learning rate to set, and a checkpoint could only hold the
loop's ``tf.Variable`` objects (once they are found); pause, resume, stop, stop
at step and the NaN guard's pause need only the step boundary.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tfstudio.core.commands import (
    DeleteCheckpoint,
    Pause,
    RestoreCheckpoint,
    Resume,
    SaveCheckpoint,
    SetExecutionMode,
    SetLearningRate,
    Stop,
)
from tfstudio.core.events import (
    ExecutionMode,
    LearningRate,
    NonFinite,
    Notice,
    RunState,
)
from tfstudio.core.locations import UrlPath
from tfstudio.engine.control_checkpoints import RESTORE_FAILED_EXIT_CODE, CheckpointControl
from tfstudio.engine.control_rate import (
    LR_EVERY,
    LR_MIN_S,
    LR_REPEAT_S,
    LearningRateControl,
    _optimizer_candidates,
)
from tfstudio.engine.monitor import RunMonitor

NAN_EXIT_CODE = 3  # the run was stopped because a step's loss was NaN or Inf
__all__ = ["LR_EVERY", "NAN_EXIT_CODE", "RESTORE_FAILED_EXIT_CODE", "TrainingController"]


class TrainingController(CheckpointControl, LearningRateControl):
    """Per-run control state: pause, checkpoints, execution mode, learning rate, NaN guard.

    Args:
        monitor: the run's shared counters, flags and channel; options come from it.
    """

    def __init__(self, monitor: RunMonitor) -> None:
        self.monitor = monitor
        self.options = monitor.options
        self.model: Any = None
        self.optimizer: Any = None
        self._request_stop: Callable[[], None] = lambda: None
        self._on_restored: Callable[[], None] = lambda: None
        self._store: Any = None
        self._store_model: Any = None
        self._directory: Path | UrlPath | None = None
        self._started_at = time.time()
        self._first_fit = True
        self._traces = 0
        self._hook: Any = None
        self._keeper: Any = None
        self._watcher: Any = None
        self._last_loss = math.nan
        self._nan_active = False
        self._last_auto_step = 0
        self._saves_failing = False  # the last save failed: repeated automatic failures are quiet
        self._last_auto_time = time.monotonic()
        self._lr_sent: tuple[float, bool] | None = None
        self._lr_step = 0
        self._lr_time = -math.inf  # when the rate was last sent
        self._lr_watched: Any = None  # the rate variable whose assign is watched
        self._lr_assigned = False  # it was assigned since the last step
        self._schedule_fn: tuple[Any, Any, Any] | None = None  # (schedule, optimizer, its read)
        # The next step boundary has work (a rate assigned, a schedule's value to send): a
        # graph loop's calls, which skip the step boundary when it has none, look at this.
        self.due = False
        self.eager: bool | None = self.options.eager
        self.stop_at_reached = False
        # A model whose train_step applies optimizers of its own (a GAN's d_opt and g_opt)
        # besides model.optimizer: [(name, optimizer, iterations at the fit's start)],
        # looked at once, after the fit's first step (None: nothing to look at).
        self._optimizers_to_check: list[tuple[str, Any, int]] | None = None
        self._check_after = 0
        # after_step's slow path runs for steps outside [_planned_at, _next_due) (_plan)
        self._planned_at = self._next_due = 0
        self._commands = monitor.channel.command_queue  # (the hot path's look at it)
        self._lr_option_fit = False  # this fit is the first: --lr went to its optimizer
        self._followed_said: set[int] = set()  # models whose optimizers the console named

    # -- fit boundaries ------------------------------------------------
    def begin(
        self,
        model: Any,
        optimizer: Any,
        request_stop: Callable[[], None],
        on_restored: Callable[[], None] = lambda: None,
    ) -> None:
        """A fit (or custom loop) starts: attach to its model and apply start options.

        Args:
            model: the Keras model trained (None for a loop without one).
            optimizer: its optimizer (None when the loop applies updates itself).
            request_stop: ends the training loop after this step.
            on_restored: called after a checkpoint was loaded (the loop resets its
                running means).
        """
        from tfstudio.engine.execution import (
            RetracingWatcher,
            install_step_hook,
            set_execution_mode,
        )
        from tfstudio.engine.nan_guard import BatchKeeper

        self.model = model
        self.optimizer = optimizer
        self._watch_rate(optimizer)
        self._request_stop = request_stop
        self._on_restored = on_restored
        keras_fit = model is not None and hasattr(model, "make_train_function")
        if keras_fit:  # a custom loop has no train_step to hook (its own hook counts)
            guard = self.options.on_nan != "ignore"
            hook = install_step_hook(
                model, BatchKeeper(armed=self.options.nan_batch) if guard else None
            )
            keeper = hook.keeper
            if keeper is not None and getattr(model, "jit_compile", False) is True:
                keeper.disabled = "the model is XLA-compiled (jit_compile=True)"
            hook.on_trace = self._on_trace
            self._keeper = keeper
            self._hook = hook
        if self._watcher is None:
            self._watcher = RetracingWatcher(self._on_retracing)
        self._watcher.attach()
        mon = self.monitor
        if not keras_fit and mon.hparams is not None:  # a custom loop: its optimizer
            mon.hparams.loop_began(optimizer)
        if self.eager is not None and keras_fit:
            set_execution_mode(model, self.eager)
        first, self._first_fit = self._first_fit, False
        self._lr_option_fit = first and self.options.lr is not None
        if first:
            if self.options.restore:
                self._restore_at_start(self.options.restore)
            if self.options.lr is not None and optimizer is not None:
                self._set_learning_rate(SetLearningRate(self.options.lr, replace_schedule=True))
            if self.options.checkpoint_every or self.options.checkpoint_minutes:
                self._emit_list()
        if keras_fit:
            eager = bool(model.run_eagerly)
            mon.channel.emit(ExecutionMode(eager, self._traces, mon.global_step))
            self._optimizers_to_check = _optimizer_candidates(model, optimizer)
            self._check_after = mon.global_step
        self._send_learning_rate(force=True)
        self._next_due = 0  # the fit's first step boundary looks at everything

    def end(self) -> None:
        """The fit ended: stop listening for retracing (the step hook stays for later fits)."""
        if self._hook is not None:
            self._hook.on_trace = None
        if self._watcher is not None:
            self._watcher.detach()
        self._watch_rate(None)

    # -- the step boundary (hot path) ----------------------------------
    def after_step(self, loss: float | None, step: int | None = None) -> None:
        """Called after every step: NaN guard, stop at step, automatic saves, commands, pause.

        Most steps have nothing to do but look at the loss: a comparison with the steps
        planned (:meth:`_plan`), the ``due`` flag and the command queue let them go (on
        the training thread, right after a step, each thing the hook touches costs
        several times what it costs in a loop: docs/benchmarks.md's history).
        """
        if loss is not None:
            if math.isfinite(loss):
                self._last_loss = loss
                if self._nan_active:
                    self._nan_active = False
            elif not self._nan_active and self.options.on_nan != "ignore":
                self._nan_active = True
                self._on_non_finite(loss, step)
        if self._planned_at <= self.monitor.global_step < self._next_due:
            if not self.due and not self._commands:
                return
        self._boundary()

    def _boundary(self) -> None:
        """The step boundary's work, when :meth:`after_step` found some may be due."""
        self.due = False
        mon = self.monitor
        step = mon.global_step
        if self._optimizers_to_check is not None and step > self._check_after:
            self._find_stepping_optimizer()
        opts = self.options
        if opts.stop_at_step is not None and step >= opts.stop_at_step and not self.stop_at_reached:
            self.stop_at_reached = True
            mon.note(f"Reached step {step} (--stop-at-step {opts.stop_at_step}): training ends.")
            self._request_stop()
        if opts.checkpoint_every and step // opts.checkpoint_every > (
            self._last_auto_step // opts.checkpoint_every
        ):
            self._auto_save()
        elif opts.checkpoint_minutes and (
            time.monotonic() - self._last_auto_time >= 60.0 * opts.checkpoint_minutes
        ):
            self._auto_save()
        if self._lr_assigned:  # the script (or a callback) set the rate: say so now
            self._lr_assigned = False
            self._send_learning_rate()
        elif step // LR_EVERY != self._lr_step // LR_EVERY:
            # a read costs ~0.1-0.25 ms (a variable read): at most 4 times a second, and
            # none for a plain rate that no one assigned since (its last value again,
            # every LR_REPEAT_S)
            now = time.monotonic()
            known = self._lr_watched is not None and self._lr_sent is not None
            if now - self._lr_time >= (LR_REPEAT_S if known else LR_MIN_S):
                self._lr_step, self._lr_time = step, now
                if known:
                    value, is_schedule = self._lr_sent
                    mon.channel.emit(LearningRate(step, value, is_schedule, ""))
                else:
                    self._send_learning_rate(force=True)
        if mon.channel.has_commands():
            self.apply_commands()
        if not mon.resume.is_set():
            self.wait_while_paused()
        self._plan()

    def _plan(self) -> None:
        """The next step at which a step-counted check is due: a learning-rate boundary
        (the rate's time-based check rides on those), the optimizer check after a fit's
        first step, ``--stop-at-step``, ``--checkpoint-every``; every step with
        ``--checkpoint-minutes`` (a clock to read). A step count that went back (a
        restore) is looked at too."""
        step = self.monitor.global_step
        nxt = step + 1 if self.options.checkpoint_minutes else (step // LR_EVERY + 1) * LR_EVERY
        if self._optimizers_to_check is not None:
            nxt = min(nxt, self._check_after + 1)
        opts = self.options
        if opts.stop_at_step is not None and not self.stop_at_reached:
            nxt = min(nxt, opts.stop_at_step)
        if opts.checkpoint_every:
            every = opts.checkpoint_every
            nxt = min(nxt, (max(step, self._last_auto_step) // every + 1) * every)
        self._planned_at, self._next_due = step, nxt

    # -- commands ------------------------------------------------------
    def apply_commands(self) -> None:
        """Apply every command waiting on the channel, in order."""
        mon = self.monitor
        for command in mon.channel.take_commands():
            try:
                self._apply(command)
            except Exception as exc:  # noqa: BLE001 - a failed control must not end training
                mon.report_error(f"command {type(command).__name__}", exc)
                mon.note(f"{type(command).__name__} failed: {type(exc).__name__}: {exc}")
        if mon.stop_requested.is_set():
            self._request_stop()

    def _apply(self, command: object) -> None:
        mon = self.monitor
        if isinstance(command, Stop):
            mon.request_stop()
        elif isinstance(command, Pause):
            self.pause("user")
        elif isinstance(command, Resume):
            mon.resume.set()
        elif isinstance(command, SaveCheckpoint):
            self.save()
        elif isinstance(command, RestoreCheckpoint):
            self.restore(command.path)
        elif isinstance(command, DeleteCheckpoint):
            self.delete(command.path)
        elif isinstance(command, SetExecutionMode):
            self.set_execution_mode(command.eager)
        elif isinstance(command, SetLearningRate):
            self._set_learning_rate(command)

    def pause(self, reason: str) -> None:
        """Hold training at this boundary (the wait happens in ``after_step``)."""
        mon = self.monitor
        if mon.resume.is_set():
            mon.resume.clear()
            self.due = True  # the next step boundary waits (after_step's slow path)
            mon.note("Paused." if reason == "user" else f"Paused: {reason}.")
            mon.channel.emit(RunState("paused", mon.global_step, reason))

    def wait_while_paused(self) -> None:
        """Block the training thread (no spinning) until Resume or Stop; apply commands."""
        mon = self.monitor
        while not mon.resume.wait(0.05):
            if mon.channel.has_commands():
                self.apply_commands()
        if mon.stop_requested.is_set():
            self._request_stop()
        else:
            mon.note("Resumed.")
            mon.channel.emit(RunState("running", mon.global_step))

    # -- execution mode ------------------------------------------------
    def set_execution_mode(self, eager: bool) -> None:
        """Switch eager/graph from the next step (also for later fits of this run)."""
        from tfstudio.engine.execution import set_execution_mode

        self.eager = bool(eager)
        mon = self.monitor
        if self.model is None or not hasattr(self.model, "make_train_function"):
            mon.note("The eager/graph switch applies to Keras fit (no train function here).")
            return
        changed = set_execution_mode(self.model, eager)
        if changed:
            mode = "eager" if eager else "graph"
            mon.note(f"Execution mode: {mode} from step {mon.global_step + 1}.")
        mon.channel.emit(ExecutionMode(bool(self.model.run_eagerly), self._traces, mon.global_step))

    def _on_trace(self, _count: int) -> None:
        self._traces += 1
        mon = self.monitor
        mon.channel.emit(ExecutionMode(False, self._traces, mon.global_step))

    def _on_retracing(self, text: str) -> None:
        self.monitor.channel.emit(Notice("retracing", text.strip()))

    # -- NaN guard -----------------------------------------------------
    def _on_non_finite(self, loss: float, step: int | None = None) -> None:
        """``step``: the offending step when it is not this one (a graph loop's, read from
        the device after more steps ran)."""
        from tfstudio.engine.nan_guard import diagnose, first_non_finite_variable

        mon = self.monitor
        at = mon.global_step if step is None else step
        action = "stop" if self.options.on_nan == "stop" else "pause"
        layer = gradient = variable = ""
        detail = ""
        try:
            variable = first_non_finite_variable(self.model.trainable_variables)
            keeper = self._keeper
            batch = keeper.last() if keeper is not None else None
            if not hasattr(self.model, "make_train_function"):
                detail = "a custom loop's batches are the script's own: none was recomputed"
            elif batch is None and keeper is not None and not keeper.disabled and not keeper.armed:
                detail = self._arm(keeper)
            elif batch is None:
                why = getattr(keeper, "disabled", "") or "the guard was off"
                detail = f"the offending batch was not kept: {why}"
            else:
                layer, gradient, detail = self._recompute(batch, diagnose)
                if not (layer or gradient or variable):
                    detail = f"no layer output or gradient was non-finite when {detail}"
        except Exception as exc:  # noqa: BLE001
            mon.report_error("NaN guard", exc)
            detail = f"recomputing the batch failed: {type(exc).__name__}: {exc}"
        event = NonFinite(at, float(loss), layer, gradient, variable, detail, action)
        mon.channel.emit(event)
        mon.note(event.describe())
        if action == "stop":
            mon.stop_exit_code = NAN_EXIT_CODE
            mon.stop_message = f"non-finite loss at step {at} (--on-nan stop)"
            mon.request_stop()
            self._request_stop()
        else:
            self.pause("non-finite loss")

    def _arm(self, keeper: Any) -> str:
        """Graph steps kept no batch (free until now): keep each from the next step on."""
        keeper.armed = True
        self.model.make_train_function(force=True)  # traced again at the next step
        return (
            "its batch was not kept; graph steps keep theirs from now on "
            "(from the start: --nan-batch)"
        )

    def _recompute(
        self, batch: Any, diagnose: Callable[..., tuple[str, str]]
    ) -> tuple[str, str, str]:
        """``diagnose`` on ``batch``, with the last checkpoint's weights if any (then put back)."""
        import tensorflow as tf

        model = self.model
        latest = None
        if self._store is not None and self._store_model is model:
            latest = self._store.manager.latest_checkpoint
        if latest is None:
            layer, gradient = diagnose(model, batch)
            return layer, gradient, "recomputed with the current weights (no checkpoint yet)"
        saved = [v.numpy() for v in model.variables]
        try:
            tf.train.Checkpoint(model=model).read(latest).expect_partial()
            layer, gradient = diagnose(model, batch)
        finally:
            for v, value in zip(model.variables, saved, strict=True):
                v.assign(value)
        return layer, gradient, f"recomputed with the weights of {Path(latest).name}"
