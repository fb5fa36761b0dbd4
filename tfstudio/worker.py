"""``python -m tfstudio.worker``: one run of a user's script in a process of its own.

The viewer (window or ``tfstudio run``) starts this process through
:class:`tfstudio.core.process.ProcessLauncher`. The user's script runs on this
process's **main thread**, exactly as ``python script.py`` would (signals,
``__main__``, argv, cwd, a fresh TensorFlow runtime). A pump thread sends the
run's events to the viewer in batches every few tens of milliseconds and
receives commands, which the training side applies at batch boundaries. The pump
is ``core/pump.py``'s: the viewer is its first sink (:class:`PipeSink`), the
recorder the next.

Wire protocol (``multiprocessing.connection`` over a socket pair inherited from
the viewer; nothing listens anywhere):

    worker -> viewer  ("hello", pid) | ("ready", tf_version) | ("import-failed", text)
                      | ("events", [event, ...]) | ("done", exit_code)
    viewer -> worker  ("run", RunSpec) | ("command", Command) | ("stop",) | ("interrupt",)
                      | ("exit",) | ("beat",)

``("beat",)`` is a *pull*: the window asks for what the run emitted, just before it
redraws (see ``ui/bridge.py``), and the pump hands it on at once. Once a viewer has
pulled, the pump beats only when asked (or every :data:`PULL_FALLBACK_S`, for the
recorder and the live advisor while the window does not ask); ``tfstudio run`` asks
ten times a second, and a viewer that never asks gets a batch every 50 ms.

Python's ``sys.stdout``/``sys.stderr`` write straight to two pipes of their own;
fds 1 and 2 are two more pipes (``tf.print``, C++ logs, subprocesses), so the
viewer can label what it shows, and output written just before a crash is not lost.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any

from tfstudio.core.channel import Channel, coalesce
from tfstudio.core.commands import Stop
from tfstudio.core.events import MonitorError, StepColumns
from tfstudio.core.process import RUN_TOKEN_ENV, RunSpec, kill_run_processes
from tfstudio.core.pump import EventSink, Pump
from tfstudio.engine.capture import TextStream, write_all

VIEWER_LOST_S = 1.0  # the viewer is gone: the record is closed within this, then the run ends
MAX_PENDING_ROWS = 200_000  # steps queued for a slow viewer before its copy is coalesced
COALESCE_BUCKET = 16  # then each 16 steps reach it as their minimum and maximum
SYNC_TIMEOUT_S = 2.0  # an explicit flush waits this long at most for the viewer
# A viewer that pulls: a beat at least this often when it does not ask (the recorder and
# the live advisor still get the steps while the window is busy elsewhere).
PULL_FALLBACK_S = 0.25


class PipeSink:
    """The pump's first sink in the worker: batches go to the viewer, never waiting on it.

    ``write`` queues the batch and wakes a sender thread, which sends the batches queued
    meanwhile as one message (a blocking send: only the sender thread waits on a slow
    viewer). When the viewer falls behind (more than :data:`MAX_PENDING_ROWS` steps
    queued), the queued steps are coalesced (:func:`tfstudio.core.channel.coalesce`): the
    viewer's copy keeps each metric's envelope, the recorder (a later sink) still gets
    every step, and the worker's memory stays bounded. :meth:`sync` waits until
    everything is sent.

    Args:
        conn: the connection to the viewer.
        lost: called when the viewer is gone (the connection broke).
    """

    def __init__(self, conn: Connection, lost: Callable[[], None]) -> None:
        self.conn = conn
        self.lost = lost
        self.unsent: list[object] = []  # what the viewer could no longer take
        self.coalesced_blocks = 0  # blocks of steps the viewer got thinned
        self._queue: list[list[object]] = []
        self._rows = 0  # steps queued
        self._busy = False  # the sender thread is sending a message
        self._dead = False
        self._closed = False
        lock = threading.Lock()
        self._work = threading.Condition(lock)  # the sender thread waits here for work
        self._idle = threading.Condition(lock)  # sync() waits here for all to be sent
        self._thread = threading.Thread(target=self._run, name="tfstudio-pipe", daemon=True)
        self._thread.start()

    def write(self, events: list[object]) -> None:
        """Queue the batch for the sender thread (nothing when it is empty); never waits."""
        if not events:
            return
        with self._work:
            if self._dead:
                self.unsent.extend(events)
                return
            self._queue.append(events)
            self._rows += _rows(events)
            if self._rows > MAX_PENDING_ROWS:
                self._coalesce_locked()
            self._work.notify()

    def sync(self, timeout: float | None = SYNC_TIMEOUT_S) -> bool:
        """Wait until everything queued was sent (or the viewer is gone); False on timeout."""
        with self._idle:
            return self._idle.wait_for(
                lambda: self._dead or (not self._queue and not self._busy), timeout
            )

    def close(self) -> None:
        """Send what is queued, then end the sender (the worker sends ``done`` after this)."""
        self.sync(timeout=None)
        with self._work:
            self._closed = True
            self._work.notify_all()
        self._thread.join(timeout=5)

    def _gone(self, events: list[object]) -> None:
        """The viewer is gone: keep what it did not get, wake every waiter, say so."""
        with self._work:
            self.unsent = events + [e for batch in self._queue for e in batch]
            self._queue = []
            self._dead = True
            self._busy = False
            self._work.notify_all()
            self._idle.notify_all()
        self.lost()  # the recorder had them already (the pump hands batches to all)

    def _coalesce_locked(self) -> None:
        rows = 0
        queue = []
        for batch in self._queue:
            thinned = []
            for event in batch:
                if type(event) is StepColumns and len(event) > 2:
                    event = coalesce(event, COALESCE_BUCKET)
                    self.coalesced_blocks += 1
                thinned.append(event)
            rows += _rows(thinned)
            queue.append(thinned)
        self._queue = queue
        self._rows = rows

    def _run(self) -> None:
        while True:
            with self._work:
                while not self._closed and not self._queue:
                    self._work.wait()
                if self._dead or not self._queue:  # gone, or closed with all sent
                    return
                events = [e for batch in self._queue for e in batch]
                self._queue = []
                self._rows = 0
                self._busy = True
            try:
                self._send(events)
            except (EOFError, OSError):
                self._gone(events)
                return
            with self._work:
                self._busy = False
                self._idle.notify_all()

    def _send(self, events: list[object]) -> None:
        try:
            self.conn.send(("events", events))
        except (EOFError, BrokenPipeError, ConnectionResetError):
            raise
        except Exception:  # noqa: BLE001 - one unpicklable event must not lose the others
            for event in events:
                try:
                    self.conn.send(("events", [event]))
                except (EOFError, BrokenPipeError, ConnectionResetError):
                    raise
                except Exception as exc:  # noqa: BLE001
                    note = MonitorError(
                        "sending events",
                        f"{type(event).__name__} could not be sent: {exc}",
                        traceback.format_exc(),
                    )
                    self.conn.send(("events", [note]))


def _rows(events: list[object]) -> int:
    """How many steps a batch holds (as columns)."""
    return sum(len(e) for e in events if type(e) is StepColumns)  # type: ignore[arg-type]


class WorkerPump(Pump):
    """The worker's pump: events out through a :class:`PipeSink`, commands in from the viewer.

    Between two batches it waits on the connection, so a command is taken at once.

    Args:
        conn: the connection to the viewer.
        channel: the session's channel.
        on_stop: called when the viewer asks the run to stop.
        on_interrupt: called when the viewer escalates a stop to an interrupt.
        sinks: also get every batch, after the viewer (e.g. a recorder).
    """

    def __init__(
        self,
        conn: Connection,
        channel: Channel,
        on_stop: Callable[[], None],
        on_interrupt: Callable[[], None] = lambda: None,
        sinks: Sequence[EventSink] = (),
    ) -> None:
        self.pipe = PipeSink(conn, self._viewer_lost)
        super().__init__(channel, [self.pipe, *sinks], wait=self._receive)
        self.conn = conn
        self.on_stop = on_stop
        self.on_interrupt = on_interrupt
        self.pulled = False  # the viewer asks for each batch (see the module's docstring)
        self._poller: Any = None
        self._conn_fd = conn.fileno()
        # close() writes here: the pump's wait (up to PULL_FALLBACK_S) ends at once
        self._wake_r, self._wake_w = os.pipe()

    def _viewer_lost(self) -> None:
        """No one is watching any more: close the record as interrupted, then end the run.

        The other sinks (the recorder) get what is still queued (they already had what
        the viewer could not take), then close without a ``RunEnded``: the run folder says
        ``interrupted``. A timer ends the process anyway if closing hangs (a remote disk).
        """
        if self.closing:
            return
        timer = threading.Timer(VIEWER_LOST_S, _die_with_viewer)
        timer.daemon = True
        timer.start()
        try:
            if self._lock.acquire(timeout=VIEWER_LOST_S / 2):  # re-entrant: from a flush too
                try:
                    # the sinks already got every batch the pipe had queued: only what is new
                    events = self.channel.drain()
                    for sink in self.sinks:
                        if sink is self.pipe:
                            continue
                        try:
                            sink.write(events)
                            sink.close()
                        except Exception:  # noqa: BLE001 - ending anyway
                            pass
                finally:
                    self._lock.release()
        finally:
            _die_with_viewer()

    def _receive(self, timeout: float) -> None:
        """Wait for a message from the viewer, at most ``timeout`` (or, once the viewer
        pulls, :data:`PULL_FALLBACK_S`); the pump hands on a batch when this returns."""
        if self.pulled:
            timeout = PULL_FALLBACK_S
        try:
            if self._poller is None:  # one poll object for the run: the wait is a syscall
                self._poller = select.poll()
                self._poller.register(self._conn_fd, select.POLLIN)
                self._poller.register(self._wake_r, select.POLLIN)
            ready = self._poller.poll(timeout * 1000.0)
            # the poll object's answer, not conn.poll() (which builds a selector each
            # call: a pull, up to 30 a second, is a message to read)
            while any(fd == self._conn_fd for fd, _ in ready):
                self._handle(self.conn.recv())
                ready = self._poller.poll(0)
        except (EOFError, OSError):
            self._viewer_lost()
            self._closing.wait(timeout)  # closing anyway: no busy loop on a dead connection

    def close(self) -> None:
        """Stop the pump (its wait ends at once), hand on the last events, close the sinks."""
        self._closing.set()
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass  # closed already
        super().close()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._wake_r = self._wake_w = -1

    def _handle(self, message: tuple) -> None:
        kind = message[0]
        if kind == "command":
            command = message[1]
            if isinstance(command, Stop):
                self.on_stop()
            else:
                self.channel.send(command)
        elif kind == "beat":
            self.pulled = True  # returning from the wait hands the batch on
        elif kind in ("stop", "exit"):
            self.on_stop()
        elif kind == "interrupt":
            self.on_interrupt()


def _die_with_viewer() -> None:
    """The viewer is gone (window closed or killed): end this run and its children now."""
    token = os.environ.get(RUN_TOKEN_ENV)
    if token:
        kill_run_processes(token)  # children in any process group
    try:
        if os.getpgid(0) == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    except OSError:
        os._exit(137)


class _StopSignals:
    """How Stop and SIGINT reach the script in the worker.

    A SIGINT from the terminal (headless: the worker shares the viewer's terminal,
    so Ctrl-C reaches both) means "stop at the next batch boundary", like the
    Stop button. Only when the viewer escalates a stop that got no batch boundary
    does the worker send itself a SIGINT that the script sees as KeyboardInterrupt.
    A script's own SIGINT handler replaces all this, as under ``python script.py``.
    """

    def __init__(self, session: Any) -> None:
        self.session = session
        self.armed = False
        self.interrupted = False

    def request_stop(self) -> None:
        """Stop at the next batch boundary (at once between fits)."""
        self.session.stop()

    def interrupt(self) -> None:
        """Stop escalated: raise KeyboardInterrupt in the script, also inside ``sleep``."""
        self.session.monitor.request_stop()
        self.armed = True
        os.kill(os.getpid(), signal.SIGINT)

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.armed and not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        if not self.session.monitor.stop_requested.is_set():
            self.request_stop()


class _Written:
    """Counts the bytes written through the script's ``sys.stdout`` and ``sys.stderr``.

    The viewer counts what it reads from the two pipes: an event that carries the counts
    at its emission (``FitStarted.output``) goes exactly there among the script's output.
    """

    def __init__(self) -> None:
        self.counts = [0, 0]

    def stream(self, fd: int, name: str, index: int) -> TextStream:
        """``fd_text_stream(fd, name)``, counting into ``counts[index]``."""
        counts = self.counts

        def write_bytes(data: bytes) -> None:
            write_all(fd, data)
            counts[index] += len(data)

        def write_text(text: str) -> None:
            write_bytes(text.encode("utf-8", "backslashreplace"))

        return TextStream(name, write_text, lambda: fd, write_bytes)

    def mark(self) -> tuple[int, int]:
        """Bytes written so far to stdout and to stderr."""
        return self.counts[0], self.counts[1]


_WRITTEN = _Written()


def _flushing_exit(pump: WorkerPump, real_exit: Callable[[int], Any]) -> Callable[[int], Any]:
    """``os._exit`` that first sends what the run reported so far."""

    def _exit(code: int) -> Any:
        try:
            pump.flush()
        except BaseException:  # noqa: BLE001 - exiting anyway
            pass
        return real_exit(code)

    return _exit


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tfstudio.worker")
    p.add_argument("--fd", type=int, required=True, help="socket to the viewer")
    p.add_argument("--stdout-fd", type=int, required=True, help="pipe for sys.stdout")
    p.add_argument("--stderr-fd", type=int, required=True, help="pipe for sys.stderr")
    p.add_argument("--warm", action="store_true", help="import TensorFlow before the run")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve one run for the viewer on the other end of ``--fd``; returns the exit status."""
    ns = _parse(argv)
    conn = Connection(ns.fd)
    sys.stdout = _WRITTEN.stream(ns.stdout_fd, "<stdout>", 0)
    sys.stderr = _WRITTEN.stream(ns.stderr_fd, "<stderr>", 1)
    conn.send(("hello", os.getpid()))
    if ns.warm:
        from tfstudio.engine.tf_import import ensure_keras

        try:
            ensure_keras()
            import tensorflow as tf

            conn.send(("ready", tf.__version__))
        except Exception as exc:  # noqa: BLE001 - the run will say it again, in words
            conn.send(("import-failed", f"{type(exc).__name__}: {exc}"))
    try:
        message = conn.recv()
    except (EOFError, OSError):
        return 0
    if message[0] != "run":
        return 0
    spec: RunSpec = message[1]
    return _serve(conn, spec, warm=ns.warm)


def _serve(conn: Connection, spec: RunSpec, *, warm: bool) -> int:
    from tfstudio.engine.session import TrainingSession

    channel = Channel()
    # the pump's callbacks reach the session through `stops`, made just below
    pump = WorkerPump(conn, channel, lambda: stops.request_stop(), lambda: stops.interrupt())
    session = TrainingSession(
        spec.script,
        spec.args,
        channel,
        cwd=spec.cwd,
        stdin_eof=spec.stdin_eof,
        capture_output=False,
        options=spec.options,
        preimport=warm,
        on_started=pump.flush,
        pump=pump,  # the recorder becomes one of its sinks: written on the pump thread
    )
    session.monitor.output_mark = _WRITTEN.mark
    stops = _StopSignals(session)
    signal.signal(signal.SIGINT, stops.on_sigint)
    real_exit = os._exit
    os._exit = _flushing_exit(pump, real_exit)
    pump.start()
    try:
        ended = session.run()
    finally:
        os._exit = real_exit
        pump.close()
    try:
        conn.send(("done", ended.exit_code))
        conn.close()
    except OSError:
        pass
    return ended.exit_code


if __name__ == "__main__":
    sys.exit(main())
