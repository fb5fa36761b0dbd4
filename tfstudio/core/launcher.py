"""How a viewer asks for runs, without knowing the engine behind it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Launcher(Protocol):
    """Starts and stops script runs; events arrive on the viewer's channel."""

    def start(self, script: str, args: Sequence[str] = ()) -> None:
        """Run ``script`` with ``args`` in the background; one run at a time."""
        ...

    def stop(self) -> None:
        """Stop the current run at the next batch boundary (or at once between fits)."""
        ...

    def is_running(self) -> bool:
        """True while a run is in progress."""
        ...
