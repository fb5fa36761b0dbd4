"""The controller's step boundary: most steps only look at the loss, none misses its work.

``TrainingController.after_step`` skips the boundary's checks between two planned steps
(a learning-rate boundary, ``--stop-at-step``, ``--checkpoint-every``) unless a command
waits, a pause is due, or the step count went back. No TensorFlow: a controller without
a model, its slow path spied on.
"""

from __future__ import annotations

from tfstudio.core.channel import Channel
from tfstudio.core.commands import Resume
from tfstudio.core.options import RunOptions
from tfstudio.engine.control import LR_EVERY, TrainingController
from tfstudio.engine.monitor import RunMonitor


def controller(**options: object) -> tuple[TrainingController, list[int]]:
    """A model-less controller whose boundary work is recorded (the steps it ran at)."""
    mon = RunMonitor(Channel(), options=RunOptions(**options))
    control = TrainingController(mon)
    boundaries: list[int] = []
    slow = control._boundary

    def boundary() -> None:
        boundaries.append(mon.global_step)
        slow()

    control._boundary = boundary  # type: ignore[method-assign]
    return control, boundaries


def steps(control: TrainingController, n: int, loss: float | None = 0.5) -> None:
    for _ in range(n):
        control.monitor.global_step += 1
        control.after_step(loss)


def test_between_planned_steps_the_boundary_is_skipped_and_each_lr_boundary_is_looked_at():
    control, boundaries = controller()
    steps(control, 3 * LR_EVERY)
    # the first step (nothing planned yet), then each learning-rate boundary
    assert boundaries == [1, LR_EVERY, 2 * LR_EVERY, 3 * LR_EVERY]


def test_stop_at_step_and_checkpoint_schedules_are_planned_steps():
    control, boundaries = controller(stop_at_step=7)
    stopped: list[int] = []
    control._request_stop = lambda: stopped.append(control.monitor.global_step)
    steps(control, 12)
    assert stopped == [7]
    assert 7 in boundaries
    assert control.stop_at_reached

    control, boundaries = controller(checkpoint_every=4)
    saved: list[int] = []
    control._auto_save = lambda: saved.append(control.monitor.global_step)
    steps(control, 9)
    assert saved == [4, 8]

    control, boundaries = controller(checkpoint_minutes=1.0)  # a clock to read: every step
    steps(control, 5)
    assert boundaries == [1, 2, 3, 4, 5]


def test_a_command_is_applied_at_the_next_step_whenever_it_arrives():
    control, boundaries = controller()
    applied: list[int] = []
    control.apply_commands = lambda: (
        applied.append(control.monitor.global_step),
        control.monitor.channel.take_commands(),
    )
    steps(control, 3)
    control.monitor.channel.send(Resume())
    steps(control, 1)
    assert applied == [4]
    steps(control, 3)
    assert applied == [4]


def test_a_pause_from_the_nan_guard_waits_at_that_same_step():
    control, boundaries = controller(on_nan="pause")
    waited: list[int] = []
    control._on_non_finite = lambda loss, step=None: control.pause("non-finite loss")
    control.wait_while_paused = lambda: (
        waited.append(control.monitor.global_step),
        control.monitor.resume.set(),
    )
    steps(control, 3)
    steps(control, 1, loss=float("nan"))
    assert waited == [4]
    steps(control, 2, loss=float("inf"))  # the same NaN episode: no second pause
    assert waited == [4]


def test_a_step_count_that_went_back_before_the_plan_is_looked_at():
    control, boundaries = controller()
    steps(control, LR_EVERY + 5)  # planned at LR_EVERY: nothing due before 2 * LR_EVERY
    control.monitor.global_step = 3  # a restore sets the count back
    steps(control, 1)
    assert boundaries[-1] == 4
    control.monitor.global_step = 6  # back, but inside the planned stretch: nothing due
    steps(control, LR_EVERY - 6)
    assert boundaries == [1, LR_EVERY, 4, LR_EVERY]


def test_a_loss_that_is_not_finite_clears_when_a_finite_one_comes():
    control, _ = controller(on_nan="ignore")
    steps(control, 1, loss=float("nan"))
    assert not control._nan_active
    control, _ = controller(on_nan="pause")
    control._on_non_finite = lambda loss, step=None: None
    steps(control, 1, loss=float("nan"))
    assert control._nan_active
    steps(control, 1, loss=0.25)
    assert not control._nan_active
    assert control._last_loss == 0.25
