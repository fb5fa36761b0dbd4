"""Everything a run reports, as small immutable records: the one vocabulary to import from.

The training thread creates these and puts them on the channel; the UI and the
headless runner read them. They hold plain Python values (and, for steps, numpy
arrays: :class:`StepColumns`), never tensors, so any consumer can use them
without TensorFlow.

The classes live in modules by family, all imported here
(``from tfstudio.core.events import X`` works for every one):

- :mod:`tfstudio.core.events_run`: the run as a whole (start, devices, console
  output, errors, end, pause state, learning rate, notices, advice);
- :mod:`tfstudio.core.events_fit`: a fit or loop (start, steps as columns, epochs, end);
- :mod:`tfstudio.core.events_checkpoints`: checkpoints saved, restored, refused, deleted;
- :mod:`tfstudio.core.events_inspector`: the model tree, weights, gradients, layer outputs.

A new event class goes into its family's module (which calls
:func:`~tfstudio.core.events_pickling.fast_pickling` at its end) and into :data:`Event`.
"""

from __future__ import annotations

from tfstudio.core.events_checkpoints import (
    CheckpointDeleted,
    CheckpointList,
    CheckpointRefused,
    CheckpointRestored,
    CheckpointSaved,
)
from tfstudio.core.events_fit import (
    EpochEnded,
    FitEnded,
    FitStarted,
    LayerSummary,
    ModelBuilt,
    ModelSummary,
    StepColumns,
    StepEnded,
    join_steps,
    step_batches,
    step_rows,
)
from tfstudio.core.events_inspector import (
    GradientStats,
    GradientVariable,
    InspectorStatus,
    LayerOutput,
    LayerOutputs,
    ModelNode,
    ModelTree,
    VariableInfo,
    VariableStats,
    WeightStats,
)
from tfstudio.core.events_run import (
    HEADLINE_CHARS,
    Advice,
    ConsoleOutput,
    DeviceMemory,
    EngineStatus,
    ExecutionMode,
    Hyperparameters,
    LearningRate,
    MonitorError,
    NonFinite,
    Notice,
    RunDevices,
    RunEnded,
    RunRecording,
    RunStarted,
    RunState,
    ScriptError,
    SystemSampled,
)

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
    | SystemSampled
    | Hyperparameters
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

__all__ = [
    "Advice",
    "CheckpointDeleted",
    "CheckpointList",
    "CheckpointRefused",
    "CheckpointRestored",
    "CheckpointSaved",
    "ConsoleOutput",
    "DeviceMemory",
    "EVENT_TYPES",
    "EngineStatus",
    "EpochEnded",
    "Event",
    "ExecutionMode",
    "FitEnded",
    "FitStarted",
    "GradientStats",
    "GradientVariable",
    "HEADLINE_CHARS",
    "Hyperparameters",
    "InspectorStatus",
    "LayerOutput",
    "LayerOutputs",
    "LayerSummary",
    "LearningRate",
    "ModelBuilt",
    "ModelNode",
    "ModelSummary",
    "ModelTree",
    "MonitorError",
    "NonFinite",
    "Notice",
    "RunDevices",
    "RunEnded",
    "RunRecording",
    "RunStarted",
    "RunState",
    "ScriptError",
    "StepColumns",
    "StepEnded",
    "SystemSampled",
    "VariableInfo",
    "VariableStats",
    "WeightStats",
    "join_steps",
    "step_batches",
    "step_rows",
]
