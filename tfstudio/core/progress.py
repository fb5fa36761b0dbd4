"""Where a run stands: epoch, step, speed and time left.

Shared by the window's status bar and the terminal progress line, so both
report the same numbers.

After a checkpoint is restored every view follows one rule (docs/controls.md):
the run's step (the plots' x axis, the checkpoints, "paused at step N") goes back
to the checkpoint's step and counts on from there; the epoch and the step within
the epoch are Keras's own loop's, which a restore does not rewind (it goes on with
the epoch and batch it was at); so the fit ends after the batches it had left,
at run step :meth:`Progress.fit_end_step`, and progress and ETA count those.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from tfstudio.core.events import (
    CheckpointRestored,
    EpochEnded,
    FitEnded,
    FitStarted,
    RunEnded,
    RunState,
    StepColumns,
    StepEnded,
)
from tfstudio.core.formatting import format_duration, format_value

__all__ = ["Progress", "ProgressTracker", "format_duration", "format_value"]


@dataclass(slots=True)
class Progress:
    """Snapshot of a run's progress (plain values, ready to print)."""

    fit_index: int = -1
    model_name: str = ""
    epoch: int = 0  # 1-based for display; 0 before the first fit, or in a loop
    epochs: int = 0
    step: int = 0
    steps_per_epoch: int | None = None
    steps_per_execution: int = 1
    global_step: int = 0
    rate: float = 0.0  # steps per second
    eta: float | None = None  # seconds left in the current fit
    loss: float | None = None
    loss_key: str = ""
    paused: bool = False  # training is held: rate and ETA mean nothing until it resumes
    ended: bool = False  # the run ended (a failed or stopped one has no ETA)
    # the run step the running fit was last restored to (None: no restore in this fit)
    restored_step: int | None = None

    def fraction(self) -> float | None:
        """Share of the current fit's batches run, 0..1 (Keras's count), or None when
        unknown. A restore does not change it: Keras's epoch loop goes on where it was."""
        if not self.steps_per_epoch or not self.epochs:
            return None
        done = (self.epoch - 1) * self.steps_per_epoch + self.step
        return max(0.0, min(1.0, done / (self.epochs * self.steps_per_epoch)))

    def steps_left(self) -> int | None:
        """Steps the current fit has still to run (Keras's epoch loop), None when unknown."""
        if not self.steps_per_epoch or not self.epochs or self.fit_index < 0:
            return None
        left = (self.epochs - self.epoch) * self.steps_per_epoch + self.steps_per_epoch - self.step
        return max(0, left)

    def fit_end_step(self) -> int | None:
        """The run step at which the current fit will end (None when unknown): after a
        restore, the checkpoint's step plus the batches Keras's loop has left."""
        left = self.steps_left()
        return None if left is None else self.global_step + left

    def restore_note(self) -> str:
        """What the status line adds after a restore in this fit: ``run step 751``."""
        if self.restored_step is None:
            return ""
        return f"run step {self.global_step:,}"

    def restore_explanation(self) -> str:
        """A restore's effect on this fit's counts, in words (tooltips, empty without one)."""
        r = self.restored_step
        if r is None:
            return ""
        total = f" of {self.steps_per_epoch}" if self.steps_per_epoch else ""
        epochs = f" of {self.epochs}" if self.epochs else ""
        text = (
            f"Restored step {r:,}: the run's step (the plots' x axis, the checkpoints) went "
            f"back to {r:,} and counts on from there. Keras's epoch loop is not rewound by a "
            f"restore: this fit goes on in epoch {self.epoch}{epochs} at batch "
            f"{self.step}{total}, where it was"
        )
        end = self.fit_end_step()
        if end is not None:
            text += (
                f", so it ends at run step {end:,}; its epochs end (the dashed lines) where they "
                "really end, off the grid before the restore. Progress and ETA count the "
                "batches it has left"
            )
        return text + "."


