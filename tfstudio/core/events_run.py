"""Events of a run as a whole: start, devices, output, errors, end, state, notes, advice.

Part of the event vocabulary: import them from :mod:`tfstudio.core.events`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tfstudio.core.events_pickling import fast_pickling
from tfstudio.core.formatting import format_duration

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Keras bolds a layer's error in a terminal
HEADLINE_CHARS = 300  # the most of a line an error's one-line summary keeps


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A script run began.

    Args:
        script: absolute path of the user's script.
        argv: the script's ``sys.argv`` (``argv[0]`` is the script).
        cwd: working directory the script runs in.
        wall_time: ``time.time()`` at the start.
        pid: process id of the worker running the script (0 when in-process).
        clock: ``time.perf_counter()`` in the worker when the run's clock started (the
            zero of every event's ``time``; CLOCK_MONOTONIC on Linux, the same in every
            process of the machine): a viewer orders events and the script's output by it.
            0 when unknown.
    """

    script: str
    argv: tuple[str, ...]
    cwd: str
    wall_time: float
    pid: int = 0
    clock: float = 0.0


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

    def headline(self) -> str:
        """The message's telling line, for one-line summaries (the traceback has it all).

        TensorFlow's graph errors start "Graph execution error:" and list the frames
        that defined the failing node; the op's own complaint is the line before the
        node's name, given with it. Keras wraps a layer's error in "Exception encountered
        when calling X.call()." and a list of the call's arguments: the line between is
        the error. Any other message: its first line, with "…" when more follow.
        """
        lines = [_ANSI.sub("", line).strip() for line in self.message.splitlines()]
        lines = [line for line in lines if line]
        if len(lines) <= 1:
            return _clipped(lines[0]) if lines else ""
        if lines[0].startswith("Graph execution error"):
            nodes = [i for i, line in enumerate(lines) if line.startswith("[[{{node ")]
            if nodes and nodes[-1] > 0:
                node = lines[nodes[-1]][len("[[{{node ") :].split("}}", 1)[0]
                return f"{_clipped(lines[nodes[-1] - 1])} (in graph node {node})"
        if lines[0].startswith("Exception encountered when calling"):
            return _clipped(lines[1])
        return _clipped(lines[0]) + " …"


def _clipped(line: str, most: int = HEADLINE_CHARS) -> str:
    """``line``, cut to ``most`` characters ("…" at the cut): a batch of labels can be long."""
    return line if len(line) <= most else line[: most - 1] + "…"


@dataclass(frozen=True, slots=True)
class MonitorError:
    """tfstudio's own monitoring failed; training goes on without that part.

    Args:
        window: the window's own code failed (one of its views), not the run's
            monitoring: the run and its record are whole, only that view may lag.
    """

    where: str
    message: str
    traceback: str
    window: bool = False

    def headline(self) -> str:
        """One line for the console and the status bar: which part failed, where, what."""
        part = "Window error" if self.window else "Monitoring error"
        return f"{part} in {self.where}: {self.message}"


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
    loops: int = 0  # custom training loops discovered (engine/loops/)
    rewound: int = 0  # steps restores took the run's step back over: trained, not counted

    def steps_text(self, group: str = "") -> str:
        """``4830 steps``, or after a restore ``19200 steps trained, run step 4830 after a
        restore`` (``group=","``: ``4,830``)."""
        n, spec = self.global_step, group
        if self.rewound:
            return f"{n + self.rewound:{spec}} steps trained, run step {n:{spec}} after a restore"
        return f"{n:{spec}} step{'' if n == 1 else 's'}"

    def summary(self) -> str:
        """One line for consoles and terminals: how the run ended and after what.

        A failed run says what ran before the error, as a finished one does.
        """
        took = _elapsed(self.time)
        fits = f"{self.fits} fit{'' if self.fits == 1 else 's'}"
        if self.loops:
            fits += f", {self.loops} loop{'' if self.loops == 1 else 's'}"
        done = f"{fits}, {self.steps_text()}"
        if self.status == "failed" and self.error is not None:
            err = self.error
            return (
                f"Run failed after {took}: {done} — {err.type_name}: {err.headline()} "
                f"at {err.location()} (exit code {self.exit_code})"
            )
        extra = f" — {self.message}" if self.message else ""
        return f"Run {self.status} after {took}: {done} (exit code {self.exit_code}){extra}"


def _elapsed(seconds: float) -> str:
    """A run's duration: tenths of a second under one second (never a bare ``0:00``)."""
    if 0 <= seconds < 1:
        return f"{seconds:.1f} s"
    return format_duration(seconds)


@dataclass(frozen=True, slots=True)
class RunState:
    """Training was paused or resumed (at a batch boundary).

    Args:
        state: ``"paused"`` or ``"running"``.
        global_step: the step training is held at (or resumes from).
        reason: why, e.g. ``"user"``, ``"non-finite loss"``.
    """

    state: str
    global_step: int
    reason: str = "user"


