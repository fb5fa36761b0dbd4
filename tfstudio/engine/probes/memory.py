"""TensorFlow's own GPU memory figures, sampled in the worker off the per-step path.

A daemon thread wakes every second or so and, once TensorFlow has initialised
its devices (it never initialises them itself: that would fix the runtime's
configuration before the user's script could set it), reads
``tf.config.experimental.get_memory_info`` for each GPU and emits one
:class:`DeviceMemory` event. Without a GPU it says "not available" once and ends.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from tfstudio.core.events import DeviceMemory
from tfstudio.core.ticker import Ticker
from tfstudio.engine.monitor import RunMonitor

INTERVAL_S = 1.0
NOT_AVAILABLE = "not available: TensorFlow computes on the CPU (no GPU memory to report)"


def _devices_initialised() -> bool:
    """True once TensorFlow's eager context has set up its devices (never starts it)."""
    tf = sys.modules.get("tensorflow")
    if tf is None or getattr(getattr(tf, "__spec__", None), "_initializing", False):
        return False  # not imported, or the script's import is still running: never race it
    from tensorflow.python.eager import context

    return bool(getattr(context.context(), "_initialized", False))


class TFMemorySampler:
    """Emits :class:`DeviceMemory` every ``interval`` seconds while a run lasts; a context manager.

    Errors in the sampler are reported once (``monitor.report_error``) and the
    sampler stops; training is never affected.

    Args:
        monitor: the run's shared state (channel, clock, error reporting).
        interval: seconds between samples.
    """

    def __init__(self, monitor: RunMonitor, interval: float = INTERVAL_S) -> None:
        self.monitor = monitor
        self.interval = interval
        self.samples = 0
        self._ticker = Ticker(
            "tfstudio-tf-memory",
            interval,
            self.sample,  # (it reports its own failure, once, and samples no more)
            lambda exc: monitor.report_error("GPU memory sampler", exc),
        )
        self._gpus: list[str] | None = None  # TF device names, once known
        self._done = False  # reported "not available" or failed: nothing more to do
        self._lock = threading.Lock()

    def __enter__(self) -> TFMemorySampler:
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ticker.stop(timeout=5)
        self.sample()  # the last figures (and the peak) of a run shorter than one interval

    def sample(self) -> DeviceMemory | None:
        """Emit one event now if TensorFlow's devices are up; returns it (None otherwise)."""
        with self._lock:
            if self._done:
                return None
            try:
                return self._sample()
            except Exception as exc:  # noqa: BLE001 - monitoring never fails training
                self._done = True
                self.monitor.report_error("GPU memory sampler", exc)
                return None

    def _sample(self) -> DeviceMemory | None:
        if not _devices_initialised():
            return None
        import tensorflow as tf

        if self._gpus is None:
            self._gpus = [_short(d.name) for d in tf.config.list_logical_devices("GPU")]
        mon = self.monitor
        if not self._gpus:
            self._done = True
            event = DeviceMemory(mon.now(), (), (), (), NOT_AVAILABLE)
        else:
            infos = [_memory_info(tf, name) for name in self._gpus]
            event = DeviceMemory(
                mon.now(),
                tuple(self._gpus),
                tuple(int(i["current"]) for i in infos),
                tuple(int(i["peak"]) for i in infos),
            )
        self.samples += 1
        mon.channel.emit(event)
        return event


def _short(device: str) -> str:
    """``/device:GPU:0`` -> ``GPU:0`` (what get_memory_info takes)."""
    return device.split("device:")[-1]


def _memory_info(tf: Any, name: str) -> dict[str, int]:
    return tf.config.experimental.get_memory_info(name)
