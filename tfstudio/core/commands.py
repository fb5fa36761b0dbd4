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


Command = Stop | Pause | Resume
