"""``tfstudio run SCRIPT``: a run in its worker process, shown in the terminal with a progress line.

Another viewer of the same worker stream the window reads; it never imports TensorFlow.
"""

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
    Advice,
    ConsoleOutput,
    EngineStatus,
    EpochEnded,
    FitStarted,
    MonitorError,
    RunEnded,
    RunRecording,
    StepColumns,
    StepEnded,
)
from tfstudio.core.options import RunOptions
from tfstudio.core.process import ProcessLauncher
from tfstudio.core.progress import ProgressTracker, format_duration, format_value
from tfstudio.core.scripts import ScriptPathError, check_script
from tfstudio.core.system import ResourceWatch


class ProgressLine:
    """One status line at the bottom of a terminal, redrawn in place.

    On a terminal the line is rewritten with ``\\r`` at most ``hz`` times a
    second; elsewhere (logs, CI) one line is printed per epoch instead.

    The script shares the terminal. While its output holds a line open (Keras's
    own progress bar, redrawn with ``\\r``, or text with no newline yet) the line is
    the script's: ours is not drawn over it (the two bars would take turns, ten
    times a second), and a message of ours starts on a line of its own, not in
    the middle of the script's.

    Args:
        hold: seconds after the script last redrew a line in place during which
            ours stays hidden (Keras redraws its bar every 50 ms or so).
    """

    def __init__(self, out: TextIO, interactive: bool, hz: float = 10.0, hold: float = 1.5) -> None:
        self.out = out
        self.interactive = interactive
        self._interval = 1.0 / hz
        self._hold = hold
        self._last_draw = 0.0
        self._shown = 0  # width of the line on screen
        self._script_open = False  # the script's last output did not end its line
        self._script_drew = -1e9  # when the script last wrote a carriage return
        # The script's stdout and our line end up in one place (a terminal, or a log
        # of both): its open lines there are ours to respect.
        self.shares_terminal = interactive
        # The fit being run prints each epoch's metrics itself (its verbose is not 0).
        self.keras_prints_epochs = False

    @property
    def interval(self) -> float:
        """Seconds between two draws of the line, at the most."""
        return self._interval

    def clear(self) -> None:
        """Erase the line (before other output is written)."""
        if self._shown:
            self.out.write("\r" + " " * self._shown + "\r")
            self.out.flush()
            self._shown = 0

    def script_wrote(self, text: str) -> None:
        """The script's output went to the terminal (after :meth:`clear`)."""
        if not text:
            return
        self._script_open = not text.endswith("\n")
        if "\r" in text:
            self._script_drew = time.monotonic()

    def script_owns_line(self) -> bool:
        """Whether the script's output holds the bottom line (ours stays hidden)."""
        return self._script_open or time.monotonic() - self._script_drew < self._hold

    def draw(self, text: str, force: bool = False) -> None:
        """Show ``text`` in place (rate-limited unless ``force``)."""
        if not self.interactive or self.script_owns_line():
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
        """Print a whole line above the progress line (below a line the script left open)."""
        self.clear()
        if self._script_open:
            text = "\n" + text
            self._script_open = False
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
    if p.fit_index < 0 and not p.global_step:
        return "tfstudio: waiting for the first training step"
    step = f"step {p.step}/{p.steps_per_epoch}" if p.steps_per_epoch else f"step {p.step}"
    if p.steps_per_execution > 1:
        step += f" (every {p.steps_per_execution})"
    if p.restore_note():  # after a restore: the run's step beside Keras's (docs/controls.md)
        step += f" · {p.restore_note()}"
    epoch = f"epoch {p.epoch}/{p.epochs}" if p.epochs else ""
    fit = f"fit {p.fit_index + 1} " if p.fit_index > 0 else ""
    loss = f"{p.loss_key} {format_value(p.loss)}" if p.loss_key else ""
    frac = p.fraction()
    bar = _bar(frac) if frac is not None else ""
    parts = [
        f"{fit}{epoch}",
        step,
        loss,
        f"paused at step {p.global_step}" if p.paused else f"{p.rate:.0f} steps/s",
        "" if p.paused or not p.epochs else f"ETA {format_duration(p.eta)}",  # a loop has none
    ]
    return (
        f"{bar} " + " | ".join(x for x in parts if x) if bar else " | ".join(x for x in parts if x)
    )


def _bar(fraction: float, width: int = 20) -> str:
    filled = int(round(fraction * width))
    return "[" + "#" * filled + "." * (width - filled) + f"] {fraction * 100:3.0f}%"


