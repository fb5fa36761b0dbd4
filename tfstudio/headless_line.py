"""``tfstudio run``'s progress line: one status line at the bottom of the terminal, and its text."""

from __future__ import annotations

import os
import time
from typing import TextIO

from tfstudio.core.progress import ProgressTracker, format_duration, format_value


def plural(n: int, word: str) -> str:
    """``1 epoch``, ``2 epochs``, ``1,000 steps``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


class ProgressLine:
    """One status line at the bottom of a terminal, redrawn in place.

    On a terminal the line is rewritten with ``\\r`` at most ``hz`` times a
    second; elsewhere (logs, CI) it is never drawn.

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
        self.script_wrote_at = -1e9  # when the script last wrote anything
        # The script's stdout and our line end up in one place (a terminal, or a log
        # of both): its open lines there are ours to respect.
        self.shares_terminal = interactive

    @property
    def interval(self) -> float:
        """Seconds between two draws of the line, at the most."""
        return self._interval

    @property
    def script_open(self) -> bool:
        """Whether the script's last output left its line unfinished."""
        return self._script_open

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
        self.script_wrote_at = time.monotonic()
        if "\r" in text:
            self._script_drew = self.script_wrote_at

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


def describe(tracker: ProgressTracker, label: str = "") -> str:
    """The progress line: step, epoch, loss, speed, time left.

    Args:
        label: which fit or loop runs (``fit 2``, ``loop 1``), shown when it is not the
            run's first segment; "" leaves it out.
    """
    p = tracker.progress
    if p.fit_index < 0 and not p.global_step:
        return "tfstudio: waiting for the first training step"
    step = f"step {p.step}/{p.steps_per_epoch}" if p.steps_per_epoch else f"step {p.step}"
    if p.steps_per_execution > 1:
        step += f" (every {p.steps_per_execution})"
    if p.restore_note():  # after a restore: the run's step beside Keras's (docs/controls.md)
        step += f" · {p.restore_note()}"
    epoch = f"epoch {p.epoch}/{p.epochs}" if p.epochs else ""
    fit = f"{label} " if label and p.fit_index > 0 else ""
    loss = f"{p.loss_key} {format_value(p.loss)}" if p.loss_key else ""
    frac = p.fraction()
    bar = _bar(frac) if frac is not None else ""
    parts = [
        f"{fit}{epoch}".strip(),
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
