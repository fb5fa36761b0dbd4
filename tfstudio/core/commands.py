"""What the user can ask of a running training.

Commands travel from the UI (or terminal) to the training thread through the
channel and are applied there at the next batch boundary.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Stop:
    """End training at the next batch boundary and skip the rest of the script."""


@dataclass(frozen=True, slots=True)
class Pause:
    """Hold training at the next batch boundary until Resume or Stop."""


@dataclass(frozen=True, slots=True)
class Resume:
    """Let a paused training go on."""


@dataclass(frozen=True, slots=True)
class SaveCheckpoint:
    """Save the model, its optimizer and the step now (between two steps)."""


@dataclass(frozen=True, slots=True)
class RestoreCheckpoint:
    """Load a checkpoint into the live model and optimizer (while paused).

    Args:
        path: a checkpoint prefix (``.../ckpt-7``) or a folder (its latest).
    """

    path: str


@dataclass(frozen=True, slots=True)
class DeleteCheckpoint:
    """Remove one of the run's checkpoints from disk."""

    path: str


@dataclass(frozen=True, slots=True)
class SetExecutionMode:
    """Switch ``run_eagerly`` at the next batch boundary (the train function is rebuilt)."""

    eager: bool


@dataclass(frozen=True, slots=True)
class SetLearningRate:
    """Set the optimizer's learning rate at the next batch boundary.

    Args:
        value: the new (constant) learning rate.
        replace_schedule: a schedule is only replaced by a constant when True
            (the user confirmed it); otherwise the command is refused.
    """

    value: float
    replace_schedule: bool = False


Command = (
    Stop
    | Pause
    | Resume
    | SaveCheckpoint
    | RestoreCheckpoint
    | DeleteCheckpoint
    | SetExecutionMode
    | SetLearningRate
)
