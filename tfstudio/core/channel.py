"""The only crossing between the training thread and its consumers.

Events go out, commands come in. Both directions are lock-free deques
(``append``/``popleft`` are atomic in CPython), so the training side never
waits on the UI and never drops an event: the consumer drains whatever is
queued at its own pace.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from tfstudio.core.commands import Command
from tfstudio.core.events import Event


class Channel:
    """Events from a run to its viewer, commands from the viewer to the run.

    Args:
        commands_of: take the commands sent to that channel (an in-process run emits
            on a channel of its own, which its pump drains into the viewer's channel,
            while the viewer sends commands on the viewer's channel).
    """

    __slots__ = ("_events", "_commands")

    def __init__(self, commands_of: Channel | None = None) -> None:
        self._events: deque[Event] = deque()
        self._commands: deque[Command] = (
            commands_of._commands if commands_of is not None else deque()
        )

    # -- training side -------------------------------------------------
    def emit(self, event: Event) -> None:
        """Queue one event; never blocks."""
        self._events.append(event)

    def emit_all(self, events: Iterable[object]) -> None:
        """Queue several events, in order; never blocks."""
        self._events.extend(events)

    def has_commands(self) -> bool:
        """Cheap check for the per-step path: is any command waiting?"""
        return bool(self._commands)

    def take_commands(self) -> list[Command]:
        """Remove and return the waiting commands, oldest first."""
        return _take_all(self._commands)

    # -- consumer side -------------------------------------------------
    def send(self, command: Command) -> None:
        """Queue a command for the training thread."""
        self._commands.append(command)

    def drain(self) -> list[Event]:
        """Remove and return every queued event, oldest first."""
        return _take_all(self._events)

    def pending(self) -> int:
        """Number of events queued and not yet drained."""
        return len(self._events)


def _take_all(queue: deque) -> list:
    """Pop everything queued, oldest first; safe while another thread appends."""
    taken: list = []
    pop = queue.popleft
    while True:
        try:
            taken.append(pop())
        except IndexError:
            return taken
