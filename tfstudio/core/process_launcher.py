"""ProcessLauncher: starts each run in a worker process (``core/process.py``) and is
the viewer's handle on it: a spare worker kept warm, stop, commands and pulls.

Implements core's ``Launcher``; the window and ``tfstudio run`` both use it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tfstudio.core.channel import Channel
from tfstudio.core.commands import Command, Stop
from tfstudio.core.events import ConsoleOutput, EngineStatus
from tfstudio.core.options import RunOptions
from tfstudio.core.process import (
    DRAIN_S,
    GRACE_S,
    LINGER_S,
    QUIET_PULL_S,
    ROUTINE_EVENTS,
    STAGE_S,
    RunSpec,
    _Worker,
)
from tfstudio.core.scripts import import_time_env_writes


class ProcessLauncher:
    """Starts each run in a worker process; implements core's ``Launcher``.

    ``quiet_pull_s`` (class attribute, :data:`QUIET_PULL_S`): how long nothing may come
    from a run before :meth:`pull` stops asking (None: it always asks).

    Args:
        channel: the viewer's channel; runs report there.
        script_cwd: run scripts in their own folder (the window) instead of the
            viewer's working directory (headless).
        warm: workers import TensorFlow before the script (unless the script sets
            variables TensorFlow reads at import).
        keep_spare: keep one warm worker waiting, so Run starts at once (the window).
        own_terminal: the worker shares the viewer's terminal (headless): stdin is
            passed through and it stays in the terminal's process group.
        python: the interpreter for workers (default: the viewer's own).
    """

    quiet_pull_s: float | None = QUIET_PULL_S

    def __init__(
        self,
        channel: Channel,
        *,
        script_cwd: bool = True,
        warm: bool = True,
        keep_spare: bool = True,
        own_terminal: bool = False,
        python: str | None = None,
    ) -> None:
        self.channel = channel
        self.script_cwd = script_cwd
        self.warm = warm
        self.keep_spare = keep_spare and warm
        self.own_terminal = own_terminal
        self.python = python or sys.executable
        self.current: _Worker | None = None
        self.spare: _Worker | None = None
        self._workers: set[_Worker] = set()  # every worker not yet reaped (ended runs too)
        self._lock = threading.RLock()
        self._closed = False
        self.last_start_cold: list[str] = []  # why the last run got a cold worker
        self.last_arrival = 0.0  # time.perf_counter() when a batch of events last arrived
        self.last_news = 0.0  # ... one with more than ROUTINE_EVENTS in it
        self.commanded_at = 0.0  # ... and when a command was last sent to a run
        # Called (on the sender's thread) after a command or a stop went to a run: the
        # window, resting while the run was quiet, paces up for its answer at once.
        self.command_listeners: list[Callable[[], None]] = []

    # -- spare -------------------------------------------------------------
    def prepare(self) -> None:
        """Start a spare worker (TensorFlow imported in advance) if there is none."""
        with self._lock:
            if self._closed or not self.keep_spare or self.spare is not None:
                return
            try:
                self.spare = _Worker(self, warm=True)
            except RuntimeError as exc:
                self.channel.emit(EngineStatus("error", str(exc)))

    def _worker_ready(self, worker: _Worker) -> None:
        if worker.import_error:
            self.channel.emit(
                EngineStatus("error", f"TensorFlow failed to import: {worker.import_error}")
            )
        elif worker is self.current or self.current is None:
            self.channel.emit(EngineStatus("ready"))

    def _worker_done(self, worker: _Worker) -> None:
        with self._lock:
            if worker is self.spare:
                self.spare = None
                return
            if worker is not self.current:
                return
            self.current = None
        if worker.assigned:
            self.prepare()

    # -- Launcher ------------------------------------------------------------
    def start(
        self, script: str, args: Sequence[str] = (), options: RunOptions | None = None
    ) -> None:
        """Start a run; raises RuntimeError if one is running or no worker can start."""
        path = Path(script).expanduser().resolve()
        cwd = str(path.parent) if self.script_cwd else os.getcwd()
        spec = RunSpec(str(path), tuple(args), cwd, not self.own_terminal, options or RunOptions())
        env_writes = import_time_env_writes(path)
        with self._lock:
            if self._closed:
                raise RuntimeError("the launcher was shut down")
            if self.current is not None:
                raise RuntimeError("a run is already in progress; stop it first")
            worker = None
            if self.warm and not env_writes and self.spare is not None:
                worker, self.spare = self.spare, None
                if worker.proc.poll() is not None:
                    worker = None  # the spare died: start afresh
            if worker is None:
                worker = _Worker(self, warm=self.warm and not env_writes)
            self.current = worker
            self.last_start_cold = env_writes
        if env_writes:
            spare, self.spare = self.spare, None
            if spare is not None:
                spare.close()
            worker.console(
                ConsoleOutput(
                    "tfstudio",
                    "The script sets " + ", ".join(env_writes) + ", which TensorFlow reads at "
                    "import: it runs in a fresh process that imports TensorFlow itself.\n",
                )
            )
        elif worker.warm and not worker.ready.is_set():
            self.channel.emit(EngineStatus("loading", "importing TensorFlow"))
        worker.assign(spec)

    def stop(self) -> None:
        """Stop the run: at the next batch boundary, then ever more firmly (see STAGES)."""
        worker = self.current
        if worker is not None:
            self.commanded_at = time.perf_counter()
            worker.escalate()
            self._commanded()

    def send(self, command: Command) -> None:
        """Pass a command to the current run (applied at its next batch boundary)."""
        if isinstance(command, Stop):
            self.stop()
            return
        worker = self.current
        if worker is not None:
            self.commanded_at = time.perf_counter()  # its answer is asked for at once
            worker.send(("command", command))
            self._commanded()

    def _commanded(self) -> None:
        for listener in list(self.command_listeners):
            listener()

    def note_batch(self, events: list[object]) -> None:
        """A batch of a run's events arrived now (the reader thread calls this).

        ``last_arrival`` always moves (the window times its pulls' answers by it);
        ``last_news`` only when the batch holds more than :data:`ROUTINE_EVENTS`: a
        run that sends nothing but its periodic figures stays quiet for :meth:`pull`.
        """
        now = time.perf_counter()
        self.last_arrival = now
        if any(type(e) not in ROUTINE_EVENTS for e in events):
            self.last_news = now

    def quiet(self) -> bool:
        """Whether the current run is quiet: asked once already, nothing but its routine
        figures came from it for ``quiet_pull_s`` and no command went to it since (a
        resume's answer is awaited). :meth:`pull` then sends nothing."""
        worker, quiet = self.current, self.quiet_pull_s
        if worker is None or not worker.pulled or quiet is None:
            return False
        return time.perf_counter() - max(self.last_news, self.commanded_at) > quiet

    def pull(self) -> bool:
        """Ask the current run's worker for what it emitted since its last batch, now.

        The window calls this just before it redraws (``ui/bridge.py``); a worker that
        was asked once then sends only when asked (or every ``PULL_FALLBACK_S``).
        False when no run is under way (before its start is reported, after its end),
        and when nothing came from the run for ``quiet_pull_s`` (nothing but its routine
        figures: :data:`ROUTINE_EVENTS`) and no command went to it: its own beat brings
        the next batch, and the asks start again with it.
        """
        worker = self.current
        if worker is None or not worker.run_seen or worker.ended is not None or self.quiet():
            return False
        sent = worker.send(("beat",))
        worker.pulled = worker.pulled or sent
        return sent

    def is_running(self) -> bool:
        """True from ``start`` until the run's end is on the channel."""
        return self.current is not None

    def pid(self) -> int | None:
        """Process id of the current run's worker, if any."""
        worker = self.current
        return worker.pid if worker is not None else None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the current run to end; True if none is running any more."""
        worker = self.current
        if worker is None:
            return True
        return worker.done.wait(timeout)

    def shutdown(self, timeout: float = GRACE_S + 3 * STAGE_S + DRAIN_S) -> None:
        """Stop the run (escalating as Stop does), end the spare, and reap every worker.

        No worker process outlives this call.
        """
        with self._lock:
            self._closed = True
            spare, self.spare = self.spare, None
        if spare is not None:
            spare.close()
        worker = self.current
        if worker is not None:
            deadline = time.monotonic() + timeout
            worker.escalate()
            while not worker.done.wait(0.05):
                if time.monotonic() >= deadline:
                    worker.signal(signal.SIGKILL)
                    worker.done.wait(DRAIN_S + 1)
                    break
            worker.thread.join(timeout=LINGER_S + STAGE_S + 1)
        if spare is not None:
            spare.thread.join(timeout=DRAIN_S + 2)
        # A run that has ended may still be reaped (a script's child holds its exit):
        # wait for that, then end whatever is left, so nothing outlives the viewer.
        for other in list(self._workers):
            other.thread.join(timeout=LINGER_S + STAGE_S + 1)
            if other.thread.is_alive() or other.alive():
                other.end_now()
