"""``tfstudio run SCRIPT``: the engine without a window, with a terminal progress line."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import TextIO

from tfstudio.core.channel import Channel
from tfstudio.core.events import (
    ConsoleOutput,
    EpochEnded,
    FitStarted,
    MonitorError,
    RunEnded,
    StepEnded,
)
from tfstudio.core.options import RunOptions
from tfstudio.core.progress import ProgressTracker, format_duration, format_value
from tfstudio.engine.session import TrainingSession


class ProgressLine:
    """One status line at the bottom of a terminal, redrawn in place.

    On a terminal the line is rewritten with ``\\r`` at most ``hz`` times a
    second; elsewhere (logs, CI) one line is printed per epoch instead.
    """

    def __init__(self, out: TextIO, interactive: bool, hz: float = 10.0) -> None:
        self.out = out
        self.interactive = interactive
        self._interval = 1.0 / hz
        self._last_draw = 0.0
        self._shown = 0  # width of the line on screen

    def clear(self) -> None:
        """Erase the line (before other output is written)."""
        if self._shown:
            self.out.write("\r" + " " * self._shown + "\r")
            self.out.flush()
            self._shown = 0

    def draw(self, text: str, force: bool = False) -> None:
        """Show ``text`` in place (rate-limited unless ``force``)."""
        if not self.interactive:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < self._interval:
            return
        self._last_draw = now
        width = _terminal_width()
        text = text[: width - 1]
        pad = max(0, self._shown - len(text))
        self.out.write("\r" + text + " " * pad)
        self.out.flush()
        self._shown = len(text)

    def print(self, text: str) -> None:
        """Print a whole line above the progress line."""
        self.clear()
        self.out.write(text + "\n")
        self.out.flush()


def _terminal_width() -> int:
    try:
        return os.get_terminal_size(2).columns
    except OSError:
        return 120


def describe(tracker: ProgressTracker) -> str:
    """The progress line: step, epoch, loss, speed, time left."""
    p = tracker.progress
    step = f"step {p.step}/{p.steps_per_epoch}" if p.steps_per_epoch else f"step {p.step}"
    if p.steps_per_execution > 1:
        step += f" (every {p.steps_per_execution})"
    epoch = f"epoch {p.epoch}/{p.epochs}" if p.epochs else f"epoch {p.epoch}"
    fit = f"fit {p.fit_index + 1} " if p.fit_index > 0 else ""
    loss = f"{p.loss_key} {format_value(p.loss)}" if p.loss_key else ""
    frac = p.fraction()
    bar = _bar(frac) if frac is not None else ""
    parts = [
        f"{fit}{epoch}",
        step,
        loss,
        f"{p.rate:.0f} steps/s",
        f"ETA {format_duration(p.eta)}",
    ]
    return (
        f"{bar} " + " | ".join(x for x in parts if x) if bar else " | ".join(x for x in parts if x)
    )


def _bar(fraction: float, width: int = 20) -> str:
    filled = int(round(fraction * width))
    return "[" + "#" * filled + "." * (width - filled) + f"] {fraction * 100:3.0f}%"


def run_headless(script: str, args: Sequence[str] = (), options: RunOptions | None = None) -> int:
    """Run ``script`` with ``args`` in this terminal; returns the script's exit status.

    Ctrl-C stops training at the next batch boundary (press it twice to abort).
    """
    # Our own handles on the real terminal, taken before the run captures fds 1/2.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", errors="replace")
    err = os.fdopen(os.dup(sys.stderr.fileno()), "w", encoding="utf-8", errors="replace")
    try:
        return _run(script, args, out, err, options)
    finally:
        out.close()
        err.close()


def _run(
    script: str, args: Sequence[str], out: TextIO, err: TextIO, options: RunOptions | None = None
) -> int:
    channel = Channel()
    session = TrainingSession(script, args, channel, cwd=None, stdin_eof=False, options=options)
    tracker = ProgressTracker()
    line = ProgressLine(err, interactive=err.isatty())
    interrupts = [0]

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        # Only count here: the loop below acts on it (writing from a signal handler
        # could re-enter a stream the loop is writing to).
        interrupts[0] += 1
        if interrupts[0] > 1:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    session.start()
    ended: RunEnded | None = None
    asked_to_stop = False
    try:
        while ended is None:
            if interrupts[0] and not asked_to_stop:
                asked_to_stop = True
                line.print("tfstudio: stopping at the next batch boundary (Ctrl-C again to abort)")
                session.stop()
            events = channel.drain()
            if not events:
                time.sleep(0.02)
                continue
            for event in events:
                ended = _show(event, tracker, line, out, err) or ended
            if ended is None:
                line.draw(describe(tracker))
    finally:
        signal.signal(signal.SIGINT, previous)
    line.clear()
    return ended.exit_code


def _show(
    event: object, tracker: ProgressTracker, line: ProgressLine, out: TextIO, err: TextIO
) -> RunEnded | None:
    tracker.feed(event)
    if isinstance(event, StepEnded):
        return None
    if isinstance(event, ConsoleOutput):
        line.clear()
        stream = out if event.stream == "stdout" else err
        text = event.text
        if event.stream == "tfstudio":
            text = "tfstudio: " + text
        stream.write(text)
        stream.flush()
    elif isinstance(event, FitStarted):
        m = event.model
        line.print(
            f"tfstudio: fit {event.fit_index + 1}: {m.name} ({m.class_name}, "
            f"{m.total_params:,} params), {event.epochs} epochs"
            + (
                f", steps_per_execution={event.steps_per_execution}"
                if event.steps_per_execution > 1
                else ""
            )
        )
    elif isinstance(event, EpochEnded) and not line.interactive:
        metrics = " - ".join(f"{k}: {format_value(v)}" for k, v in event.metrics.items())
        line.print(f"tfstudio: epoch {event.epoch + 1}: {metrics}")
    elif isinstance(event, MonitorError):
        line.print(
            f"tfstudio: monitoring failed in {event.where} ({event.message}); "
            "training goes on without it"
        )
    elif isinstance(event, RunEnded):
        line.print("tfstudio: " + event.summary())
        return event
    return None
