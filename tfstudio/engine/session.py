"""TrainingSession: one run of a user's script and its events.

A session runs the script with ``fit`` intercepted (and, in-process, its output
captured) and reports everything on the channel, ending with exactly one
:class:`RunEnded`. In tfstudio's worker process (``tfstudio.worker``) the session
runs on the main thread, as ``python script.py`` would; tests and benchmarks
also run it in-process, on a thread of their own.

The engine emits on the monitor's channel, which only the run's pump
(``core/pump.py``) drains: its sinks are the viewer (the worker's pipe, or
in-process a :class:`ChannelSink` onto the caller's channel) and the recorder.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path

from tfstudio.core.channel import Channel
from tfstudio.core.commands import Stop
from tfstudio.core.events import ConsoleOutput, EngineStatus, RunEnded, RunStarted, ScriptError
from tfstudio.core.locations import UrlPath
from tfstudio.core.options import RunOptions
from tfstudio.core.pump import ChannelSink, Pump
from tfstudio.core.scripts import ScriptPathError, check_script
from tfstudio.core.system import SystemSampling
from tfstudio.engine.advisor_live import AdviceSink, LiveAdvisor
from tfstudio.engine.capture import OutputCapture
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.recorder import PumpRecording, start_recording
from tfstudio.engine.script import (
    RunStopped,
    describe_error,
    execute,
    exit_code_of,
    script_environment,
)
from tfstudio.engine.tf_import import ensure_keras, is_loaded

STOPPED_EXIT_CODE = 130  # as for Ctrl-C


class TrainingSession:
    """One run of a script with every ``fit`` monitored.

    Args:
        script: path of the user's script.
        args: the script's arguments (``sys.argv[1:]``).
        channel: the viewer's channel: events arrive there, commands are taken from it.
            In the worker it is the one ``pump`` drains.
        cwd: working directory for the run; ``None`` keeps the caller's.
        stdin_eof: give the script an empty stdin (the window has no terminal).
        capture_output: capture stdout/stderr (fds 1 and 2 included) as events.
        options: what the user asked of this run (sampling, checkpoints, ...).
        preimport: import TensorFlow before the script (a warm start). When False,
            Keras is patched the moment the script itself imports it, so environment
            variables the script sets first (``TF_*``, ``CUDA_*``) still apply.
        on_started: called once the run is announced, just before the script runs
            (the worker sends the announcement at once, ahead of the script's output).
        pump: the pump that drains ``channel`` (the worker's, whose first sink is the
            pipe to the viewer). Without one (in-process) the session emits on a
            channel of its own and runs a pump that puts each batch on ``channel``.
    """

    def __init__(
        self,
        script: str | os.PathLike[str],
        args: Sequence[str] = (),
        channel: Channel | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        stdin_eof: bool = True,
        capture_output: bool = True,
        options: RunOptions | None = None,
        preimport: bool = True,
        on_started: Callable[[], None] | None = None,
        pump: Pump | None = None,
    ) -> None:
        self.script = str(script)
        self.args = tuple(args)
        self.channel = channel if channel is not None else Channel()
        self.cwd = None if cwd is None else Path(cwd)
        self.stdin_eof = stdin_eof
        self.capture_output = capture_output
        self.preimport = preimport
        self.on_started = on_started
        self.options = options if options is not None else RunOptions()
        self._own_pump = pump is None
        if pump is None:
            pump = Pump(Channel(commands_of=self.channel), [ChannelSink(self.channel)])
        self.pump = pump  # its sinks: the advisor, the viewer, then the recorder (once recording)
        self.monitor = RunMonitor(pump.channel, options=self.options)
        self.monitor.flush = pump.flush
        # Live advice reads the stream on the pump's thread, off the training thread; its
        # notices join the batch (before a RunEnded) that the viewer and recorder then get.
        self.advisor = LiveAdvisor(nan_guard=self.options.on_nan != "ignore")
        pump.add_sink(AdviceSink(self.advisor), first=True)
        self.result: RunEnded | None = None
        self.run_dir: Path | UrlPath | None = None  # the run folder, once recording started
        self._recording: PumpRecording | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._script_running = False
        self._done = threading.Event()

    # -- lifecycle -----------------------------------------------------
    def start(self) -> None:
        """Run in a background thread; returns at once."""
        if self._thread is not None:
            raise RuntimeError("a TrainingSession runs once; make a new one for another run")
        self._thread = threading.Thread(target=self.run, name="tfstudio-training", daemon=True)
        self._thread.start()

    def join(self, timeout: float | None = None) -> RunEnded | None:
        """Wait for the run to end; returns its RunEnded (None on timeout)."""
        self._done.wait(timeout)
        return self.result

    def is_running(self) -> bool:
        """True from start until RunEnded was sent."""
        return self._thread is not None and not self._done.is_set()

    def stop(self) -> None:
        """Stop at the next batch boundary; between fits, interrupt the script at once."""
        self.monitor.request_stop()
        self.monitor.channel.send(Stop())  # the callback acts on it at the next batch end
        with self._lock:
            if self._script_running and not self.monitor.in_fit and self._thread is not None:
                _raise_in_thread(self._thread, RunStopped)

    # -- the run itself (training thread) ------------------------------
    def run(self) -> RunEnded:
        """Run the script in the calling thread and return how it ended."""
        self.monitor.channel.take_commands()  # stale commands from an earlier run
        if self._own_pump:
            self.pump.start()
        try:
            ended = self._run()
        except BaseException as exc:  # noqa: BLE001 - a run must always end with RunEnded
            ended = self._ended("failed", 1, message=f"tfstudio internal error: {exc!r}")
        self.result = ended
        if self._recording is not None:
            self._recording.close(ended)  # the run folder is complete before RunEnded is seen
        self.monitor.channel.emit(ended)
        if self._own_pump:
            self.pump.close()  # the viewer's channel has every event, RunEnded last
        self._done.set()
        return ended

    def _run(self) -> RunEnded:
        mon = self.monitor
        emit = mon.channel.emit
        try:
            path = check_script(self.script)
        except ScriptPathError as exc:
            mon.note(f"Cannot run: {exc}")
            return self._ended("failed", 2, message=str(exc))
        cwd = self.cwd if self.cwd is not None else Path.cwd()
        # The run's clock starts here when nothing is left to import first (a warm worker,
        # or a script that imports TensorFlow itself), else once TensorFlow is imported
        # below; a viewer maps event times onto its own clock by RunStarted.clock.
        clock_now = not self.preimport or is_loaded()
        if clock_now:
            mon.t0 = time.perf_counter()
        started = RunStarted(
            str(path),
            (str(path), *self.args),
            str(cwd),
            time.time(),
            os.getpid(),
            mon.t0 if clock_now else 0.0,
        )
        emit(started)
        if self.preimport:
            if not is_loaded():
                emit(EngineStatus("loading", "importing TensorFlow"))
            try:
                ensure_keras()
            except Exception as exc:  # noqa: BLE001 - a broken TensorFlow install
                mon.note(f"TensorFlow failed to import: {type(exc).__name__}: {exc}")
                return self._ended("failed", 1, message=f"TensorFlow failed to import: {exc}")
            emit(EngineStatus("ready"))
            self._recording = start_recording(self, started)
        else:  # TensorFlow is imported by the script itself: recording starts then
            mon.on_keras_imported.append(lambda: self._start_recording_late(started))
        from tfstudio.engine.instrument import FitInterceptor
        from tfstudio.engine.loops import LoopInterceptor
        from tfstudio.engine.probes.memory import TFMemorySampler

        if not clock_now:
            mon.t0 = time.perf_counter()
        if self.on_started is not None:
            self.on_started()
        capture = OutputCapture(emit) if self.capture_output else nullcontext()
        status, code, error, message = "finished", 0, None, ""
        try:
            with (
                FitInterceptor(mon),
                LoopInterceptor(mon),
                TFMemorySampler(mon),
                SystemSampling(emit, mon.now, lambda: mon.global_step, on_error=mon.report_error),
                script_environment(path, self.args, self.cwd, self.stdin_eof) as module,
                capture,
            ):
                with self._lock:
                    self._script_running = True
                try:
                    if mon.stop_requested.is_set():
                        raise RunStopped()
                    execute(path, module)
                finally:
                    with self._lock:
                        self._script_running = False
                        _clear_pending(threading.current_thread())
        except RunStopped:
            status, code = "stopped", mon.stop_exit_code or STOPPED_EXIT_CODE
            message = mon.stop_message or f"stopped by the user at step {mon.global_step}"
        except KeyboardInterrupt as exc:
            if not mon.stop_requested.is_set():
                err = describe_error(exc, path)
                emit(ConsoleOutput("stderr", err.traceback))
                status, code, error = "failed", STOPPED_EXIT_CODE, err
                message = f"interrupted at {err.location()}"
            else:  # Stop was escalated to SIGINT: the script did not reach a batch boundary
                status, code = "stopped", STOPPED_EXIT_CODE
                message = f"interrupted by the user at step {mon.global_step}"
        except SystemExit as exc:
            code, text = exit_code_of(exc)
            if text:
                emit(ConsoleOutput("stderr", text + "\n"))
            status = "finished" if code == 0 else "failed"
            message = f"the script called sys.exit({exc.code!r})"
        except BaseException as exc:  # noqa: BLE001 - the user's error ends the run, not the app
            error = describe_error(exc, path)
            emit(ConsoleOutput("stderr", error.traceback))
            status, code = "failed", 1
            message = f"{error.type_name} at {error.location()}: {error.message}"
        mon.report_devices()
        if status == "finished" and mon.fits == 0 and mon.loops == 0:
            note = "no fit was monitored (the script never called model.fit)"
            message = f"{message}; {note}" if message else note
        return self._ended(status, code, error=error, message=message)

    def _start_recording_late(self, started: RunStarted) -> None:
        """A cold run records from the moment the script has imported TensorFlow."""
        if self._recording is None:
            self._recording = start_recording(self, started)

    def _ended(
        self, status: str, code: int, *, error: ScriptError | None = None, message: str = ""
    ) -> RunEnded:
        mon = self.monitor
        fits = mon.fits_started  # the fits announced (a fit that failed before its first
        # hook, e.g. on its data, was never announced: the traceback tells of it)
        return RunEnded(
            status,
            code,
            fits,
            mon.global_step,
            mon.now(),
            error,
            message,
            loops=mon.loops,
            rewound=mon.rewound,
        )


def _raise_in_thread(thread: threading.Thread, exc_type: type[BaseException]) -> None:
    """Raise ``exc_type`` in ``thread`` at its next Python bytecode."""
    if thread.ident is None:
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread.ident), ctypes.py_object(exc_type)
    )


def _clear_pending(thread: threading.Thread) -> None:
    """Cancel an async exception that arrived too late to matter."""
    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), None)
