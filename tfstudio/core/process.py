"""Runs scripts in worker processes and turns what they send into channel events.

The viewer's side of ``tfstudio.worker`` (pure standard library: the window
never imports TensorFlow). Each run gets a process of its own; a spare worker
imports TensorFlow in advance so Run starts at once. A worker that crashes, is
killed or calls ``os._exit`` ends its run as failed, with the reason in words;
the viewer goes on. Stop asks for a batch boundary and, if the run has not ended
after a grace period (or Stop is pressed again), escalates: SIGINT, SIGTERM,
SIGKILL. Nothing listens on any address: viewer and worker share a socket pair.
Whatever processes a run starts end with it (its process group, and every process
carrying the run's token in its environment), and a worker killed by the kernel's
OOM killer is named so (the kernel's OOM-kill counters).

This module is one worker process (start, read, stop); ``core/process_launcher.py`` the
:class:`ProcessLauncher` that hands runs to workers; ``core/process_exit.py`` how a
worker ended, in words.
"""

from __future__ import annotations

import codecs
import os
import selectors
import signal
import socket
import subprocess
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfstudio.core.events import (
    ConsoleOutput,
    DeviceMemory,
    EngineStatus,
    FitStarted,
    MonitorError,
    RunEnded,
    RunRecording,
    RunStarted,
    StepColumns,
    StepEnded,
    SystemSampled,
)
from tfstudio.core.options import RunOptions
from tfstudio.core.output_log import OutputLog
from tfstudio.core.process_exit import (
    RUN_TOKEN_ENV,
    describe_exit,
    kill_run_processes,
    oom_kill_count,
)

if TYPE_CHECKING:
    from tfstudio.core.process_launcher import ProcessLauncher


GRACE_S = 5.0  # Stop waits this long for a batch boundary before interrupting
STAGE_S = 2.0  # then SIGINT, SIGTERM, SIGKILL this far apart
DRAIN_S = 2.0  # after the run ends, how long its last output may take to arrive
LINGER_S = 5.0  # a finished worker that does not exit (threads, atexit) is ended after this
SELECT_S = 0.05
# Once nothing came from a run for this long, a pull is not sent: the worker, asked
# once, beats on its own every PULL_FALLBACK_S (0.25 s) and brings what comes next.
# A run between fits, in a long evaluation or paused then costs neither process a
# message per redraw.
QUIET_PULL_S = 0.5
# What a worker sends on a clock of its own while its run is otherwise quiet (its system
# samples, on a GPU TensorFlow's memory figures: every second): a batch of only these
# does not end the quiet, or a paused run would be asked half the time.
ROUTINE_EVENTS: frozenset[type] = frozenset({DeviceMemory, SystemSampled})

