"""State shared by one run's instrumentation: counters, stop and pause.

Lives on the training side; the consumer reaches it only through the channel
(commands) and :meth:`RunMonitor.request_stop`.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tfstudio.core.channel import Channel
from tfstudio.core.events import ConsoleOutput, MonitorError, RunDevices
from tfstudio.core.locations import UrlPath
from tfstudio.core.options import RunOptions


class RunMonitor:
    """Per-run counters and flags the fit interceptor and callbacks share.

    Args:
        channel: where events go.
        t0: ``time.perf_counter()`` at the run's start; event times count from it.
        options: what the user asked of this run.
    """

    def __init__(
        self, channel: Channel, t0: float | None = None, options: RunOptions | None = None
    ) -> None:
        self.channel = channel
        self.options = options if options is not None else RunOptions()
        self.t0 = time.perf_counter() if t0 is None else t0
        self.run_dir: Path | UrlPath | None = None  # the run folder when the run is recorded
        self.fits = 0
        self.fits_started = 0  # fits that reached their first hook (announced: the run's count)
        self.loops = 0  # custom training loops found so far (engine/loops/)
        self.global_step = 0
        self.rewound = 0  # steps restores took the run's step back over (trained all the same)
        self.in_fit = False
        self.stop_requested = threading.Event()
        self.resume = threading.Event()
        self.resume.set()
        self._reported: set[str] = set()
        self._noted: set[str] = set()  # keys of note_once
        self.devices: tuple[str, ...] | None = None
        self.on_keras_imported: list[Callable[[], None]] = []  # when the script imports it
        self.control: Any = None  # the run's TrainingController (engine/control.py), made lazily
        self.hparams: Any = None  # the run's HParamsCapture (engine/hparams.py)
        self.stop_exit_code: int | None = None  # set when a stop is not the user's (NaN, --restore)
        self.stop_message = ""
        # Hands what was emitted to the viewer now (the session's pump), for the rare events
        # that must not wait for the pump's next beat: a process that dies right after a
        # fit still told the viewer how far it got.
        self.flush: Callable[[], None] = lambda: None
        # Bytes the script wrote to its sys.stdout and sys.stderr so far (the worker counts
        # them), for the events a viewer places among that output; None: not counted.
        self.output_mark: Callable[[], tuple[int, int] | None] = lambda: None

    def now(self) -> float:
        """Seconds since the run started."""
        return time.perf_counter() - self.t0

    def note(self, text: str) -> None:
        """A tfstudio message for the run's console."""
        self.channel.emit(ConsoleOutput("tfstudio", text if text.endswith("\n") else text + "\n"))

    def note_once(self, key: str, text: str) -> None:
        """:meth:`note`, the first time in the run that ``key`` is noted (a script that
        fits ten folds hears of the inspector's waits once, not ten times)."""
        if key in self._noted:
            return
        self._noted.add(key)
        self.note(text)

    def report_error(self, where: str, exc: BaseException) -> None:
        """Report a failure of tfstudio's own monitoring once per place; training goes on."""
        if where in self._reported:
            return
        self._reported.add(where)
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.channel.emit(MonitorError(where, f"{type(exc).__name__}: {exc}", tb))

    def request_stop(self) -> None:
        """Ask the run to stop at the next batch boundary; releases a pause."""
        self.stop_requested.set()
        self.resume.set()

    def report_devices(self) -> None:
        """Send the run's devices once, as soon as TensorFlow has initialised them."""
        if self.devices is not None:
            return
        from tfstudio.engine.devices import describe_devices

        try:
            devices = describe_devices()
        except Exception as exc:  # noqa: BLE001 - a device name is not worth a failed run
            self.report_error("devices", exc)
            devices = ("unknown device",)
        if devices is not None:
            self.devices = devices
            self.channel.emit(RunDevices(devices))
