"""Run a script through a real TrainingSession and collect its events."""

from __future__ import annotations

from pathlib import Path

from tfstudio.core.channel import Channel
from tfstudio.core.events import ConsoleOutput, RunEnded, step_rows
from tfstudio.engine.session import TrainingSession


def run_script(path: Path, args=(), **kwargs) -> tuple[RunEnded, list[object]]:
    """Run synchronously; return (RunEnded, all events in order)."""
    channel = Channel()
    session = TrainingSession(path, args, channel, **kwargs)
    ended = session.run()
    return ended, channel.drain()


def of(events: list[object], kind: type) -> list:
    """The events of one kind, in order (steps one by one: blocks of columns expanded)."""
    return [e for e in step_rows(events) if isinstance(e, kind)]


def console(events: list[object], stream: str | None = None) -> str:
    """Everything written to the console (optionally one stream)."""
    return "".join(
        e.text for e in of(events, ConsoleOutput) if stream is None or e.stream == stream
    )
