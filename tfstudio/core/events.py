"""Everything a run reports, as small immutable records.

The training thread creates these and puts them on the channel; the UI and the
headless runner read them. They hold plain Python values (and, for steps, numpy
arrays: :class:`StepColumns`), never tensors, so any consumer can use them
without TensorFlow.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

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
    """A model announced when its ``fit`` starts.

    Args:
        built: False for a model Keras builds at the fit's first step (a subclassed
            model, a ``Sequential`` without ``Input``): it has no weights yet, so its
            counts are 0 until :class:`ModelBuilt` tells them.
    """

    name: str
    class_name: str
    layers: tuple[LayerSummary, ...]
    total_params: int
    trainable_params: int
    built: bool = True


@dataclass(frozen=True, slots=True)
class ModelBuilt:
    """A fit's model, not built when the fit started, was built by its first step."""

    fit_index: int
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
        kind: ``"fit"``, or ``"loop"`` for a discovered custom training loop
            (``model.name`` then names the models/modules it trains; no epochs).
        loop_index: 1-based number of the loop among the run's loops (0 for a fit).
        verbose: the fit's ``verbose`` (Keras prints each epoch's metrics itself when
            it is not 0; headless then leaves them to Keras).
        number: 1-based number of the fit among the run's fits (0 for a loop, or when
            unknown: ``fit_index + 1`` is used); fits and loops are numbered apart.
        output: bytes the script had written to its ``sys.stdout`` and ``sys.stderr``
            when the fit started (a viewer puts the fit's line exactly there among the
            script's output); None when unknown.
    """

    fit_index: int
    model: ModelSummary
    epochs: int
    initial_epoch: int
    steps_per_epoch: int | None
    steps_per_execution: int
    global_step: int
    time: float
    kind: str = "fit"
    loop_index: int = 0
    verbose: int = 0
    number: int = 0
    output: tuple[int, int] | None = None

    def title(self) -> str:
        """``fit 2: name`` or ``loop 1: name``, for labels."""
        return f"{self.label()}: {self.model.name}"

    def label(self) -> str:
        """``fit 2`` or ``loop 1``: which fit or custom loop of the run this is."""
        if self.kind == "loop":
            return f"loop {self.loop_index}"
        return f"fit {self.number or self.fit_index + 1}"


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


@dataclass(frozen=True, slots=True, eq=False)
class StepColumns:
    """Consecutive steps of one fit or loop, as columns: how steps travel and are recorded.

    The training side appends each step to the channel as one row (a tuple:
    :class:`tfstudio.core.channel.StepRows`, a fit's raw rows ``core/fit_rows.py``)
    and the consumer's thread ships each run of rows as one of these, so a step costs
    one append on the training thread whatever the rate. Row ``i`` is what
    :class:`StepEnded` says of one step (:meth:`row` builds it).

    Args:
        fit_index: the fit or loop every row belongs to.
        global_step, epoch, step, steps: int64 columns, as in :class:`StepEnded`.
        time: float64 seconds since the run started.
        values: per key, float64: the step's own value (NaN where ``absent`` says none).
        running: per key, float64: the running mean Keras reported.
        absent: values keys that some rows lack -> bool mask of those rows.
        running_absent: the same for ``running``.
        coalesced: 0 for every step; N when the viewer's copy was thinned to the
            min and max of each N steps because it could not keep up (the record
            still has every step).
    """

    fit_index: int
    global_step: np.ndarray
    epoch: np.ndarray
    step: np.ndarray
    steps: np.ndarray
    time: np.ndarray
    values: Mapping[str, np.ndarray]
    running: Mapping[str, np.ndarray]
    absent: Mapping[str, np.ndarray] = field(default_factory=dict)
    running_absent: Mapping[str, np.ndarray] = field(default_factory=dict)
    coalesced: int = 0

    def __len__(self) -> int:
        return len(self.global_step)

    def __getitem__(self, i: int) -> StepEnded:
        return self.row(i)

    def __iter__(self):  # noqa: ANN204 - an iterator of StepEnded
        return (self.row(i) for i in range(len(self)))

    def row(self, i: int) -> StepEnded:
        """Row ``i`` (negative counts from the end) as a :class:`StepEnded`."""
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"row {i} of {n}")
        return StepEnded(
            self.fit_index,
            int(self.global_step[i]),
            int(self.epoch[i]),
            int(self.step[i]),
            int(self.steps[i]),
            _pick(self.values, self.absent, i),
            _pick(self.running, self.running_absent, i),
            float(self.time[i]),
        )

    def column(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(global steps, values) of the rows that have ``key``'s own value."""
        ys = self.values[key]
        mask = self.absent.get(key)
        if mask is None:
            return self.global_step, ys
        keep = ~mask
        return self.global_step[keep], ys[keep]


def join_steps(blocks: Sequence[StepColumns]) -> list[StepColumns]:
    """Consecutive blocks as few blocks as can be: one per run of blocks of the same fit.

    Keys some blocks lack are filled with NaN and masked ``absent`` in the joined block;
    a block of one is returned as it is.
    """
    out: list[StepColumns] = []
    start = 0
    for i in range(1, len(blocks) + 1):
        if i == len(blocks) or blocks[i].fit_index != blocks[start].fit_index:
            run = blocks[start:i]
            out.append(run[0] if len(run) == 1 else _joined(run))
            start = i
    return out


def _joined(blocks: Sequence[StepColumns]) -> StepColumns:
    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(b, name) for b in blocks])

    values, absent = _joined_dicts([(b.values, b.absent, len(b)) for b in blocks])
    running, running_absent = _joined_dicts([(b.running, b.running_absent, len(b)) for b in blocks])
    return StepColumns(
        blocks[0].fit_index,
        cat("global_step"),
        cat("epoch"),
        cat("step"),
        cat("steps"),
        cat("time"),
        values,
        running,
        absent,
        running_absent,
        max(b.coalesced for b in blocks),
    )


