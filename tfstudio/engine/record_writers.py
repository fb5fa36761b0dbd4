"""One function per kind of event: how the recorder writes it into the run folder.

Each takes the :class:`~tfstudio.engine.recorder.Recorder` and the event; adding a new
kind of event to the record is one function registered in :data:`WRITERS`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tfstudio.core.events import (
    CheckpointRestored,
    EpochEnded,
    FitEnded,
    FitStarted,
    GradientStats,
    GradientVariable,
    LayerOutput,
    LayerOutputs,
    LearningRate,
    ModelBuilt,
    RunDevices,
    RunEnded,
    RunStarted,
    StepColumns,
    StepEnded,
    SystemSampled,
    VariableStats,
    WeightStats,
)
from tfstudio.core.run_record import LOGGED_EVENTS, SYSTEM_PREFIX
from tfstudio.core.runs import EPOCH_PREFIX, RUNNING_PREFIX, STEP_PREFIX
from tfstudio.engine.hparams import HPARAMS_WRITERS, record_fit_started
from tfstudio.engine.summary_encoding import scalar_blocks

if TYPE_CHECKING:
    from tfstudio.engine.recorder import Recorder


def _run_started(rec: Recorder, e: RunStarted) -> None:
    rec.info.update(script=e.script, argv=list(e.argv), cwd=e.cwd, start_time=e.wall_time)
    rec._t0_wall = e.wall_time


def _run_devices(rec: Recorder, e: RunDevices) -> None:
    rec.info["devices"] = list(e.devices)


def _fit_started(rec: Recorder, e: FitStarted) -> None:
    record_fit_started(rec, e)  # the HParams session start, at the first fit
    rec.info["segments"].append(
        {
            "kind": "fit",
            "index": e.fit_index,
            "model": e.model.name,
            "class": e.model.class_name,
            "params": e.model.total_params,
            "epochs": e.epochs,
            "initial_epoch": e.initial_epoch,
            "steps_per_epoch": e.steps_per_epoch,
            "steps_per_execution": e.steps_per_execution,
            "start_step": e.global_step,
            "start_time": e.time,
            **({"loop": e.loop_index} if e.kind == "loop" else {}),  # a custom training loop
        }
    )


def _model_built(rec: Recorder, e: ModelBuilt) -> None:
    for seg in reversed(rec.info["segments"]):  # its fit's count, 0 at the fit's start
        if seg.get("kind") == "fit" and seg.get("index") == e.fit_index:
            seg["params"] = e.total_params
            break


def _fit_ended(rec: Recorder, e: FitEnded) -> None:
    for seg in reversed(rec.info["segments"]):
        if seg.get("kind") == "fit" and seg.get("index") == e.fit_index:
            seg.update(end_step=e.global_step, end_time=e.time, stopped=e.stopped)
            break


def _step_ended(rec: Recorder, e: StepEnded) -> None:
    values = {STEP_PREFIX + k: v for k, v in e.values.items()}
    for k, v in e.running.items():
        if k not in e.values:  # drawn where the metric has no value of its own
            values[RUNNING_PREFIX + k] = v
    if values:
        rec.scalars(e.global_step, values, rec._wall(e.time))
    rec.info["steps"] = e.global_step
    loss = e.values.get("loss")
    if loss is not None and math.isfinite(loss):
        rec.info["final_loss"] = loss


def _step_columns(rec: Recorder, e: StepColumns) -> None:
    """A block of steps: one record per step, encoded at once (the hot path of recording)."""
    if not len(e):
        return
    walls = rec._t0_wall + np.asarray(e.time, dtype=np.float64)  # (_last_wall: see write)
    columns = {STEP_PREFIX + k: v for k, v in e.values.items()}
    absent = {STEP_PREFIX + k: m for k, m in e.absent.items()}
    for k, col in e.running.items():
        if k not in e.values:  # a metric with no value of its own (AUC): its running mean
            columns[RUNNING_PREFIX + k] = col
            if k in e.running_absent:
                absent[RUNNING_PREFIX + k] = e.running_absent[k]
    if columns:
        rec._writer.write_blocks(
            scalar_blocks(e.global_step, walls, columns, rec._described, absent)
        )
    rec.info["steps"] = int(e.global_step[-1])
    if "loss" in e.values:
        steps, losses = e.column("loss")
        finite = np.nonzero(np.isfinite(losses))[0]
        if len(finite):
            rec.info["final_loss"] = float(losses[finite[-1]])


def _epoch_ended(rec: Recorder, e: EpochEnded) -> None:
    values = {EPOCH_PREFIX + k: v for k, v in e.metrics.items() if not math.isnan(v)}
    if values:
        rec.scalars(e.global_step, values, rec._wall(e.time))
    rec.info["epochs"] = e.epoch + 1


def _restored(rec: Recorder, e: CheckpointRestored) -> None:
    """run.json keeps each restore: a reader drops what was recorded after its step before it."""
    rec.info.setdefault("restores", []).append(
        {"step": e.step, "path": e.path, "time": e.time, "wall": rec._wall(e.time)}
    )


def _system_sampled(rec: Recorder, e: SystemSampled) -> None:
    values = {SYSTEM_PREFIX + k: v for k, v in e.values.items()}
    if values:
        rec.scalars(e.global_step, values, rec._wall(e.time))


def _logged(rec: Recorder, e: object) -> None:
    """A checkpoint event or a notice: a line of ``events.jsonl``."""
    rec.log_event(e)


def _restored_logged(rec: Recorder, e: CheckpointRestored) -> None:
    _restored(rec, e)
    rec.log_event(e)


def _learning_rate(rec: Recorder, e: LearningRate) -> None:
    rec.scalars(e.global_step, {"learning_rate": e.value}, rec._now_wall())


def _run_ended(rec: Recorder, e: RunEnded) -> None:
    rec.info.update(
        status=e.status,
        exit_code=e.exit_code,
        end_time=rec._wall(e.time) if e.time else time.time(),
        duration=e.time,
        steps=e.global_step,
        message=e.message,
    )
    if e.error is not None:
        rec.info["error"] = {
            "type": e.error.type_name,
            "message": e.error.message,
            "where": e.error.location(),
        }


def _edges(lo: float, hi: float, bins: int) -> np.ndarray:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        hi = lo + 1e-12 if math.isfinite(lo) else 1.0
        lo = lo if math.isfinite(lo) else 0.0
    return lo + (hi - lo) * np.arange(bins + 1, dtype=np.float64) / bins  # lo + (hi-lo)*i/bins


def _histogram(
    rec: Recorder, tag: str, step: int, stats: VariableStats | GradientVariable | LayerOutput
) -> None:
    """``stats``' histogram (counts over even bins from its min to its max), if it has one."""
    if stats.hist:
        edges = _edges(stats.min, stats.max, len(stats.hist))
        rec.histogram(tag, step, edges, stats.hist, rec._now_wall())


