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
"""

from __future__ import annotations

import codecs
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

from tfstudio.core.channel import Channel
from tfstudio.core.commands import Command, Stop
from tfstudio.core.events import (
    ConsoleOutput,
    DeviceMemory,
    EngineStatus,
    FitStarted,
    MonitorError,
    RunEnded,
    RunStarted,
    StepColumns,
    StepEnded,
)
from tfstudio.core.options import RunOptions
from tfstudio.core.scripts import import_time_env_writes

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
# What a worker sends on a clock of its own while its run is otherwise quiet (on a GPU,
# TensorFlow's memory figures every second): a batch of only these does not end the
# quiet, or a paused run on a GPU would be asked half the time.
ROUTINE_EVENTS: frozenset[type] = frozenset({DeviceMemory})

# Stages of a stop, in order; each call of stop() (or each expired deadline) moves on.
STAGES = ("batch boundary", "SIGINT", "SIGTERM", "SIGKILL")

# Every process a run starts inherits this variable (its value names the worker):
# whatever of them outlives the run is found by it and ended, whichever process
# group it is in (``tfstudio run`` shares the terminal's group, so killpg misses them).
RUN_TOKEN_ENV = "TFSTUDIO_RUN_TOKEN"

# Where the kernel counts its out-of-memory kills (dmesg needs privileges; these do not).
_OOM_COUNTERS = (
    ("/proc/vmstat", "oom_kill"),  # the whole machine (Linux >= 4.13)
    ("/sys/fs/cgroup/memory.events", "oom_kill"),  # this container, cgroup v2
    ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),  # this container, cgroup v1
)


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


def oom_kill_count() -> int | None:
    """How many processes the kernel's OOM killer has ended (None where no counter is readable).

    The sum of every counter found: a worker that dies of SIGKILL while this grows
    was, in all likelihood, the one the kernel chose.
    """
    total = None
    for path, key in _OOM_COUNTERS:
        try:
            with open(path, encoding="ascii") as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    if name == key:
                        total = (total or 0) + int(value)
                        break
        except (OSError, ValueError):
            continue
    return total


def kill_run_processes(token: str) -> list[int]:
    """SIGKILL every other process that carries ``token`` in its environment; returns their pids.

    Args:
        token: the value of ``RUN_TOKEN_ENV`` the run's worker was started with.
    """
    try:
        import psutil
    except ImportError:  # pragma: no cover - a dependency; without it groups still go
        return []
    killed = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid"]):
        pid = proc.info["pid"]
        if pid == me:
            continue
        try:
            if proc.environ().get(RUN_TOKEN_ENV) != token:
                continue
            proc.kill()
            killed.append(pid)
        except (psutil.Error, OSError):
            continue
    return killed


def describe_exit(
    returncode: int, *, killed_by_us: str | None = None, oom_killed: bool | None = None
) -> tuple[str, int, str]:
    """Status, exit code and reason for a worker that ended without reporting its run's end.

    Args:
        returncode: ``Popen.returncode`` (negative: killed by that signal).
        killed_by_us: the signal name when Stop escalated to it.
        oom_killed: the kernel's OOM-kill counter grew while the run lived (None: unknown).
    """
    if returncode < 0:
        sig = -returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        text = (signal.strsignal(sig) or name).lower()
        if killed_by_us:
            return (
                "stopped",
                128 + sig,
                f"the script did not stop at a batch boundary; its process was ended with {name}",
            )
        if sig == signal.SIGKILL and oom_killed:
            reason = (
                "the script's process was killed by the kernel's out-of-memory killer "
                "(SIGKILL): the machine or container ran out of memory; use less memory "
                "(smaller batches or model, fewer prefetched batches) or allow more"
            )
        elif sig == signal.SIGKILL and oom_killed is False:
            reason = (
                "the script's process was killed (SIGKILL) from outside; "
                "the kernel's out-of-memory killer did not act"
            )
        elif sig == signal.SIGKILL:
            reason = "the script's process was killed (SIGKILL; out of memory?)"
        elif sig == signal.SIGTERM:
            reason = "the script's process was terminated (SIGTERM)"
        elif sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT):
            reason = f"the script's process crashed: signal {sig}, {text} ({name})"
        else:
            reason = f"the script's process ended by signal {sig}, {text} ({name})"
        return "failed", 128 + sig, reason
    status = "finished" if returncode == 0 else "failed"
    return status, returncode, f"the script's process exited with os._exit({returncode})"


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
        emit(ConsoleOutput("tfstudio", f"Stop: {note}\n"))
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
            emit(event)

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
                self.launcher.channel.emit(event)
        return bool(chunk)

    def _finish(self) -> None:
        ended = self.ended
        if ended is None and self.assigned:
            ended = self._ended_without_report()
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
        emit = self.launcher.channel.emit
        emit(ConsoleOutput("tfstudio", f"{reason}\n"))
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
            self.channel.emit(
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