# Stages of a stop, in order; each call of stop() (or each expired deadline) moves on.
STAGES = ("batch boundary", "SIGINT", "SIGTERM", "SIGKILL")


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything a worker needs to run a script (sent over the connection).

    Args:
        script: absolute path of the script.
        args: its arguments (``sys.argv[1:]``).
        cwd: working directory of the run.
        stdin_eof: the script gets an empty stdin (the window has no terminal).
        options: what the user asked of the run.
    """

    script: str
    args: tuple[str, ...]
    cwd: str
    stdin_eof: bool
    options: RunOptions = field(default_factory=RunOptions)


def package_root() -> str:
    """The folder holding the ``tfstudio`` package the viewer runs (workers use the same)."""
    return str(Path(__file__).resolve().parents[2])


class _Worker:
    """One worker process and the thread that reads everything it sends."""

    def __init__(self, launcher: ProcessLauncher, warm: bool) -> None:
        self.launcher = launcher
        self.warm = warm
        self.ready = threading.Event()  # TensorFlow imported (warm workers)
        self.import_error: str | None = None
        self.assigned = False  # a run was given to this worker
        self.ended: RunEnded | None = None
        self.done = threading.Event()  # the run's end was handed to the channel
        self.stage = -1  # index into STAGES; -1 = no stop asked
        self.deadline: float | None = None
        self.killed_with: str | None = None
        self.fits = 0
        self.loops = 0  # custom training loops (FitStarted of kind "loop")
        self.global_step = 0
        self.run_seen = False
        self.pulled = False  # asked for a batch once: it now beats when asked
        self.t0 = time.monotonic()
        self.token = uuid.uuid4().hex  # in the environment of every process of this run
        self.oom_kills_at_start: int | None = None
        self._held: list[object] = []  # output before the run: shown when it starts
        # The run's console text as the viewer gets it, for output.log in its run folder
        # (opened when RunRecording names the folder; core/output_log.py).
        self.output = OutputLog(
            on_error=lambda note: launcher.channel.emit(ConsoleOutput("tfstudio", note))
        )
        self._lock = threading.Lock()
        self._stop_lock = threading.Lock()
        self._spawn()

    # -- process ---------------------------------------------------------
    def _spawn(self) -> None:
        parent_sock, child_sock = socket.socketpair()
        out_r, out_w = os.pipe()  # fd 1 of the worker (native)
        err_r, err_w = os.pipe()  # fd 2 of the worker (native)
        pyout_r, pyout_w = os.pipe()  # sys.stdout
        pyerr_r, pyerr_w = os.pipe()  # sys.stderr
        child_fd = child_sock.fileno()
        cmd = [
            self.launcher.python,
            "-m",
            "tfstudio.worker",
            "--fd",
            str(child_fd),
            "--stdout-fd",
            str(pyout_w),
            "--stderr-fd",
            str(pyerr_w),
        ]
        if self.warm:
            cmd.append("--warm")
        own = self.launcher.own_terminal
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=None if own else subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                pass_fds=(child_fd, pyout_w, pyerr_w),
                cwd=package_root(),
                env={**os.environ, RUN_TOKEN_ENV: self.token},
                start_new_session=not own,
                close_fds=True,
            )
        except OSError as exc:
            for fd in (out_r, out_w, err_r, err_w, pyout_r, pyout_w, pyerr_r, pyerr_w):
                os.close(fd)
            parent_sock.close()
            child_sock.close()
            raise RuntimeError(
                f"could not start a worker process with {self.launcher.python}: {exc}"
            ) from exc
        for fd in (out_w, err_w, pyout_w, pyerr_w):
            os.close(fd)
        child_sock.close()
        self.pid = self.proc.pid
        self.launcher._workers.add(self)
        self.conn = Connection(parent_sock.detach())
        self.own_group = not own
        self._pipes = {
            pyout_r: ("stdout", False),
            pyerr_r: ("stderr", False),
            out_r: ("stdout", True),
            err_r: ("stderr", True),
        }
        self.thread = threading.Thread(
            target=self._read, name=f"tfstudio-worker-{self.pid}", daemon=True
        )
        self.thread.start()

    def send(self, message: tuple) -> bool:
        """Send to the worker; False if it is gone."""
        try:
            with self._lock:
                self.conn.send(message)
            return True
        except (OSError, EOFError, ValueError):
            return False

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the worker (SIGKILL: to its whole process group)."""
        try:
            if sig == signal.SIGKILL and self.own_group:
                os.killpg(self.pid, sig)
            else:
                os.kill(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def alive(self) -> bool:
        """True while the process has not exited."""
        return self.proc.poll() is None

    # -- the run ---------------------------------------------------------
    def assign(self, spec: RunSpec) -> None:
        """Give this worker its run (once)."""
        with self._lock:
            self.assigned = True
            held, self._held = self._held, []
            # What this worker printed while it waited as a spare (TensorFlow's absl/CUDA
            # start-up lines) goes to its run's console, which folds those lines into one
            # as it does a cold worker's (ui/panels/console.py), never to the viewer's
            # terminal; a spare that never runs takes its lines with it. Emitted under
            # the lock: the reader's later output comes after them.
            self.launcher.channel.emit_all(held)
            for event in held:
                self.output.write(event.text)  # type: ignore[attr-defined]
        self.t0 = time.monotonic()
        self.oom_kills_at_start = oom_kill_count()
        # A send that fails needs nothing here: the reader finds the process gone and
        # ends the run with the reason.
        self.send(("run", spec))

    def escalate(self) -> None:
        """Move the stop on by one stage (see STAGES)."""
        with self._stop_lock:
            if self.ended is not None or self.done.is_set() or self.stage >= len(STAGES) - 1:
                return
            self._escalate()

    def _escalate(self) -> None:
        self.stage += 1
        stage = STAGES[self.stage]
        emit = self.launcher.channel.emit
        if stage == "batch boundary":
            self.send(("stop",))
            self.deadline = time.monotonic() + GRACE_S
            emit(
                EngineStatus(
                    "stopping", f"at the next batch boundary; interrupting in {GRACE_S:.0f} s"
                )
            )
            return
        self.deadline = time.monotonic() + STAGE_S
        note = {
            "SIGINT": "no batch boundary was reached: interrupting the script (SIGINT)",
            "SIGTERM": "the script is still running: terminating it (SIGTERM)",
            "SIGKILL": "the script is still running: killing it (SIGKILL)",
        }[stage]
        self.console(ConsoleOutput("tfstudio", f"Stop: {note}\n"))
        emit(EngineStatus("stopping", note))
        if stage == "SIGINT":
            # The worker signals itself once it knows this SIGINT is an interrupt,
            # not a terminal's Ctrl-C meaning "stop at a batch boundary".
            self.send(("interrupt",))
        else:
            self.killed_with = stage
            self.signal(getattr(signal, stage))

    # -- reading (this worker's thread) ---------------------------------
    def _read(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.conn.fileno(), selectors.EVENT_READ, None)
        decoders = {}
        for fd in self._pipes:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ, fd)
            decoders[fd] = codecs.getincrementaldecoder("utf-8")(errors="replace")
        conn_open = True
        exited_at: float | None = None
        try:
            while True:
                for key, _ in sel.select(SELECT_S):
                    if key.data is None:
                        if not self._receive():
                            sel.unregister(key.fd)
                            conn_open = False
                    else:
                        if not self._read_pipe(key.data, decoders[key.data]):
                            sel.unregister(key.fd)
                            os.close(key.data)
                now = time.monotonic()
                pipes_open = len(sel.get_map()) - (1 if conn_open else 0)
                if exited_at is None and not self.alive():
                    exited_at = now
                if self.deadline is not None and now >= self.deadline and self.ended is None:
                    self.escalate()
                if self.ended is not None:
                    # Whatever the script wrote before its run ended is in the pipes
                    # already: take it, and do not wait for the interpreter to exit.
                    for fd in [fd for fd in sel.get_map() if fd in decoders]:
                        while self._read_pipe(fd, decoders[fd], drain=True):
                            pass
                    break
                elif not conn_open and (
                    pipes_open == 0 or (exited_at is not None and now - exited_at >= DRAIN_S)
                ):
                    break
                elif exited_at is not None and now - exited_at >= DRAIN_S:
                    break  # exited, yet something (a grandchild) holds the socket open
        finally:
            for fd in list(sel.get_map()):
                if fd != self.conn.fileno():
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            sel.close()
        self._finish()

    def _receive(self) -> bool:
        try:
            message = self.conn.recv()
        except (EOFError, OSError):
            return False
        except Exception as exc:  # noqa: BLE001 - one message that cannot be read
            # recv() had taken the whole message before unpickling it failed: the stream
            # is still in step. Reading on keeps the run going (a reader that died here
            # would leave the worker blocked on a full socket and the run never ending).
            self.launcher.channel.emit(
                MonitorError(
                    "receiving events",
                    "A batch of events from the run could not be read and was skipped (the "
                    "live plots miss its steps; the run's record has them): "
                    f"{type(exc).__name__}: {exc}",
                    traceback.format_exc(),
                )
            )
            return True
        kind = message[0]
        if kind == "events":
            self.launcher.note_batch(message[1])  # (the window's pull, answered)
            self._events(message[1])
        elif kind == "ready":
            self.ready.set()
            self.launcher._worker_ready(self)
        elif kind == "import-failed":
            self.import_error = message[1]
            self.ready.set()
            self.launcher._worker_ready(self)
        return True

    def _events(self, events: list[object]) -> None:
        emit = self.launcher.channel.emit
        for event in events:
            kind = type(event)
            if kind is StepColumns:
                if len(event):  # type: ignore[arg-type]
                    self.global_step = int(event.global_step[-1])  # type: ignore[attr-defined]
            elif kind is StepEnded:
                self.global_step = event.global_step  # type: ignore[attr-defined]
            elif kind is RunEnded:
                self.ended = event  # type: ignore[assignment]
                continue  # handed over once the last output is in (see _finish)
            elif kind is FitStarted:
                if event.kind == "loop":  # type: ignore[attr-defined]
                    self.loops += 1
                else:
                    self.fits += 1
            elif kind is RunStarted:
                self.run_seen = True
            elif kind is ConsoleOutput:
                self.output.write(event.text)  # type: ignore[attr-defined]
            elif kind is RunRecording:
                self.output.open_run_folder(event.run_dir)  # type: ignore[attr-defined]
            emit(event)

    def console(self, event: ConsoleOutput) -> None:
        """Hand console text of this run to the viewer (and to its output.log)."""
        self.output.write(event.text)
        self.launcher.channel.emit(event)

    def _read_pipe(self, fd: int, decoder: codecs.IncrementalDecoder, drain: bool = False) -> bool:
        """Read what one pipe holds; False at its end (or, with ``drain``, when empty)."""
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return not drain
        except OSError:
            chunk = b""
        stream, native = self._pipes[fd]
        text = decoder.decode(chunk, final=not chunk)
        if text:
            event = ConsoleOutput(stream, text, native=native)
            with self._lock:
                if not self.assigned:
                    self._held.append(event)  # a spare's import messages
                    event = None
            if event is not None:
                self.console(event)
        return bool(chunk)

    def _finish(self) -> None:
        ended = self.ended
        if ended is None and self.assigned:
            ended = self._ended_without_report()
        self.output.close()  # complete before the run's end is seen
        if ended is not None and self.assigned:
            self.launcher.channel.emit(ended)
        self.done.set()
        self.launcher._worker_done(self)
        self._reap()

    def _ended_without_report(self) -> RunEnded:
        try:
            code = self.proc.wait(timeout=DRAIN_S)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            code = self.proc.wait()
        oom_killed = None
        now = oom_kill_count()
        if now is not None and self.oom_kills_at_start is not None:
            oom_killed = now > self.oom_kills_at_start
        status, exit_code, reason = describe_exit(
            code, killed_by_us=self.killed_with, oom_killed=oom_killed
        )
        if not self.run_seen:
            reason = f"the worker process could not start the run ({reason})"
            if self.import_error:
                reason += f"; TensorFlow failed to import: {self.import_error}"
        self.console(ConsoleOutput("tfstudio", f"{reason}\n"))
        return RunEnded(
            status,
            exit_code,
            self.fits,
            self.global_step,
            time.monotonic() - self.t0,
            None,
            reason,
            loops=self.loops,
        )

    def _reap(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=LINGER_S if self.assigned else 0.5)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STAGE_S)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait()
        if self.own_group:  # children the script left behind go with it
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        # Also those outside the group: every viewer (tfstudio run shares the
        # terminal's group), and a child that made a group or session of its own.
        kill_run_processes(self.token)
        self.launcher._workers.discard(self)

    def end_now(self) -> None:
        """Kill the process and everything its run started (the viewer is leaving)."""
        self.signal(signal.SIGKILL)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        kill_run_processes(self.token)

    def close(self) -> None:
        """End an idle (spare) worker now."""
        self.send(("exit",))
        self.signal(signal.SIGKILL)


def __getattr__(name: str) -> Any:
    """``ProcessLauncher`` (in ``core/process_launcher.py``, which imports this module)."""
    if name == "ProcessLauncher":
        from tfstudio.core.process_launcher import ProcessLauncher

        return ProcessLauncher
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
