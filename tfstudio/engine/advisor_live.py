"""Live advice: rules decided from a run's own events, fired once per cause.

:class:`LiveAdvisor` reads a run's event stream as the first sink of the run's pump
(:class:`AdviceSink`; the worker's pump, or an in-process session's own): the pump
hands it each batch it drains (on the pump thread, never the training thread) and
the ``Advice`` it returns joins the same batch, so the viewer and the recorder see
it (before a ``RunEnded``).

The rules, each tuned to stay silent on noisy but healthy training:

- retracing: TensorFlow's "triggered tf.function retracing" warning, for the
  script's own functions (not the ones Keras or tfstudio make per model);
- divergence: a NaN/Inf loss, or the loss smoothed over ``SMOOTH_STEPS`` steps
  staying above ``DIVERGE_FACTOR`` x its smoothed best for ``DIVERGE_STEPS``
  steps (and having lost half of what the fit had gained); per fit;
- dead ReLU units: a ReLU-family layer with ``DEAD_SHARE`` of its units zero on
  every probe sample, on ``DEAD_PROBES`` inspector samples in a row, once the
  fit has trained ``DEAD_AFTER_STEPS`` steps;
- a loss stuck at ln(classes); graph-mode errors and shape errors (the data against
  the model or the loss: ``core/advisor/shapes.py``) that ended the script.
"""

from __future__ import annotations

import math
import re
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from tfstudio.core.advisor.base import Rule
from tfstudio.core.advisor.live import (
    DEAD_UNITS,
    DIVERGENCE,
    GRAPH_ERROR,
    RETRACING,
    SHAPE_MISMATCH,
    STUCK_LOSS,
)
from tfstudio.core.advisor.locate import call_line, def_line, python_number_args
from tfstudio.core.advisor.shapes import explain_shape_error
from tfstudio.core.events import (
    Advice,
    CheckpointRestored,
    EpochEnded,
    FitStarted,
    LayerOutputs,
    LearningRate,
    MonitorError,
    NonFinite,
    Notice,
    RunEnded,
    RunStarted,
    ScriptError,
    StepColumns,
    StepEnded,
)

SMOOTH_STEPS = 20  # span of the loss's moving average
DIVERGE_FACTOR = 3.0  # smoothed loss over its smoothed best...
DIVERGE_STEPS = 25  # ...for this many steps in a row
RELU_FAMILY = frozenset({"relu", "relu6"})  # activations that output 0 for negative inputs
DEAD_SHARE = 0.9
DEAD_PROBES = 3  # inspector samples in a row
DEAD_AFTER_STEPS = 50  # steps of the fit before a layer is judged
DEAD_MIN_UNITS = 4
STUCK_EPOCHS = 3
FUNCTION = re.compile(r"<function (\S+) at (0x[0-9a-fA-F]+)")
# Functions made once per model by Keras or tfstudio: TensorFlow counts their traces
# together (one count per code object), though each model traces its own once.
PER_MODEL_FUNCTIONS = (
    "TensorFlowTrainer.",
    "_make_function.",
    "make_train_function.",
    "make_test_function.",
    "make_predict_function.",
    "WeightProbe.",
    "GradientProbe.",
    "ActivationProbe.",
)
GRAPH_ERRORS = (
    "only available when eager execution is enabled",
    "OperatorNotAllowedInGraphError",
    "is not allowed in Graph execution",
    "as a Python `bool` is not allowed",
    "Tensor' object has no attribute 'numpy'",  # Keras 3: SymbolicTensor / KerasTensor
)