@dataclass(frozen=True, slots=True)
class ExecutionMode:
    """How the train function runs now, and how many times it was traced in this run.

    Args:
        eager: ``model.run_eagerly``.
        traces: times the train step was traced into a graph in this run.
        global_step: step at which this became true.
    """

    eager: bool
    traces: int
    global_step: int


@dataclass(frozen=True, slots=True)
class LearningRate:
    """The optimizer's learning rate at a step.

    Args:
        is_schedule: the rate comes from a ``LearningRateSchedule`` (shown, not settable
            without replacing the schedule).
        schedule: the schedule's class name ("" for a constant).
    """

    global_step: int
    value: float
    is_schedule: bool
    schedule: str = ""


@dataclass(frozen=True, slots=True)
class NonFinite:
    """A step's loss was NaN or Inf; training was paused (or stopped) at that step.

    Args:
        global_step: the offending step.
        loss: the loss value seen (NaN or +-Inf).
        layer: first layer whose output is non-finite on the offending batch ("" if none).
        gradient: first variable whose gradient is non-finite on that batch ("" if none).
        variable: first variable whose value is non-finite after the step ("" if none).
        detail: how the batch was recomputed, in words.
        action: ``"pause"`` or ``"stop"``.
    """

    global_step: int
    loss: float
    layer: str
    gradient: str
    variable: str
    detail: str
    action: str

    def describe(self) -> str:
        """One or two lines for a console."""
        parts = [f"Non-finite loss ({self.loss}) at step {self.global_step}."]
        if self.layer:
            parts.append(f"First layer with a non-finite output: {self.layer}.")
        if self.gradient:
            parts.append(f"First variable with a non-finite gradient: {self.gradient}.")
        if self.variable:
            parts.append(f"First variable now non-finite: {self.variable}.")
        if self.detail:
            parts.append(f"({self.detail})")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Notice:
    """Something a user should see beyond console text (e.g. TensorFlow retracing warnings).

    Args:
        kind: short tag, e.g. ``"retracing"``, ``"control"``.
    """

    kind: str
    text: str


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
class SystemSampled:
    """The run's processes and the machine, sampled once a second in the worker on a
    thread of its own (``core/system.py``); recorded as ``system/<name>`` scalars.

    Args:
        time: seconds since the run started.
        global_step: the run's global step when taken (the step the record carries).
        values: figure name -> value, as float32 holds it (what the event file keeps):
            ``process/cpu_percent`` and ``process/rss_bytes`` (the worker and its
            children), ``machine/cpu_percent``, ``machine/memory_used_bytes``,
            ``machine/memory_total_bytes``; per GPU NVML reads, ``gpu<i>/utilization_percent``,
            ``gpu<i>/memory_used_bytes``, ``gpu<i>/memory_total_bytes`` and
            ``gpu<i>/process_memory_bytes`` (what the run holds) where known.
    """

    time: float
    global_step: int
    values: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class Hyperparameters:
    """A run's hyperparameters as known now (all of them: each event replaces the last).

    Sent by ``engine/hparams.py`` whenever a ``compile``, ``fit``, seed call or custom
    loop changed them; recorded in ``run.json["hparams"]`` and as TensorBoard HParams
    plugin data (``core/hparams.py``).

    Args:
        values: flat ``name -> str | int | float | bool`` (``optimizer``,
            ``optimizer.learning_rate``, ``loss``, ``batch_size``, ``epochs``, ...).
    """

    values: Mapping[str, str | int | float | bool]


@dataclass(frozen=True, slots=True)
class RunRecording:
    """The run is being recorded in this folder (TensorBoard event files and run.json)."""

    run_dir: str


@dataclass(frozen=True, slots=True)
class Advice:
    """A TensorFlow pitfall the script falls into, where, and what to write instead.

    Made by the static advisor (``tfstudio/core/advisor``) when a script is opened
    and by the worker's live advisor during a run.

    Args:
        rule: the rule's short name, e.g. ``"trace-side-effect"``.
        title: one line naming the pitfall.
        message: what happens here and why, in words a user can act on.
        fix: a short code suggestion.
        file: the user's script ("" when not known).
        line: 1-based line in ``file`` (0 when not known).
    """

    rule: str
    title: str
    message: str
    fix: str
    file: str = ""
    line: int = 0

    def location(self) -> str:
        """``file:line`` (or what is known of it)."""
        if self.file and self.line:
            return f"{self.file}:{self.line}"
        return self.file

    def describe(self) -> str:
        """One line for a terminal: ``[rule] title: message``."""
        return f"[{self.rule}] {self.title}: {self.message}"


fast_pickling(globals())