def run_headless(script: str, args: Sequence[str] = (), options: RunOptions | None = None) -> int:
    """Run ``script`` with ``args`` in a worker process, showing it in this terminal.

    Returns the script's exit status (128 + N when its process died of signal N).
    Ctrl-C stops training at the next batch boundary; pressing it again interrupts
    the script, then terminates it.
    """
    # Our own handles on the terminal; the worker's output reaches us through pipes.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", errors="replace")
    err = os.fdopen(os.dup(sys.stderr.fileno()), "w", encoding="utf-8", errors="replace")
    try:
        return _run(script, args, options, out, err)
    finally:
        out.close()
        err.close()


def _run(
    script: str, args: Sequence[str], options: RunOptions | None, out: TextIO, err: TextIO
) -> int:
    try:
        path = check_script(script)
    except ScriptPathError as exc:
        err.write(f"tfstudio: cannot run: {exc}\n")
        return 2
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=False, keep_spare=False, own_terminal=True)
    tracker = ProgressTracker()
    line = ProgressLine(err, interactive=err.isatty())
    line.shares_terminal = out.isatty() == err.isatty()  # both a terminal, or one log
    interrupts = [0]

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        # Only count here: the loop below acts on it (writing from a signal handler
        # could re-enter a stream the loop is writing to). The terminal sends the
        # same SIGINT to the worker, which treats it as Stop too: one stop, not two.
        interrupts[0] += 1

    previous = signal.signal(signal.SIGINT, on_sigint)
    ended: RunEnded | None = None
    handled = 0
    watch = ResourceWatch()  # the device line at the start, peak memory in the summary
    run_dir: list[str | None] = [None]
    # The worker's pump beats when asked (after the first ask; 20 a second before): ten a
    # second are enough for a terminal line, half the beats of the pump's own clock.
    next_pull = 0.0
    try:
        try:
            launcher.start(str(path), args, options)
        except RuntimeError as exc:
            err.write(f"tfstudio: cannot run: {exc}\n")
            return 1
        while ended is None:
            if interrupts[0] > handled:
                handled = interrupts[0]
                if handled == 1:
                    line.print(
                        "tfstudio: stopping at the next batch boundary "
                        "(Ctrl-C again to interrupt the script)"
                    )
                launcher.stop()
            now = time.monotonic()
            if now >= next_pull:  # the run's batch, at the progress line's rate
                next_pull = now + line.interval
                launcher.pull()
            events = channel.drain()
            if not events:
                time.sleep(0.02)
                continue
            for event in events:
                if isinstance(event, RunRecording):
                    run_dir[0] = event.run_dir
                device = watch.ingest(event)
                if device is not None:
                    line.print(f"tfstudio: {device}")
                ended = _show(event, tracker, line, out, err) or ended
            if ended is None:
                line.draw(describe(tracker))
    finally:
        launcher.shutdown()
        watch.close()
        signal.signal(signal.SIGINT, previous)
    line.print(f"tfstudio: {watch.summary()}")
    if run_dir[0]:
        line.print(f"tfstudio: run recorded in {run_dir[0]}")
    line.clear()
    return ended.exit_code


def _show(
    event: object, tracker: ProgressTracker, line: ProgressLine, out: TextIO, err: TextIO
) -> RunEnded | None:
    tracker.feed(event)
    if isinstance(event, StepEnded | StepColumns):
        return None
    if isinstance(event, ConsoleOutput):
        if event.stream == "tfstudio":  # ours: on a line of its own
            line.print("tfstudio: " + event.text.removesuffix("\n"))
            return None
        line.clear()
        stream = out if event.stream == "stdout" else err
        stream.write(event.text)
        stream.flush()
        if line.shares_terminal or stream is err:
            line.script_wrote(event.text)
    elif isinstance(event, FitStarted) and event.kind == "loop":
        line.print(f"tfstudio: {event.title()} (custom training loop)")
    elif isinstance(event, FitStarted):
        line.keras_prints_epochs = event.verbose != 0
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
    elif isinstance(event, EpochEnded) and not line.interactive and not line.keras_prints_epochs:
        # (on a terminal the progress line shows the epoch; Keras's own output, when the
        # fit's verbose is not 0, already has its metrics)
        metrics = " - ".join(f"{k}: {format_value(v)}" for k, v in event.metrics.items())
        line.print(f"tfstudio: epoch {event.epoch + 1}: {metrics}")
    elif isinstance(event, EngineStatus) and event.state == "error":
        line.print(f"tfstudio: {event.detail}")
    elif isinstance(event, Advice):
        line.print(
            f"tfstudio: advice: {event.location() or '-'}: {event.describe()}  fix: {event.fix}"
        )
    elif isinstance(event, MonitorError):
        line.print(
            f"tfstudio: monitoring failed in {event.where} ({event.message}); "
            "training goes on without it"
        )
    elif isinstance(event, RunEnded):
        line.print("tfstudio: " + event.summary())
        return event
    return None