class LiveAdvisor:
    """Reads a run's events and makes ``Advice`` for each new cause it sees.

    The run's pump hands it each drained batch (through :class:`AdviceSink`):
    :meth:`write` returns the events to add to the stream. A failure in a rule is reported once (a
    ``MonitorError``) and turns the advisor off: training and the stream go on.

    Args:
        nan_guard: ``NonFinite`` events will come (they name the layer): the NaN
            notice waits for them instead of firing on the loss alone.
    """

    def __init__(self, nan_guard: bool = False) -> None:
        self.nan_guard = nan_guard
        self.enabled = True
        self.script = ""
        self.fired: set[tuple[str, str]] = set()
        self.lr: float | None = None
        self._fit = 0
        self._fit_start: dict[int, int] = {}  # fit index -> its first global step
        self._classes = 0
        self._epoch_losses: list[float] = []
        self._reset_loss()
        self._dead: dict[str, list[tuple[int, float]]] = {}  # layer path -> its dead streak
        self._retraced: set[tuple[str, str]] = set()
        self._handlers: dict[type, Callable[[Any], list[Advice]]] = {
            StepEnded: self._step,
            StepColumns: self._step_columns,
            RunStarted: self._started,
            FitStarted: self._fit_started,
            EpochEnded: self._epoch,
            LearningRate: self._learning_rate,
            Notice: self._notice,
            NonFinite: self._non_finite,
            LayerOutputs: self._layer_outputs,
            CheckpointRestored: self._restored,
            RunEnded: self._ended,
        }

    # -- the sink ---------------------------------------------------------
    def write(self, events: list[object]) -> list[object]:
        """Read one batch of the stream; return what to add to it (advice, or the error)."""
        if not self.enabled:
            return []
        out: list[object] = []
        try:
            for event in events:
                handler = self._handlers.get(type(event))
                if handler is not None:
                    out += handler(event)
        except Exception as exc:  # noqa: BLE001 - advice must never break a run
            self.enabled = False
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            out.append(MonitorError("advisor", f"{type(exc).__name__}: {exc}", tb))
        return out

    def close(self) -> None:
        """The run is over (nothing to flush)."""

    def feed(self, event: object) -> list[Advice]:
        """Advice caused by one event (usually none)."""
        handler = self._handlers.get(type(event))
        return handler(event) if handler is not None else []

    # -- helpers ----------------------------------------------------------
    def _once(self, rule: str, cause: str) -> bool:
        key = (rule, cause)
        if key in self.fired:
            return False
        self.fired.add(key)
        return True

    def _advice(self, rule: Rule, message: str, line: int = 0, fix: str = "") -> list[Advice]:
        return [rule.advice(message, self.script, line, fix)]

    def _reset_loss(self) -> None:
        """A new fit (or a restored checkpoint): a new loss scale, judged afresh."""
        self._smooth: float | None = None
        self._seen = 0
        self._start = math.inf
        self._best = math.inf
        self._above = 0

    # -- handlers ---------------------------------------------------------
    def _started(self, e: RunStarted) -> list[Advice]:
        self.script = e.script
        return []

    def _fit_started(self, e: FitStarted) -> list[Advice]:
        self._fit = e.fit_index
        self._fit_start[e.fit_index] = e.global_step
        self._reset_loss()
        self._epoch_losses = []
        self._dead.clear()
        layers = [layer for layer in e.model.layers if layer.depth == 0]
        self._classes = 0
        if layers:
            m = re.search(r"(\d+)\)?\s*$", layers[-1].output_shape)
            if m and "," in layers[-1].output_shape:
                self._classes = int(m.group(1))
        return []

    def _restored(self, e: CheckpointRestored) -> list[Advice]:
        self._reset_loss()
        self._dead.clear()
        return []

    def _learning_rate(self, e: LearningRate) -> list[Advice]:
        self.lr = e.value
        return []

    def _lr_words(self) -> str:
        return f" (learning rate now {self.lr:g})" if self.lr is not None else ""

    def _step(self, e: StepEnded) -> list[Advice]:
        loss = e.values.get("loss")
        if loss is None:
            return []
        return self._loss(loss, e.global_step)

    def _step_columns(self, e: StepColumns) -> list[Advice]:
        if "loss" not in e.values:
            return []
        steps, losses = e.column("loss")
        return self._losses(steps.tolist(), losses.tolist())

    def _loss(self, loss: float, global_step: int) -> list[Advice]:
        """Follow one step's loss (see :meth:`_losses`)."""
        return self._losses((global_step,), (loss,))

    def _losses(self, steps: Sequence[int], losses: Sequence[float]) -> list[Advice]:
        """Follow the per-step loss: a non-finite one, or a smoothed one that diverges.

        One pass over a block of steps with the state in locals (the pump's hot path).
        """
        advice: list[Advice] = []
        alpha = 2.0 / (SMOOTH_STEPS + 1)
        smooth, seen, start, best, above = (
            self._smooth,
            self._seen,
            self._start,
            self._best,
            self._above,
        )
        finite = math.isfinite
        for global_step, loss in zip(steps, losses, strict=True):
            if not finite(loss):
                if not self.nan_guard and self._once(DIVERGENCE.name, f"nan:{self._fit}"):
                    advice += self._advice(
                        DIVERGENCE,
                        f"the loss became {loss} at step {global_step}{self._lr_words()}: "
                        "the learning rate is probably too high",
                        call_line(self.script, "compile"),
                    )
                continue
            # One batch's loss is noisy (small batches, noisy targets): judge its moving average.
            smooth = loss if smooth is None else smooth + alpha * (loss - smooth)
            seen += 1
            if seen < SMOOTH_STEPS:
                continue
            if seen == SMOOTH_STEPS:
                start = min(start, smooth)
            if smooth < best:
                best, above = smooth, 0
                continue
            gave_back = smooth - best >= 0.5 * (start - best)  # half of what it had gained
            if best > 0 and smooth > DIVERGE_FACTOR * best and gave_back:
                above += 1
            else:
                above = 0
            if above >= DIVERGE_STEPS and self._once(DIVERGENCE.name, f"up:{self._fit}"):
                advice += self._advice(
                    DIVERGENCE,
                    f"the loss, averaged over {SMOOTH_STEPS} steps, has stayed above "
                    f"{DIVERGE_FACTOR:g}x its best ({best:.4g}) for {DIVERGE_STEPS} steps: "
                    f"{smooth:.4g} at step {global_step}{self._lr_words()}; training diverges",
                    call_line(self.script, "compile"),
                )
        self._smooth, self._seen, self._start, self._best, self._above = (
            smooth,
            seen,
            start,
            best,
            above,
        )
        return advice

    def _non_finite(self, e: NonFinite) -> list[Advice]:
        if not self._once(DIVERGENCE.name, f"nan:{self._fit}"):
            return []
        where = f"; the first layer with a non-finite output is {e.layer}" if e.layer else ""
        if e.gradient:
            where += f"; the first non-finite gradient is {e.gradient}"
        cause = (
            "look at that layer's inputs on this batch; if they are finite, the learning rate "
            "is probably too high"
            if e.layer
            else "the learning rate is probably too high"
        )
        return self._advice(
            DIVERGENCE,
            f"the loss became {e.loss} at step {e.global_step}{self._lr_words()}{where}: {cause}",
            call_line(self.script, "compile"),
        )

    def _epoch(self, e: EpochEnded) -> list[Advice]:
        loss = e.metrics.get("loss")
        if loss is None or self._classes < 2:
            return []
        self._epoch_losses.append(loss)
        recent = self._epoch_losses[-STUCK_EPOCHS:]
        chance = math.log(self._classes)
        if len(recent) == STUCK_EPOCHS and all(abs(v - chance) < 0.01 * chance for v in recent):
            if self._once(STUCK_LOSS.name, str(self._fit)):
                return self._advice(
                    STUCK_LOSS,
                    f"the loss has stayed at {loss:.4f} for {STUCK_EPOCHS} epochs, ln("
                    f"{self._classes}) = {chance:.4f}: the model predicts every one of the "
                    f"{self._classes} classes with the same probability",
                    call_line(self.script, "compile"),
                )
        return []

    def _notice(self, e: Notice) -> list[Advice]:
        if e.kind != "retracing":
            return []
        m = FUNCTION.search(e.text)
        name, address = (m.group(1), m.group(2)) if m else ("a tf.function", "")
        if any(part in name for part in PER_MODEL_FUNCTIONS):
            return []  # one function per model, each traced once: TensorFlow counts them together
        if "<locals>" in name and (name, address) not in self._retraced:
            # Made inside another function: maybe a new one per call, each traced once.
            # TensorFlow warns again about the same code; judge when it names the same one.
            self._retraced.add((name, address))
            return []
        if not self._once(RETRACING.name, name):
            return []
        short = name.rsplit(".", 1)[-1]
        count = re.match(r"\s*(\d+ out of the last \d+ calls)", e.text)
        how = f"{count.group(1)} to {name} retraced it" if count else f"{name} is retraced"
        args = python_number_args(self.script, short) if self.script else []
        if args:
            line, what = args[0]
            cause = (
                f"line {line} passes {what}: every new value is a new graph; pass "
                f"tf.constant(...) instead"
            )
        else:
            cause = (
                "each call with a new Python value or a new input shape builds a new graph; "
                "pass tensors (tf.constant) or give it an input_signature"
            )
        return self._advice(RETRACING, f"{how}: {cause}", def_line(self.script, short))

    def _layer_outputs(self, e: LayerOutputs) -> list[Advice]:
        trained = e.step - self._fit_start.get(e.fit_index, e.step)
        out: list[Advice] = []
        for layer in e.layers:
            if layer.activation not in RELU_FAMILY or len(layer.shape) < 2:
                continue  # only a ReLU's zeros mean "no gradient"
            units = layer.shape[-1]
            if units < DEAD_MIN_UNITS:
                continue
            streak = self._dead.setdefault(layer.path, [])
            if trained < DEAD_AFTER_STEPS or layer.dead_fraction < DEAD_SHARE:
                streak.clear()  # too early to judge, or alive: start counting again
                continue
            streak.append((e.step, layer.dead_fraction))
            if len(streak) < DEAD_PROBES or not self._once(DEAD_UNITS.name, layer.path):
                continue
            share = min(dead for _, dead in streak)
            out += self._advice(
                DEAD_UNITS,
                f"{share:.0%} of the {units} units of {layer.path} ({layer.class_name}, "
                f"{layer.activation}) output 0 for every probe sample ({e.samples}) at each of "
                f"the last {len(streak)} inspector samples (steps {streak[0][0]}-{e.step}): "
                "they get no gradient and stay dead",
            )
        return out

    def _ended(self, e: RunEnded) -> list[Advice]:
        err = e.error
        if err is None:
            return []
        text = f"{err.type_name}: {err.message}"
        if not any(s in text for s in GRAPH_ERRORS):
            return self._shape_error(err)
        if not self._once(GRAPH_ERROR.name, f"{err.filename}:{err.lineno}"):
            return []
        return [
            GRAPH_ERROR.advice(
                f"{err.type_name} at {err.location()}: this line reads a tensor as a Python "
                "value inside a function TensorFlow traces into a graph (a tf.function, "
                "Dataset.map, or call/train_step under fit), where tensors have no value yet",
                err.filename or self.script,
                err.lineno,
            )
        ]

    def _shape_error(self, err: ScriptError) -> list[Advice]:
        """A shape error between the data, the model and the loss, said in the script's terms."""
        found = explain_shape_error(err.message)
        if found is None or not self._once(SHAPE_MISMATCH.name, err.location()):
            return []
        message, fix = found
        return [
            SHAPE_MISMATCH.advice(
                f"{err.type_name} at {err.location()}: {message}",
                err.filename or self.script,
                err.lineno,
                fix,
            )
        ]


class AdviceSink:
    """The live advisor as the first sink of a run's pump (on the pump's thread).

    The batch goes on to the next sinks (the viewer, the recorder) with the advice
    it caused added: after the events, or before a ``RunEnded`` (a viewer stops
    reading at ``RunEnded``).
    """

    def __init__(self, advisor: LiveAdvisor) -> None:
        self.advisor = advisor

    def write(self, events: list[object]) -> list[object] | None:
        """Advise on one batch; the batch with its advice, or None when there is none."""
        added = self.advisor.write(events)
        if not added:
            return None
        ends = [e for e in events if isinstance(e, RunEnded)]
        if not ends:
            return [*events, *added]
        return [*(e for e in events if not isinstance(e, RunEnded)), *added, *ends]

    def close(self) -> None:
        """The run is over."""
        self.advisor.close()
