"""Run a script in a real worker process (as the window does) and collect what it reports."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tfstudio.core.channel import Channel
from tfstudio.core.events import RunEnded, step_rows
from tfstudio.core.options import RunOptions
from tfstudio.core.process import ProcessLauncher


def run_in_worker(
    script: Path,
    args: Sequence[str] = (),
    options: RunOptions | None = None,
    *,
    timeout: float = 300.0,
    on_events: Callable[[ProcessLauncher, list[object]], None] | None = None,
) -> tuple[RunEnded, list[object]]:
    """Run ``script`` in a worker; return its RunEnded and every event in order.

    ``on_events`` sees each batch as it arrives (to press Stop, kill something, ...).
    ``timeout`` is a safety net, never a measurement.
    """
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    events: list[object] = []
    ended: RunEnded | None = None
    try:
        launcher.start(str(script), tuple(args), options or RunOptions())
        deadline = time.monotonic() + timeout
        while ended is None:
            assert time.monotonic() < deadline, f"no RunEnded after {timeout} s"
            batch = channel.drain()
            if not batch:
                time.sleep(0.02)
                continue
            events.extend(batch)
            ended = next((e for e in batch if isinstance(e, RunEnded)), None)
            if on_events is not None and ended is None:
                on_events(launcher, batch)
    finally:
        launcher.shutdown()
    events.extend(channel.drain())
    return ended, events


def of(events: list[object], kind: type) -> list:
    """The events of one kind, in order (steps one by one: blocks of columns expanded)."""
    return [e for e in step_rows(events) if isinstance(e, kind)]
