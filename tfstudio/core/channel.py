"""The only crossing between the training thread and its consumers.

Events go out, commands come in. Both directions are lock-free deques
(``append``/``popleft`` are atomic in CPython), so the training side never
waits on the UI and never drops an event: the consumer drains whatever is
queued at its own pace.
"""

from __future__ import annotations

from collections import deque

from tfstudio.core.commands import Command
from tfstudio.core.events import Event


class Channel:
    """Events from a run to its viewer, commands from the viewer to the run."""

    __slots__ = ("_events", "_commands")

    def __init__(self) -> None:
        self._events: deque[Event] = deque()
        self._commands: deque[Command] = deque()

    # -- training side -------------------------------------------------
    def emit(self, event: Event) -> None:
        """Queue one event; never blocks."""
        self._events.append(event)

    def has_commands(self) -> bool:
        """Cheap check for the per-step path: is any command waiting?"""
        return bool(self._commands)

    def take_commands(self) -> list[Command]:
        """Remove and return the waiting commands, oldest first."""
        taken: list[Command] = []
        pop = self._commands.popleft
        while True:
            try:
                taken.append(pop())
            except IndexError:
                return taken

    # -- consumer side -------------------------------------------------
    def send(self, command: Command) -> None:
        """Queue a command for the training thread."""
        self._commands.append(command)

    def drain(self) -> list[Event]:
        """Remove and return every queued event, oldest first."""
        taken: list[Event] = []
        pop = self._events.popleft
        while True:
            try:
                taken.append(pop())
            except IndexError:
                return taken

    def pending(self) -> int:
        """Number of events queued and not yet drained."""
        return len(self._events)
