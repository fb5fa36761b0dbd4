"""Everything a run reports, as small immutable records.

The training thread creates these and puts them on the channel; the UI and the
headless runner read them. They hold plain Python values only (no tensors), so
any consumer can use them without TensorFlow.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping
from dataclasses import dataclass

from tfstudio.core.formatting import format_duration


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A script run began.

    Args:
        script: absolute path of the user's script.
        argv: the script's ``sys.argv`` (``argv[0]`` is the script).
        cwd: working directory the script runs in.
        wall_time: ``time.time()`` at the start.
        pid: process id of the worker running the script (0 when in-process).
    """

    script: str
    argv: tuple[str, ...]
    cwd: str
    wall_time: float
    pid: int = 0


@dataclass(frozen=True, slots=True)
class RunDevices:
    """The devices a run computes on, once TensorFlow has initialised them.

    Args:
        devices: human names, e.g. ``("GPU 0: NVIDIA H100 80GB HBM3",)`` or ``("CPU",)``.
    """

    devices: tuple[str, ...]

    def describe(self) -> str:
        """One short line for a status bar."""
        return ", ".join(self.devices) if self.devices else "CPU"


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """Progress of work before training starts (e.g. importing TensorFlow)."""

    state: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class LayerSummary:
    """One layer of a model as shown in summaries.

    Args:
        depth: nesting level (0 for the model's own layers).
        output_shape: printable shape, ``"?"`` when Keras cannot tell.
    """

    name: str
    class_name: str
    output_shape: str
    params: int
    trainable_params: int
    depth: int = 0


@dataclass(frozen=True, slots=True)
class ModelSummary:
    """A model announced when its ``fit`` starts."""

    name: str
    class_name: str
    layers: tuple[LayerSummary, ...]
    total_params: int
    trainable_params: int


@dataclass(frozen=True, slots=True)
class FitStarted:
    """A ``model.fit`` call began: one segment of the run.

    Args:
        fit_index: 0 for the run's first ``fit``, then 1, 2, ...
        global_step: the run's step count before this fit's first step.
        steps_per_epoch: ``None`` when the data has unknown length.
        steps_per_execution: Keras runs this many steps per batch hook.
    """

    fit_index: int
    model: ModelSummary
    epochs: int
    initial_epoch: int
    steps_per_epoch: int | None
    steps_per_execution: int
    global_step: int
    time: float


@dataclass(frozen=True, slots=True)
class StepEnded:
    """One batch hook fired (covering ``steps`` training steps).

    Args:
        global_step: steps done in the whole run, this one included.
        epoch: 0-based epoch index as Keras counts it.
        step: steps done in this epoch (1-based, after this hook).
        steps: how many steps this hook covers (``steps_per_execution``).
        values: the batch's own loss and metrics (mean over the ``steps`` it
            covers); only keys whose own value can be known are present.
        running: what Keras reported: the running means over the epoch.
        time: seconds since the run started.
    """

    fit_index: int
    global_step: int
    epoch: int
    step: int
    steps: int
    values: Mapping[str, float]
    running: Mapping[str, float]
    time: float


@dataclass(frozen=True, slots=True)
class EpochEnded:
    """An epoch ended, with the epoch's metrics and any ``val_`` metrics."""

    fit_index: int
    epoch: int
    global_step: int
    metrics: Mapping[str, float]
    time: float


@dataclass(frozen=True, slots=True)
class FitEnded:
    """A ``model.fit`` call returned (or was stopped by the user)."""

    fit_index: int
    global_step: int
    stopped: bool
    time: float


@dataclass(frozen=True, slots=True)
class ConsoleOutput:
    """Text the script (or TensorFlow) wrote.

    Args:
        stream: ``"stdout"``, ``"stderr"`` or ``"tfstudio"`` (our own notes).
        native: written at file-descriptor level, not through Python's
            ``sys.stdout``/``sys.stderr``: ``tf.print``, TensorFlow's C++ logs,
            subprocesses. Lets the console tell ``print`` from ``tf.print``.
    """

    stream: str
    text: str
    native: bool = False