def _joined_dicts(
    parts: Sequence[tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray], int]],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    keys: dict[str, None] = {}
    for columns, _, _ in parts:
        keys.update(dict.fromkeys(columns))
    columns_out: dict[str, np.ndarray] = {}
    absent_out: dict[str, np.ndarray] = {}
    for key in keys:
        cols, masks = [], []
        for columns, absent, n in parts:
            col = columns.get(key)
            if col is None:
                cols.append(np.full(n, np.nan))
                masks.append(np.ones(n, dtype=bool))
            else:
                cols.append(col)
                mask = absent.get(key)
                masks.append(mask if mask is not None else np.zeros(n, dtype=bool))
        columns_out[key] = np.concatenate(cols)
        mask = np.concatenate(masks)
        if mask.any():
            absent_out[key] = mask
    return columns_out, absent_out


def step_rows(events: Iterable[object]) -> list[object]:
    """``events`` with every :class:`StepColumns` block replaced by its rows, as
    :class:`StepEnded` events (for tools and tests that look at steps one by one)."""
    out: list[object] = []
    for event in events:
        if type(event) is StepColumns:
            out.extend(event)
        else:
            out.append(event)
    return out


def _pick(columns: Mapping[str, np.ndarray], absent: Mapping[str, np.ndarray], i: int) -> dict:
    if not absent:
        return {k: float(v[i]) for k, v in columns.items()}
    out = {}
    for k, v in columns.items():
        mask = absent.get(k)
        if mask is None or not mask[i]:
            out[k] = float(v[i])
    return out


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
    """A ``model.fit`` call returned (or was stopped by the user).

    Args:
        output: as :attr:`FitStarted.output`, when the fit ended.
    """

    fit_index: int
    global_step: int
    stopped: bool
    time: float
    output: tuple[int, int] | None = None


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
    loops: int = 0  # custom training loops discovered (engine/loops.py)

    def summary(self) -> str:
        """One line for consoles and terminals: how the run ended and after what.

        A failed run says what ran before the error, as a finished one does.
        """
        took = _elapsed(self.time)
        fits = f"{self.fits} fit{'' if self.fits == 1 else 's'}"
        if self.loops:
            fits += f", {self.loops} loop{'' if self.loops == 1 else 's'}"
        done = f"{fits}, {self.global_step} step{'' if self.global_step == 1 else 's'}"
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
class CheckpointSaved:
    """A checkpoint of the model, its optimizer and the step was written.

    Args:
        path: the checkpoint prefix (``.../ckpt-3``); restore and delete take it.
        step: the run's global step at save.
        time: seconds since the run started.
        loss: the last step's loss at save (NaN when unknown).
        wall_time: ``time.time()`` at save.
        seconds: how long the save took.
        automatic: saved by the every-N-steps/minutes rule, not on request.
    """

    path: str
    step: int
    time: float
    loss: float
    wall_time: float
    seconds: float = 0.0
    automatic: bool = False


@dataclass(frozen=True, slots=True)
class CheckpointRestored:
    """A checkpoint was loaded into the live model and optimizer; training goes on from ``step``.

    Every view forgets what the run showed after ``step`` (the run's history is the
    one it goes on with), live and when the recorded run is reopened.

    Args:
        time: seconds since the run started, when it was restored.
    """

    path: str
    step: int
    optimizer_iterations: int
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class CheckpointRefused:
    """A checkpoint could not be saved, restored or deleted; the live model is unchanged.

    Args:
        action: ``"save"``, ``"restore"`` or ``"delete"``.
        reason: what did not match or failed, in words.
    """

    path: str
    action: str
    reason: str


