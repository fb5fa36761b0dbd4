"""Live advice: rules decided from a run's own events, fired once per cause.

The worker's channel is wrapped by :class:`AdvisingChannel` (same queues), so every
event the engine emits also passes through :class:`LiveAdvisor`, which may add
``Advice`` events: retracing (from the ``Notice("retracing")`` events), divergence
(loss 10x its best, or NaN with the NaN guard's first non-finite layer), dead ReLU
units (from the inspector's ``LayerOutputs`` events, once issue 6 is merged), a loss
stuck at ln(classes), and graph-mode errors that ended the script.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from tfstudio.core.advisor.live import DEAD_UNITS, DIVERGENCE, GRAPH_ERROR, RETRACING, STUCK_LOSS
from tfstudio.core.advisor.locate import call_line, def_line, python_number_args
from tfstudio.core.channel import Channel
from tfstudio.core.events import (
    Advice,
    EpochEnded,
    FitStarted,
    LearningRate,
    NonFinite,
    Notice,
    RunEnded,
    RunStarted,
    StepEnded,
)

DIVERGE_FACTOR = 10.0
DIVERGE_STEPS = 3  # consecutive steps above factor x best
DEAD_FRACTION = 0.5
STUCK_EPOCHS = 3
FUNCTION = re.compile(r"<function (\S+) at 0x")
GRAPH_ERRORS = (
    "only available when eager execution is enabled",
    "OperatorNotAllowedInGraphError",
    "is not allowed in Graph execution",
    "as a Python `bool` is not allowed",
    "Tensor' object has no attribute 'numpy'",  # Keras 3: SymbolicTensor / KerasTensor
)


class LiveAdvisor:
    """Watches a run's events and returns ``Advice`` for each new cause it sees."""

    def __init__(self, nan_guard: bool = False) -> None:
        self.nan_guard = nan_guard  # NonFinite events come (and name the layer): wait for them
        self.script = ""
        self.fired: set[tuple[str, str]] = set()
        self.lr: float | None = None
        self._best = math.inf
        self._above = 0
        self._classes = 0
        self._epoch_losses: list[float] = []
        self._fit = 0
        self._handlers: dict[type, Callable[[object], list[Advice]]] = {
            StepEnded: self._step,
            RunStarted: self._started,
            FitStarted: self._fit_started,
            EpochEnded: self._epoch,
            LearningRate: self._learning_rate,
            Notice: self._notice,
            NonFinite: self._non_finite,
            RunEnded: self._ended,
        }

    def feed(self, event: object) -> list[Advice]:
        """Advice caused by ``event`` (usually none)."""
        handler = self._handlers.get(type(event))
        if handler is None:
            if type(event).__name__ == "LayerOutputs":  # issue 6's inspector event
                return self._layer_outputs(event)
            return []
        return handler(event)

    # -- helpers ----------------------------------------------------------
    def _once(self, rule: str, cause: str) -> bool:
        key = (rule, cause)
        if key in self.fired:
            return False
        self.fired.add(key)
        return True

    def _advice(self, rule, message: str, line: int = 0, fix: str = "") -> list[Advice]:  # noqa: ANN001
        return [rule.advice(message, self.script, line, fix)]

    # -- handlers ---------------------------------------------------------
    def _started(self, e: RunStarted) -> list[Advice]:
        self.script = e.script
        return []

    def _fit_started(self, e: FitStarted) -> list[Advice]:
        self._fit = e.fit_index
        self._best, self._above, self._epoch_losses = math.inf, 0, []
        layers = [layer for layer in e.model.layers if layer.depth == 0]
        self._classes = 0
        if layers:
            m = re.search(r"(\d+)\)?\s*$", layers[-1].output_shape)
            if m and "," in layers[-1].output_shape:
                self._classes = int(m.group(1))
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
        if math.isnan(loss) or math.isinf(loss):
            if not self.nan_guard and self._once(DIVERGENCE.name, f"nan:{self._fit}"):
                return self._advice(
                    DIVERGENCE,
                    f"the loss became {loss} at step {e.global_step}{self._lr_words()}: "
                    "the learning rate is probably too high",
                    call_line(self.script, "compile"),
                )
            return []
        if loss < self._best:
            self._best, self._above = loss, 0
            return []
        if self._best > 0 and loss > DIVERGE_FACTOR * self._best:
            self._above += 1
            if self._above >= DIVERGE_STEPS and self._once(DIVERGENCE.name, f"up:{self._fit}"):
                return self._advice(
                    DIVERGENCE,
                    f"the loss is {loss:.4g} at step {e.global_step}, over {DIVERGE_FACTOR:g}x "
                    f"its best ({self._best:.4g}){self._lr_words()}: training diverges; "
                    "lower the learning rate",
                    call_line(self.script, "compile"),
                )
        else:
            self._above = 0
        return []

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
        name = m.group(1) if m else "a tf.function"
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

    def _layer_outputs(self, e: object) -> list[Advice]:
        out: list[Advice] = []
        for layer in getattr(e, "layers", ()):
            dead = getattr(layer, "dead_fraction", 0.0)
            shape = getattr(layer, "shape", ())
            units = shape[-1] if shape else 0
            if dead < DEAD_FRACTION or units < 4:
                continue
            path = getattr(layer, "path", "") or getattr(layer, "name", "?")
            if self._once(DEAD_UNITS.name, path):
                out += self._advice(
                    DEAD_UNITS,
                    f"{dead:.0%} of the {units} units of {path} output 0 for every probe sample "
                    f"at step {getattr(e, 'step', '?')}: they get no gradient and stay dead",
                )
        return out

    def _ended(self, e: RunEnded) -> list[Advice]:
        err = e.error
        if err is None:
            return []
        text = f"{err.type_name}: {err.message}"
        if not any(s in text for s in GRAPH_ERRORS):
            return []
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


class AdvisingChannel(Channel):
    """The same channel (shared queues), with a :class:`LiveAdvisor` adding ``Advice`` events.

    Advice about a ``RunEnded`` goes before it (viewers stop reading at ``RunEnded``).
    A failure in the advisor is reported once and turns it off: training goes on.
    """

    __slots__ = ("advisor", "on_error")

    def __init__(
        self, inner: Channel, on_error: Callable[[BaseException], None], nan_guard: bool = False
    ) -> None:
        self._events = inner._events
        self._commands = inner._commands
        self.advisor: LiveAdvisor | None = LiveAdvisor(nan_guard)
        self.on_error = on_error

    def emit(self, event: object) -> None:
        """Queue the event, and any advice it causes; never blocks."""
        advice: list[Advice] = []
        if self.advisor is not None:
            try:
                advice = self.advisor.feed(event)
            except Exception as exc:  # noqa: BLE001 - advice must never break a run
                self.advisor = None
                self.on_error(exc)
        if isinstance(event, RunEnded):
            self._events.extend(advice)
            self._events.append(event)
        else:
            self._events.append(event)
            self._events.extend(advice)


def advise(session: object) -> None:
    """Wrap the channel the engine emits on (``session.monitor.channel``): same queues."""
    monitor = session.monitor  # type: ignore[attr-defined]
    monitor.channel = AdvisingChannel(
        monitor.channel,
        lambda exc: monitor.report_error("advisor", exc),
        nan_guard=session.options.on_nan != "ignore",  # type: ignore[attr-defined]
    )
