"""What keeps the window alive and honest: garbage collected on the GUI thread, stalls reported.

**Garbage collection.** Python's cyclic collector runs on whichever thread happens to
allocate when a generation's count passes its threshold. In the window process that
can be a reader thread; if the garbage it collects holds a Qt object, the object is
destroyed on that thread while the GUI thread may hold the GIL and wait on a Qt lock:
the window deadlocks for good (seen once in about 20 runs). :class:`GuiThreadCollector`
turns automatic collection off and collects on the GUI thread on a timer, with the
interpreter's own thresholds, so memory stays bounded as before (pyqtgraph's
``GarbageCollector`` is the same idea).

**Stall report.** :class:`HangWatchdog` re-arms two kernel-side timers from a GUI-thread
timer once a second. If the GUI thread does not come back for ``after_s`` seconds they
fire without needing the GIL (so a GIL deadlock is reported too): ``faulthandler``
writes every thread's Python stack to a file in the user's state folder, and a
``SIGALRM`` handled by ``faulthandler`` writes them to stderr. A Python thread adds one
line that says what happened and where the file is (when the GIL lets it), and another
when the window responds again. While the window is healthy it costs a timer a second.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO

from PySide6.QtCore import QObject, QTimer

COLLECT_EVERY_MS = 100
HANG_AFTER_S = 5.0
BEAT_EVERY_MS = 1000


def state_dir() -> Path:
    """The per-user folder for tfstudio's own state ($XDG_STATE_HOME/tfstudio)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "tfstudio"


class GuiThreadCollector(QObject):
    """Automatic garbage collection off; the GUI thread collects on a timer instead."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = COLLECT_EVERY_MS) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        self.thresholds = gc.get_threshold()
        gc.disable()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.check)
        self.timer.start(interval_ms)

    def check(self) -> None:
        """Collect each generation whose count has passed its threshold (the interpreter's rule)."""
        counts = gc.get_count()
        if counts[0] > self.thresholds[0]:
            gc.collect(0)
            if counts[1] > self.thresholds[1]:
                gc.collect(1)
                if counts[2] > self.thresholds[2]:
                    gc.collect(2)

    def uninstall(self) -> None:
        """Stop collecting here and give automatic collection back (as it was)."""
        self.timer.stop()
        if self._was_enabled:
            gc.enable()


class HangWatchdog(QObject):
    """Reports a GUI thread silent for ``after_s`` seconds, with every thread's stack."""

    def __init__(
        self,
        parent: QObject | None = None,
        *,
        after_s: float = HANG_AFTER_S,
        folder: Path | None = None,
        stderr: IO[str] | None = None,
    ) -> None:
        super().__init__(parent)
        self.after_s = after_s
        self.stderr = stderr if stderr is not None else sys.stderr
        folder = folder if folder is not None else state_dir()
        self.path = folder / f"window-stall-{os.getpid()}.txt"
        self._file: IO[str] | None = None
        try:
            _forget_stale(folder)
            folder.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - kept open for the C dump
            self._file.write(
                f"tfstudio window (pid {os.getpid()}): stacks of all threads when it stopped "
                "responding, if any follow.\n"
            )
            self._file.flush()
        except OSError:
            self._file = None  # no state folder: stderr still gets the report
        self._beat = time.monotonic()
        self._stalled_since: float | None = None
        self.stalls = 0
        self._alarm = False
        self._stop = threading.Event()
        if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
            try:
                faulthandler.register(signal.SIGALRM, file=self.stderr, all_threads=True)
                self._alarm = True
            except (ValueError, OSError, AttributeError, RuntimeError):
                self._alarm = False  # stderr without a file descriptor (tests)
        self._arm()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.beat)
        self.timer.start(BEAT_EVERY_MS)
        self._thread = threading.Thread(target=self._watch, name="tfstudio-watchdog", daemon=True)
        self._thread.start()

    def _arm(self) -> None:
        if self._file is not None:
            faulthandler.dump_traceback_later(self.after_s, repeat=False, file=self._file)
        if self._alarm:
            signal.setitimer(signal.ITIMER_REAL, self.after_s)

    def beat(self) -> None:
        """The GUI thread is alive: push both timers on."""
        self._beat = time.monotonic()
        self._arm()

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            quiet = time.monotonic() - self._beat
            if self._stalled_since is None and quiet >= self.after_s + BEAT_EVERY_MS / 1000:
                self._stalled_since = self._beat
                self.stalls += 1
                if not self._alarm:  # no C-level dump on stderr: write the stacks here
                    self._write_stacks()
                where = "above" + (f" and in {self.path}" if self._file is not None else "")
                self._say(
                    f"tfstudio: the window has not responded for {quiet:.0f} s; "
                    f"stacks of all threads {where}"
                )
            elif self._stalled_since is not None and quiet < self.after_s:
                gone = time.monotonic() - self._stalled_since
                self._stalled_since = None
                self._say(f"tfstudio: the window responds again (after {gone:.0f} s)")

    def _write_stacks(self) -> None:
        try:
            faulthandler.dump_traceback(file=self.stderr, all_threads=True)
        except (ValueError, OSError, AttributeError, RuntimeError):
            import traceback

            frames = sys._current_frames()
            for ident, frame in frames.items():
                self.stderr.write(f"Thread {ident:#x}:\n")
                self.stderr.write("".join(traceback.format_stack(frame)))

    def _say(self, line: str) -> None:
        try:
            self.stderr.write(line + "\n")
            self.stderr.flush()
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        """Stop watching; the file goes if no stall was written to it."""
        self._stop.set()
        self.timer.stop()
        faulthandler.cancel_dump_traceback_later()
        if self._alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            faulthandler.unregister(signal.SIGALRM)
            self._alarm = False
        if self._file is not None:
            self._file.close()
            self._file = None
            if not self.stalls:
                self.path.unlink(missing_ok=True)


def _forget_stale(folder: Path) -> None:
    """Files of earlier windows that ended without a stall (a crash leaves them behind)."""
    if not folder.is_dir():
        return
    for path in folder.glob("window-stall-*.txt"):
        try:
            pid = int(path.stem.rsplit("-", 1)[1])
            if pid != os.getpid() and _alive(pid):
                continue
            if path.read_text(encoding="utf-8", errors="replace").count("\n") <= 1:
                path.unlink()
        except (ValueError, OSError):
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def install(parent: QObject) -> tuple[GuiThreadCollector, HangWatchdog]:
    """Both guards for the window process, owned by ``parent`` (the application)."""
    return GuiThreadCollector(parent), HangWatchdog(parent)
