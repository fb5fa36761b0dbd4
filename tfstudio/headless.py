"""``tfstudio run SCRIPT``: a run in its worker process, shown in the terminal with a progress line.

Another viewer of the same worker stream the window reads; it never imports TensorFlow.
What the terminal shows, and why: ``headless_view.py`` (:class:`TerminalView`); the
progress line: ``headless_line.py``.
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
from tfstudio.core.options import RunOptions
from tfstudio.core.process import ProcessLauncher
from tfstudio.core.scripts import ScriptPathError, check_script
from tfstudio.core.system import ResourceWatch
from tfstudio.headless_line import ProgressLine, describe, plural
from tfstudio.headless_view import (
    HOLD_S,
    IDLE_S,
    LOG_EVERY_S,
    STARTUP_LOG,
    TerminalView,
    terminal_words,
)

__all__ = [
    "HOLD_S",
    "IDLE_S",
    "LOG_EVERY_S",
    "STARTUP_LOG",
    "ProgressLine",
    "TerminalView",
    "describe",
    "plural",
    "run_headless",
    "terminal_words",
]


def run_headless(
    script: str,
    args: Sequence[str] = (),
    options: RunOptions | None = None,
    verbose: bool = False,
) -> int:
    """Run ``script`` with ``args`` in a worker process, showing it in this terminal.

    Returns the script's exit status (128 + N when its process died of signal N).
    Ctrl-C stops training at the next batch boundary; pressing it again interrupts
    the script, then terminates it.

    Args:
        verbose: show TensorFlow's start-up messages (folded into one line otherwise).
    """
    started = time.perf_counter()
    # Our own handles on the terminal; the worker's output reaches us through pipes.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", errors="replace")
    err = os.fdopen(os.dup(sys.stderr.fileno()), "w", encoding="utf-8", errors="replace")
    try:
        return _run(script, args, options, out, err, verbose, started)
    finally:
        out.close()
        err.close()


def _run(
    script: str,
    args: Sequence[str],
    options: RunOptions | None,
    out: TextIO,
    err: TextIO,
    verbose: bool,
    started: float,
) -> int:
    try:
        path = check_script(script)
    except ScriptPathError as exc:
        err.write(f"tfstudio: cannot run: {exc}\n")
        return 2
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=False, keep_spare=False, own_terminal=True)
    line = ProgressLine(err, interactive=err.isatty())
    line.shares_terminal = out.isatty() == err.isatty()  # both a terminal, or one log
    view = TerminalView(line, out, err, verbose=verbose, started=started)
    interrupts = [0]

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        # Only count here: the loop below acts on it (writing from a signal handler
        # could re-enter a stream the loop is writing to). The terminal sends the
        # same SIGINT to the worker, which treats it as Stop too: one stop, not two.
        interrupts[0] += 1

    previous = signal.signal(signal.SIGINT, on_sigint)
    handled = 0
    watch = ResourceWatch()  # the device line at the start, peak memory in the summary
    # The worker's pump beats when asked (after the first ask; 20 a second before): ten a
    # second are enough for a terminal line, half the beats of the pump's own clock.
    next_pull = 0.0
    try:
        try:
            launcher.start(str(path), args, options)
        except RuntimeError as exc:
            err.write(f"tfstudio: cannot run: {exc}\n")
            return 1
        while view.ended is None:
            if interrupts[0] > handled:
                handled = interrupts[0]
                if handled == 1:
                    view.release(everything=True)  # the user's own action: said at once
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
            arrived = time.perf_counter()
            for event in events:
                watch.ingest(event)  # (its device line is the view's)
                view.take(event, arrived)
            view.release()
            if not events:
                time.sleep(0.02)
    finally:
        launcher.shutdown()
        watch.close()
        signal.signal(signal.SIGINT, previous)
    view.finish()
    line.print(f"tfstudio: {watch.summary()}")
    if view.run_dir:
        line.print(f"tfstudio: run recorded in {view.run_dir}")
    line.clear()
    assert view.ended is not None
    return view.ended.exit_code