class ProgressTracker:
    """Folds events into a :class:`Progress`; steps/s is smoothed over ~1 s.

    A fit's start, a pause, a resume or a restored checkpoint starts the rate afresh:
    the first step after it carries the trace or the paused time (and a restore moves
    the step back), so only the steps after it count.

    Args:
        window: seconds over which the step rate is averaged.
    """

    def __init__(self, window: float = 1.0) -> None:
        self.window = window
        self.progress = Progress()
        self._initial_epoch = 0
        # (time, global step) of the steps fed over the last ``window`` seconds, and the
        # newest one before them: the rate is the steps between the oldest and newest
        self._marks: deque[tuple[float, int]] = deque()

    def feed(self, event: object) -> None:
        """Update from one event; events of other kinds are ignored."""
        p = self.progress
        if type(event) is StepColumns:  # a block of steps: its first (rate restarted) and last
            if not len(event):
                return
            if self.wants_first_step and len(event) > 1:
                self.feed(event.row(0))
            event = event.row(-1)
        if isinstance(event, StepEnded):
            if p.paused:  # a step means training goes on (the resume event may lag)
                p.paused = False
                self._restart_rate()
            p.epoch = event.epoch + 1
            p.step = event.step
            p.global_step = event.global_step
            if p.loss_key not in event.running and p.loss_key not in event.values:
                # custom loops report their own values (and running values of their metrics)
                p.loss_key = _pick_loss_key([*event.values, *event.running])
            if p.loss_key:
                p.loss = event.values.get(p.loss_key, event.running.get(p.loss_key))
            self._update_rate(event.time, event.global_step)
        elif isinstance(event, FitStarted):
            p.fit_index = event.fit_index
            p.model_name = event.model.name
            p.epochs = event.epochs
            p.steps_per_epoch = event.steps_per_epoch
            p.steps_per_execution = event.steps_per_execution
            p.epoch = event.initial_epoch + 1 if event.epochs else 0  # the epoch it begins
            p.step = 0
            p.global_step = event.global_step
            p.eta = None
            p.restored_step = None  # a new fit counts its epochs from its start again
            self._initial_epoch = event.initial_epoch
            # The first step's time is mostly tracing (seconds, against milliseconds a
            # step after it): the rate is measured from the first step on, not the start.
            self._restart_rate()
        elif isinstance(event, EpochEnded):
            p.epoch = event.epoch + 1
        elif isinstance(event, FitEnded) and not event.stopped and p.epochs:
            p.eta = 0.0  # (a loop's length was never known: no ETA, not 0:00)
        elif isinstance(event, RunEnded):
            p.ended = True
            p.paused = False  # a run stopped while paused is no longer held: it ended
            if event.status != "finished":
                p.eta = None  # it will not end when the last estimate said
        elif isinstance(event, RunState):
            p.paused = event.state == "paused"
            p.global_step = event.global_step
            self._restart_rate()
        elif isinstance(event, CheckpointRestored):
            # The run's step goes back; the epoch and the step within it are Keras's
            # loop's, which goes on where it was (the module's docstring). A custom
            # loop's steps count from the run's: they go back alike.
            back = p.global_step - event.step
            p.global_step = event.step
            if p.fit_index >= 0 and p.epochs:
                p.restored_step = event.step
            elif p.fit_index >= 0:
                p.step = max(0, p.step - back)
            self._restart_rate()

    @property
    def wants_first_step(self) -> bool:
        """Whether a block of steps should be fed from its first row, not only its last.

        After a fit's start, a pause or a restore the rate is measured from the first
        step that follows: in a block, that is its first row.
        """
        return self.progress.paused or not self._marks

    def _restart_rate(self) -> None:
        """Forget the rate: the next two steps measure it again."""
        p = self.progress
        p.rate = 0.0
        p.eta = None
        self._marks.clear()

    def _update_rate(self, t: float, global_step: int) -> None:
        """Steps per second over the last ``window`` seconds (a sliding window: a stall,
        such as a trace of a loop's twin, weighs on it for one window, not until the
        next window ends)."""
        p = self.progress
        marks = self._marks
        if marks and (global_step < marks[-1][1] or t < marks[-1][0]):
            marks.clear()  # the step went back (a restore): measure anew
        marks.append((t, global_step))
        while len(marks) > 2 and t - marks[1][0] >= self.window:
            marks.popleft()  # the oldest kept is the newest one a window or more ago
        t0, s0 = marks[0]
        dt = t - t0
        if dt <= 0 or global_step <= s0:
            return
        p.rate = (global_step - s0) / dt
        left = p.steps_left()  # Keras's loop's: after a restore too (the module's docstring)
        p.eta = left / p.rate if left is not None and p.rate > 0 else None


def _pick_loss_key(running: dict[str, float] | object) -> str:
    keys = list(running)  # type: ignore[call-overload]
    if "loss" in keys:
        return "loss"
    for k in keys:
        if "loss" in k:
            return k
    return keys[0] if keys else ""
