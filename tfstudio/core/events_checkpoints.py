"""Events of checkpoints: saved, restored, refused, deleted, listed.

Part of the event vocabulary: import them from :mod:`tfstudio.core.events`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfstudio.core.events_pickling import fast_pickling


@dataclass(frozen=True, slots=True)
class CheckpointSaved:
    """A checkpoint of the model, its optimizer and the step was written.

    Args:
        path: the checkpoint prefix (``.../ckpt-3``); restore and delete take it.
        step: the run's global step at save.
        time: seconds since the run started.
        loss: the last step's loss at save (NaN when unknown).
        wall_time: ``time.time()`` at save.
        seconds: how long the save took.
        automatic: saved by the every-N-steps/minutes rule, not on request.
    """

    path: str
    step: int
    time: float
    loss: float
    wall_time: float
    seconds: float = 0.0
    automatic: bool = False


@dataclass(frozen=True, slots=True)
class CheckpointRestored:
    """A checkpoint was loaded into the live model and optimizer; training goes on from ``step``.

    Every view forgets what the run showed after ``step`` (the run's history is the
    one it goes on with), live and when the recorded run is reopened.

    Args:
        time: seconds since the run started, when it was restored.
    """

    path: str
    step: int
    optimizer_iterations: int
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class CheckpointRefused:
    """A checkpoint could not be saved, restored or deleted; the live model is unchanged.

    Args:
        action: ``"save"``, ``"restore"`` or ``"delete"``.
        reason: what did not match or failed, in words.
    """

    path: str
    action: str
    reason: str


@dataclass(frozen=True, slots=True)
class CheckpointDeleted:
    """A checkpoint was removed from disk (and from the run's list)."""

    path: str


@dataclass(frozen=True, slots=True)
class CheckpointList:
    """The checkpoints a run's folder holds (sent when the folder is first used).

    Args:
        directory: the run's checkpoint folder.
        entries: ``CheckpointSaved`` records of the checkpoints still on disk.
    """

    directory: str
    entries: tuple[CheckpointSaved, ...]


fast_pickling(globals())