@dataclass(frozen=True, slots=True)
class CheckpointDeleted:
    """A checkpoint was removed from disk (and from the run's list)."""

    path: str


@dataclass(frozen=True, slots=True)
class CheckpointList:
    """The checkpoints a run's folder holds (sent when the folder is first used).

    Args:
        directory: the run's checkpoint folder.
        entries: ``CheckpointSaved`` records of the checkpoints still on disk.
    """

    directory: str
    entries: tuple[CheckpointSaved, ...]


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
        if not (self.layer or self.gradient or self.variable):
            parts.append("No layer output or gradient was non-finite when recomputed.")
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
class RunRecording:
    """The run is being recorded in this folder (TensorBoard event files and run.json)."""

    run_dir: str


# -- inspector (issue 6): the model, its weights, gradients and layer outputs ----------


@dataclass(frozen=True, slots=True)
class VariableInfo:
    """One variable of a layer, as the model tree shows it.

    Args:
        path: unique Keras path, e.g. ``"sequential/dense/kernel"``; the key
            every weight and gradient event uses for this variable.
    """

    name: str
    path: str
    shape: tuple[int, ...]
    dtype: str
    trainable: bool


@dataclass(frozen=True, slots=True)
class ModelNode:
    """A layer (or a nested model) in the model tree, with its sublayers.

    Args:
        path: ``/``-joined names from the root, unique in the tree.
        output_shape: printable shape, ``"?"`` when Keras cannot tell before a probe.
    """

    name: str
    path: str
    class_name: str
    output_shape: str
    dtype: str
    trainable_params: int
    non_trainable_params: int
    variables: tuple[VariableInfo, ...]
    children: tuple[ModelNode, ...]


@dataclass(frozen=True, slots=True)
class ModelTree:
    """The model a ``fit`` trains, announced when the fit starts.

    Args:
        summary: the text ``model.summary()`` prints.
    """

    fit_index: int
    root: ModelNode
    summary: str


@dataclass(frozen=True, slots=True)
class VariableStats:
    """Statistics of one trainable variable at one step, computed on the device.

    Args:
        hist: counts in ``len(hist)`` equal bins over ``[min, max]``.
        values: the values themselves for small variables (at most 16), else ``()``.
    """

    path: str
    shape: tuple[int, ...]
    mean: float
    std: float
    min: float
    max: float
    norm: float
    zero_fraction: float
    hist: tuple[int, ...]
    values: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightStats:
    """Every trainable variable's statistics at a sampled step."""

    fit_index: int
    step: int
    variables: tuple[VariableStats, ...]


@dataclass(frozen=True, slots=True)
class GradientVariable:
    """One variable's gradient at a sampled step (the gradient the optimizer applied).

    Args:
        hist: counts in equal bins over ``[min, max]``.
    """

    path: str
    norm: float
    min: float
    max: float
    hist: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class GradientStats:
    """Gradients of a sampled step: per variable, and the global norm over all of them."""

    fit_index: int
    step: int
    global_norm: float
    variables: tuple[GradientVariable, ...]


@dataclass(frozen=True, slots=True)
class LayerOutput:
    """One layer call's output on the probe batch (one entry per call: shared layers repeat).

    Args:
        index: position in the forward walk (order the layers were called in).
        path: the layer's path in the model tree.
        depth: nesting level (0 = the model itself).
        shape: the output's shape, batch first.
        hist: counts in equal bins over ``[min, max]``.
        dead_fraction: share of units (last axis) that are zero for every probe sample.
        thumbs: for ``(N, H, W, C)`` outputs, 8-bit channel maps of the first
            few samples, ``thumb_shape = (samples, channels, h, w)`` (downsampled),
            row-major bytes; each map scaled to 0..255 on its own.
        matrix: for ``(N, units)`` outputs, samples x units as 8-bit (scaled over
            ``[matrix_min, matrix_max]``), ``matrix_shape = (samples, units)``.
        activation: the activation the layer applies to its output (``"relu"``,
            ``"leaky_relu"``, ``"softmax"``, ``"linear"``...); "" when it has none.
    """

    index: int
    name: str
    path: str
    class_name: str
    depth: int
    shape: tuple[int, ...]
    dtype: str
    mean: float
    std: float
    min: float
    max: float
    zero_fraction: float
    dead_fraction: float
    hist: tuple[int, ...]
    thumbs: bytes = b""
    thumb_shape: tuple[int, ...] = ()
    matrix: bytes = b""
    matrix_shape: tuple[int, ...] = ()
    matrix_min: float = 0.0
    matrix_max: float = 0.0
    activation: str = ""