@dataclass(frozen=True, slots=True)
class ScriptError:
    """An exception that ended the user's script.

    Args:
        filename: the user's file the innermost frame of theirs points to.
        lineno: line in ``filename`` (0 when unknown).
        traceback: the formatted traceback, user frames only where possible.
    """

    type_name: str
    message: str
    filename: str
    lineno: int
    traceback: str

    def location(self) -> str:
        """``file:line`` of the error, for messages."""
        return f"{self.filename}:{self.lineno}" if self.filename else "<unknown>"


@dataclass(frozen=True, slots=True)
class MonitorError:
    """tfstudio's own monitoring failed; training goes on without that part."""

    where: str
    message: str
    traceback: str


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The script run is over.

    Args:
        status: ``"finished"``, ``"failed"`` or ``"stopped"``.
        exit_code: what ``python script.py`` would have exited with.
        fits: how many ``fit`` calls were monitored.
        error: the exception that failed the run, if any.
    """

    status: str
    exit_code: int
    fits: int
    global_step: int
    time: float
    error: ScriptError | None = None
    message: str = ""

    def summary(self) -> str:
        """One line for consoles and terminals: how the run ended and after what."""
        took = format_duration(self.time)
        if self.status == "failed" and self.error is not None:
            err = self.error
            return (
                f"Run failed after {took}: {err.type_name}: {err.message} "
                f"at {err.location()} (exit code {self.exit_code})"
            )
        fits = f"{self.fits} fit{'' if self.fits == 1 else 's'}"
        extra = f" — {self.message}" if self.message else ""
        return (
            f"Run {self.status} after {took}: {fits}, {self.global_step} steps "
            f"(exit code {self.exit_code}){extra}"
        )


@dataclass(frozen=True, slots=True)
class LearningRate:
    """The optimizer's learning rate at the end of an epoch (schedules evaluated)."""

    fit_index: int
    global_step: int
    value: float


@dataclass(frozen=True, slots=True)
class DeviceMemory:
    """TensorFlow's own memory figures per GPU, sampled in the worker every second or so.

    Args:
        time: seconds since the run started.
        devices: TensorFlow's device names (``"GPU:0"``, ...); empty when not available.
        current: bytes TensorFlow holds now, per device.
        peak: the most bytes TensorFlow held so far in this process, per device.
        note: why there are no figures (e.g. on the CPU: ``"not available: ..."``), else "".
    """

    time: float
    devices: tuple[str, ...]
    current: tuple[int, ...]
    peak: tuple[int, ...]
    note: str = ""

    @property
    def available(self) -> bool:
        """True when the event carries figures for at least one GPU."""
        return bool(self.devices)


@dataclass(frozen=True, slots=True)
class RunRecording:
    """The run is being recorded in this folder (TensorBoard event files and run.json)."""

    run_dir: str


def _fast_pickling(namespace: dict[str, object]) -> None:
    """Pickle every event here as ``(cls, field values)``.

    Slotted dataclasses otherwise pickle through ``dataclasses``' generic state
    functions, about 4x slower; a worker sends every step event to its viewer.
    Keep this call at the end of the module so it covers every event class.
    """
    for obj in list(namespace.values()):
        if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
            continue
        if obj.__module__ != __name__:
            continue
        names = tuple(f.name for f in dataclasses.fields(obj) if f.init)
        if not names:
            continue
        get = operator.attrgetter(*names)
        single = len(names) == 1

        def __reduce__(self: object, _cls: type = obj, _get=get, _single: bool = single) -> tuple:  # noqa: ANN001, N807
            values = _get(self)
            return (_cls, (values,) if _single else values)

        obj.__reduce__ = __reduce__  # type: ignore[method-assign]


_fast_pickling(globals())
