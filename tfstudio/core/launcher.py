"""How a viewer asks for runs, without knowing the engine behind it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tfstudio.core.commands import Command
from tfstudio.core.options import RunOptions


class Launcher(Protocol):
    """Starts and stops script runs; events arrive on the viewer's channel."""

    def start(
        self, script: str, args: Sequence[str] = (), options: RunOptions | None = None
    ) -> None:
        """Run ``script`` with ``args`` in the background; one run at a time."""
        ...

    def stop(self) -> None:
        """Stop the current run at the next batch boundary (or at once between fits)."""
        ...

    def send(self, command: Command) -> None:
        """Pass a command to the current run; applied at its next batch boundary."""
        ...

    def is_running(self) -> bool:
        """True while a run is in progress."""
        ...