def _weight_stats(rec: Recorder, e: WeightStats) -> None:
    values: dict[str, float] = {}
    shapes = rec.info.setdefault("variables", {})  # run.json: each variable's shape
    for v in e.variables:
        for name in ("mean", "std", "min", "max", "norm", "zero_fraction"):
            values[f"weights/{v.path}/{name}"] = getattr(v, name)
        for j, value in enumerate(v.values):  # small variables (W, b): the values themselves
            values[f"weights/{v.path}/values/{j}"] = value
        if v.path not in shapes:
            shapes[v.path] = list(v.shape)
        _histogram(rec, f"weights/{v.path}", e.step, v)
    rec.scalars(e.step, values, rec._now_wall())


def _gradient_stats(rec: Recorder, e: GradientStats) -> None:
    values = {"gradients/global_norm": e.global_norm}
    for v in e.variables:
        values[f"gradients/{v.path}/norm"] = v.norm
        _histogram(rec, f"gradients/{v.path}", e.step, v)
    rec.scalars(e.step, values, rec._now_wall())


def _layer_outputs(rec: Recorder, e: LayerOutputs) -> None:
    values: dict[str, float] = {}
    for layer in e.layers:
        for name in ("mean", "std", "zero_fraction", "dead_fraction"):
            values[f"outputs/{layer.path}/{name}"] = getattr(layer, name)
        _histogram(rec, f"outputs/{layer.path}", e.step, layer)
    rec.scalars(e.step, values, rec._now_wall())


WRITERS: dict[type, Callable[[Recorder, Any], None]] = {
    RunStarted: _run_started,
    RunDevices: _run_devices,
    FitStarted: _fit_started,
    ModelBuilt: _model_built,
    FitEnded: _fit_ended,
    StepEnded: _step_ended,
    StepColumns: _step_columns,
    EpochEnded: _epoch_ended,
    LearningRate: _learning_rate,
    CheckpointRestored: _restored_logged,
    SystemSampled: _system_sampled,
    **{kind: _logged for kind in LOGGED_EVENTS if kind is not CheckpointRestored},
    WeightStats: _weight_stats,
    GradientStats: _gradient_stats,
    LayerOutputs: _layer_outputs,
    RunEnded: _run_ended,
    **HPARAMS_WRITERS,
}
"""Event type -> function recording it. A new kind of event is one entry here."""

# Events recorded in tags of their own, dated by wall time (readers split a run at a
# restore by each tag's wall times, not by file order): the steps waiting to be encoded
# need not go first. An epoch's end, the learning rate's points and the inspector's
# samples come every few beats; encoding the steps before each of them made blocks of a
# few dozen rows, whose numpy set-up cost more than the rows.
_BESIDE_STEPS = frozenset(
    {EpochEnded, LearningRate, WeightStats, GradientStats, LayerOutputs, SystemSampled}
)