@dataclass(frozen=True, slots=True)
class LayerOutputs:
    """Every layer's output on the probe batch at a sampled step, in forward-walk order.

    Args:
        samples: probe samples (the first few of the first training batch).
    """

    fit_index: int
    step: int
    samples: int
    layers: tuple[LayerOutput, ...]


@dataclass(frozen=True, slots=True)
class InspectorStatus:
    """How often the inspector samples and what it costs, sent with each sample.

    Args:
        mode: ``"budget"`` (cadence adapts to ``budget``) or ``"fixed"`` (every ``every`` steps).
        every: steps between samples now.
        overhead: measured probe time / training time so far in this fit (NaN while
            under a second of training backs it).
        probe_ms: what the last sample cost (all probes), milliseconds.
        largest_message: bytes of the largest inspector event so far (pickled).
        waiting: what is not sampled and why ("" when everything is): a fit's
            gradients, when they cannot be recorded (``inspector_store.GRADIENTS_OFF``
            then the reason).
        outputs_off: why layer outputs are not sampled in this fit ("" when they are):
            no probe batch, or a model that cannot be probed.
        capped: the gap is the budget's floor of one sample a second of training, not
            what the budget would allow (a sample costs less than 3% of a second).
    """

    fit_index: int
    step: int
    mode: str
    every: int
    budget: float
    overhead: float
    probe_ms: float
    largest_message: int = 0
    waiting: str = ""
    outputs_off: str = ""
    capped: bool = False


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


Event = (
    RunStarted
    | RunDevices
    | EngineStatus
    | FitStarted
    | ModelBuilt
    | StepEnded
    | StepColumns
    | EpochEnded
    | FitEnded
    | ConsoleOutput
    | MonitorError
    | RunEnded
    | RunState
    | CheckpointSaved
    | CheckpointRestored
    | CheckpointRefused
    | CheckpointDeleted
    | CheckpointList
    | ExecutionMode
    | LearningRate
    | NonFinite
    | Notice
    | DeviceMemory
    | RunRecording
    | ModelTree
    | WeightStats
    | GradientStats
    | LayerOutputs
    | InspectorStatus
    | Advice
)
"""Everything a run reports: what a channel carries, the recorder writes and the bridge routes."""

EVENT_TYPES: tuple[type, ...] = Event.__args__  # type: ignore[attr-defined]


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


def _reduce_steps(self: StepColumns) -> tuple:
    """Pickle a block of steps as one buffer of its 8-byte columns (half the cost of one
    array each: a worker sends a block every pump beat, its viewer unpickles it).

    The buffer is the columns' bytes joined (``np.stack`` of them was 16 of the 24 us
    this took for a block of 24 steps, on the worker's pipe thread at every beat)."""
    arrays = [self.global_step, self.epoch, self.step, self.steps, self.time]
    arrays += [*self.values.values(), *self.running.values()]
    n = len(self.global_step)
    if not n or any(a.dtype.itemsize != 8 or a.shape != (n,) for a in arrays):
        return _field_values(self)  # as every other event pickles
    buf = b"".join([a.tobytes() for a in arrays])
    dtypes = "".join(a.dtype.char for a in arrays)
    return (
        _unpack_steps,
        (self.fit_index, n, tuple(self.values), tuple(self.running), dtypes, buf)
        + (self.absent, self.running_absent, self.coalesced),
    )


def _unpack_steps(
    fit_index: int,
    n: int,
    values: tuple[str, ...],
    running: tuple[str, ...],
    dtypes: str,
    buf: bytes,
    absent: Mapping[str, np.ndarray],
    running_absent: Mapping[str, np.ndarray],
    coalesced: int,
) -> StepColumns:
    table = np.frombuffer(buf, dtype=np.uint64).reshape(len(dtypes), n).copy()
    cols = [table[i].view(np.dtype(c)) for i, c in enumerate(dtypes)]
    k = len(values)
    return StepColumns(
        fit_index,
        *cols[:5],
        dict(zip(values, cols[5 : 5 + k], strict=True)),
        dict(zip(running, cols[5 + k :], strict=True)),
        absent,
        running_absent,
        coalesced,
    )


_field_values = StepColumns.__reduce__  # (cls, field values): from _fast_pickling
StepColumns.__reduce__ = _reduce_steps  # type: ignore[method-assign]
