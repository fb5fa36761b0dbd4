"""The inspector: runs the probes of one ``fit`` on a cadence, from its callback.

``StudioCallback`` calls :meth:`Inspector.begin` at ``on_train_begin`` and
:meth:`Inspector.at_step` only when the global step reaches
:attr:`Inspector.next_at` (one integer comparison per step on the hot path).
At ``next_at`` the inspector either arms the gradient recorder for the coming
step, or samples (weights, gradients, layer outputs) and schedules the next
sample. Any failure is reported once and that probe is dropped; training goes on.

Under the time budget (the default) everything the inspector spends counts: its
set-up at the fit's start, every sample, the extra time of each step that records
the gradients (an armed step: see ``probes/gradients.py``) and the time the
gradients' recording adds to Keras's own trace of the train step. Nothing waits for
a trace to be paid back before it starts: the first sample (weights, gradients) is
taken after the fit's first step. The other one-off traces (the layer-output probe's
function, the weights' device function) replace host paths that already work, so
each is made only once the budget's credit covers its estimate
(:meth:`Cadence.credit`), one per sample. A fixed cadence (``sample_every``) has no
budget: everything from the start.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
import weakref
from typing import Any

from tfstudio.core.events import InspectorStatus, ModelTree
from tfstudio.core.inspector_store import GRADIENTS_OFF
from tfstudio.core.message_size import LargestMessage
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.probes.activations import ActivationProbe, probe_batch, reshuffles
from tfstudio.engine.probes.cadence import MAX_GAP, Cadence
from tfstudio.engine.probes.gradients import GradientProbe
from tfstudio.engine.probes.model import model_summary_text, model_tree
from tfstudio.engine.probes.weights import WeightProbe

NEVER = 1 << 62
# Budget estimates of one-off traces. Tracing the layer-output probe ~ 5 eager passes
# (the bench's MLP: 32 ms, a pass 6.5 ms).
ACTIVATION_TRACE_FACTOR = 5.0
# Tracing the weight function: ~20 ops a variable, 30 ms a variable on a quiet 2-core CPU,
# 40-53 ms loaded (6 variables: 0.18 s, 0.24-0.32 s), whatever the variables' sizes.
WEIGHT_TRACE_S_PER_VARIABLE = 0.05
HOST_WEIGHTS_CHEAP_S = 0.002  # a host summary this cheap is kept: no trace needed


def weight_trace_estimate(host_seconds: float, variables: int) -> float | None:
    """What tracing the weight function is expected to cost, or None when the host
    summary (``host_seconds`` a sample) is cheap enough to keep: no trace is needed."""
    if host_seconds < HOST_WEIGHTS_CHEAP_S:
        return None
    return WEIGHT_TRACE_S_PER_VARIABLE * variables


# One weight probe per model, kept across its fits: its tf.function is traced once.
_weight_probes: weakref.WeakKeyDictionary[Any, WeightProbe] = weakref.WeakKeyDictionary()
# One gradient probe per model: the train function Keras traced holds its recording.
_gradient_probes: weakref.WeakKeyDictionary[Any, GradientProbe] = weakref.WeakKeyDictionary()


def gradient_probe(model: Any, on_error: Any) -> GradientProbe:
    """The model's gradient probe (kept across fits), reporting errors to ``on_error``."""
    probe = _gradient_probes.get(model)
    if probe is None:
        probe = GradientProbe(model, on_error)
        _gradient_probes[model] = probe
    probe.on_error = on_error
    return probe


def weight_probe(model: Any) -> WeightProbe:
    """The model's weight probe, made again only if its trainable variables changed."""
    probe = _weight_probes.get(model)
    variables = model.trainable_variables
    if (
        probe is None
        or len(probe.variables) != len(variables)
        or any(a is not b for a, b in zip(probe.variables, variables, strict=False))
    ):
        probe = WeightProbe(model)
        _weight_probes[model] = probe
    return probe


class Inspector:
    """Weights, gradients and layer outputs of one fit, sampled within a time budget.

    Args:
        monitor: the run (channel, options, error reporting).
        fit_index: which fit of the run.
        data: the fit's ``x`` (the probe batch is cut from it).
    """

    # Seconds, for the budget (a benchmark that interleaves twins gives each its own).
    clock: Any = time.perf_counter

    def __init__(
        self, monitor: RunMonitor, fit_index: int, data: Any = None, validation: Any = None
    ) -> None:
        self.monitor = monitor
        self.fit_index = fit_index
        self.data = data
        self.validation = validation  # fit's validation_data: the probe batch's second source
        options = monitor.options
        self.cadence = Cadence(options.inspector_budget, options.sample_every)
        self.next_at = NEVER
        self._sizes = LargestMessage()
        self._weights: WeightProbe | None = None
        self._gradients: GradientProbe | None = None
        self._activations: ActivationProbe | None = None
        self._sample_at = NEVER
        self._t0 = 0.0
        self._step0 = 0
        self._spe = 1
        self._budgeted = not options.sample_every
        self._first_end: tuple[float, float, int] | None = None  # (time, probe s, step)
        self._last_status: InspectorStatus | None = None  # the last sample's (end() says it anew)
        self._armed_t: float | None = None  # when the gradients' recording was armed
        self._trace_charged = 0.0  # of the gradient probe's trace_seconds, what is charged
        self._weights_traced = not self._budgeted
        self.waiting = ""  # why gradients are not recorded ("" when they are): status.waiting
        self.outputs_off = ""  # why layer outputs are not sampled (InspectorStatus.outputs_off)
        self._probe_cost: dict[str, float] = {}  # seconds of each probe's last sample
        self._activations_made = False
        self.model: Any = None
        self._tree_pending = False
        self._weights_failed = False

    # -- fit start / end ---------------------------------------------------
    def begin(self, model: Any, steps_per_execution: int = 1) -> None:
        """Announce the model tree; prepare the probes; schedule the first sample."""
        mon = self.monitor
        started = self.clock()
        self._t0 = started
        self._spe = max(1, steps_per_execution)
        self.model = model
        self._emit_tree()
        # Subclassed models make their variables in the first step: announce the
        # tree again then, and only then summarise the weights.
        self._tree_pending = not _built(model)

        def grad_error(exc: BaseException) -> None:
            mon.report_error("inspector: gradients", exc)

        self._gradients = self._make(
            "inspector: gradients", lambda: gradient_probe(model, grad_error)
        )
        if self._gradients is not None:
            try:
                self._gradients.clock = self.clock
                self._trace_charged = self._gradients.trace_seconds
                if not self._gradients.install(self._spe):
                    self._gradients = None
                    self.waiting = GRADIENTS_OFF + (
                        "the model has no Keras optimizer tfstudio can see (model.optimizer, "
                        "or an optimizer held as an attribute) whose apply it could wrap."
                    )
                    mon.note_once("inspector: gradients off", "Inspector: g" + self.waiting[1:])
            except Exception as exc:  # noqa: BLE001
                mon.report_error("inspector: gradients", exc)
                self._gradients = None
                self.waiting = f"{GRADIENTS_OFF}{exc}"
        if not self._budgeted:
            self._make_activations()
        self._step0 = mon.global_step
        self._schedule(mon.global_step + 1)
        self.cadence.charge(self.clock() - started)  # the set-up (and the first arming) counts

    def _make_activations(self) -> None:
        """Cut the probe batch and make the layer-output probe (once per fit).

        Under the budget this waits for the fit's second sample: the first eager pass
        through the layers costs several times a weight summary, and the first sample
        comes before training has paid for anything.
        """
        self._activations_made = True
        mon = self.monitor
        inputs = None
        reshuffled = False
        try:
            inputs = probe_batch(self.data)
            reshuffled = inputs is None and reshuffles(self.data)
            if inputs is None and self.validation is not None:
                # a training batch cannot be read without changing what the script
                # computes: the first validation batch shows the layers just as well
                val = self.validation
                if isinstance(val, tuple | list) and val:
                    val = val[0]  # (x_val, y_val[, sample_weight])
                inputs = probe_batch(val)
                if inputs is not None:
                    why = (
                        "the training dataset reshuffles every epoch, and reading a batch "
                        "from it would change the order your script trains on."
                        if reshuffled
                        else f"fit's x is a {_kind(self.data)}, and reading a batch from it "
                        "would run your data code once more than your script does."
                    )
                    mon.note_once(
                        "inspector: validation probe",
                        "Inspector: layer outputs are shown for a validation batch: " + why,
                    )
        except Exception as exc:  # noqa: BLE001
            mon.report_error("inspector: probe batch", exc)
        if inputs is None and reshuffled:
            self.outputs_off = (
                "Layer outputs are not sampled in this fit: its dataset reshuffles "
                "every epoch, and reading a probe batch from it would change the order your "
                "script trains on (pass validation_data or arrays, or shuffle with "
                "reshuffle_each_iteration=False, to see them)."
            )
            mon.note_once(
                "inspector: outputs off (reshuffled)", "Inspector: l" + self.outputs_off[1:]
            )
        elif inputs is None:
            self.outputs_off = (
                f"Layer outputs are not sampled: no probe batch (fit's x is a "
                f"{_kind(self.data)}, not an array, tensor or tf.data.Dataset, and the fit "
                "has no validation_data to take one from)."
            )
            mon.note_once("inspector: outputs off", "Inspector: l" + self.outputs_off[1:])
        else:
            self._activations = ActivationProbe(self.model, inputs, mon.note)
            self._activations.allow_trace = not self._budgeted

    def end(self) -> None:
        """Restore the optimizers; stop sampling; say the fit's measured overhead (over all
        of it, not as of its last sample: a budget may space the last sample early)."""
        self.next_at = NEVER
        last = self._last_status
        if last is not None:
            overhead = self.cadence.overhead(self.clock() - self._t0)
            self._emit(dataclasses.replace(last, step=self.monitor.global_step, overhead=overhead))
        if self._gradients is not None:
            try:
                self._gradients.remove()
            except Exception as exc:  # noqa: BLE001
                self.monitor.report_error("inspector: gradients", exc)

    # -- steps -------------------------------------------------------------
    def at_step(self, step: int) -> None:
        """Called when the global step reached :attr:`next_at`: arm, or sample."""
        clock = self.clock
        if step < self._sample_at:
            started = clock()
            self._arm()
            self.next_at = self._sample_at
            self.cadence.charge(clock() - started)  # reading derived optimizers' state
            return
        started = clock()
        cadence = self.cadence
        armed = self._armed_t is not None
        self._charge_recording(started)
        if not armed and self._budgeted and self._first_end is not None:
            # Still paying for earlier samples (the first ones, a trace): wait, now that
            # the step time is known, instead of sampling on the provisional gap.
            step_time = self._step_time(started)
            train = started - self._t0 - cadence.probe_seconds
            wait = cadence.wait_steps(step_time or 0.0, train)
            if wait > 0:
                self._schedule(step + min(wait, MAX_GAP))
                cadence.charge(clock() - started)
                return
        self._sample(step)
        ended = clock()
        cost = ended - started
        train = ended - self._t0 - cadence.probe_seconds - cost
        gap = cadence.gap_after(cost, self._step_time(ended - cost), train)
        if self._first_end is None:
            self._first_end = (ended, cadence.probe_seconds, step)
        settled = clock()
        self._plan_traces(train)
        self._last_status = InspectorStatus(
            self.fit_index,
            step,
            cadence.mode,
            gap,
            cadence.budget,
            cadence.overhead(clock() - self._t0),
            cost * 1000.0,
            self.largest_message,
            self.waiting,
            self.outputs_off
            or (self._activations.off_reason if self._activations is not None else ""),
            cadence.capped,
        )
        self._emit(self._last_status)
        self._schedule(step + gap)
        cadence.charge(clock() - settled)  # planning and the status count too

    def _step_time(self, now: float) -> float | None:
        """Training seconds per step since the end of the first sample (None: unknown yet)."""
        if self._first_end is None:
            return None
        t, probe, step = self._first_end
        steps = self.monitor.global_step - step
        if steps <= 0:
            return None
        return max(now - t - (self.cadence.probe_seconds - probe), 0.0) / steps

    def _charge_recording(self, now: float) -> None:
        """Charge the gradients' recording: what it added to Keras's trace of the step
        (once, timed while tracing), and the extra time of the armed step just run."""
        grads = self._gradients
        if grads is None:
            return
        traced = grads.trace_seconds - self._trace_charged
        if traced > 0.0:
            self.cadence.charge(traced)
            self._trace_charged = grads.trace_seconds
        if self._armed_t is not None:
            step_time = self._step_time(now)
            if step_time is not None:  # (the fit's first step is Keras's trace: not ours)
                self.cadence.charge(now - self._armed_t - step_time * self._spe)
            self._armed_t = None

    def _plan_traces(self, train: float) -> None:
        """Under the budget: allow one pending trace once the credit covers its estimate.

        Estimates: the layer-output probe, ``ACTIVATION_TRACE_FACTOR`` eager passes;
        the weight function, ``WEIGHT_TRACE_S_PER_VARIABLE`` a variable (traced only when
        the host summary is not already as cheap as a device call). Both have host paths
        that sample meanwhile.
        """
        if not self._budgeted:
            return
        credit = self.cadence.credit(train)
        acts, costs = self._activations, self._probe_cost
        pending: list[tuple[str, float]] = []
        if acts is not None and acts.needs_trace and not acts.allow_trace:
            pending.append(("activations", ACTIVATION_TRACE_FACTOR * costs.get("activations", 0)))
        if self._weights is not None and not self._weights_traced:
            host = costs.get("weights", 0.0)
            if self._weights.traced:
                self._weights_traced = True
            else:
                estimate = weight_trace_estimate(host, len(self._weights.variables))
                if estimate is not None:
                    pending.append(("weights", estimate))
        for what, estimate in pending:
            if estimate > credit:
                continue
            # One trace per sample; the samples after it wait until it is paid back.
            if what == "activations":
                acts.allow_trace = True
            else:
                self._weights_traced = True
            return

    def _arm(self) -> None:
        """Record the gradients of the coming step (reading the state of optimizers whose
        gradients are derived from it: that read is charged)."""
        grads = self._gradients
        if grads is not None:
            grads.arm()
            if grads.armed:
                self._armed_t = self.clock()

    def _schedule(self, sample_at: int) -> None:
        self._sample_at = sample_at
        # Arm the gradient recorder one hook before the sampled step.
        arm_at = sample_at - self._spe
        if self._gradients is not None and arm_at > self.monitor.global_step:
            self._gradients.disarm()
            self._armed_t = None
            self.next_at = arm_at
        else:
            self.next_at = sample_at
            self._arm()

    def _emit_tree(self) -> None:
        try:
            tree = ModelTree(self.fit_index, model_tree(self.model), _summary_text(self.model))
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("inspector: model tree", exc)
            return
        self._emit(tree)

    def _sample(self, step: int) -> None:
        mon = self.monitor
        if self._tree_pending:
            self._tree_pending = False
            self._emit_tree()
        if not self._activations_made and self.cadence.samples >= 1:
            self._make_activations()
        if self._weights is None and not self._weights_failed:
            self._weights = self._make("inspector: weights", lambda: weight_probe(self.model))
            self._weights_failed = self._weights is None
        for name, probe in (
            ("weights", self._weights),
            ("gradients", self._gradients),
            ("activations", self._activations),
        ):
            if probe is None:
                continue
            started = self.clock()
            try:
                if name == "weights":
                    event = probe.sample(self.fit_index, step, traced=self._weights_traced)
                else:
                    event = probe.sample(self.fit_index, step)
            except Exception as exc:  # noqa: BLE001
                mon.report_error(f"inspector: {name}", exc)
                event = None
            if name == "gradients" and probe.dropped:
                mon.note_once("inspector: gradients dropped", f"Inspector: {probe.dropped}")
                probe.dropped = ""
            self._probe_cost[name] = self.clock() - started
            if event is not None:
                self._emit(event)

    # -- helpers -----------------------------------------------------------
    @property
    def largest_message(self) -> int:
        """Bytes of the largest event sent so far (pickled; see ``core/message_size.py``)."""
        return self._sizes.largest

    def _emit(self, event: object) -> None:
        self._sizes.note(event)
        self.monitor.channel.emit(event)

    def _make(self, where: str, factory: Any) -> Any:
        try:
            return factory()
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error(where, exc)
            return None


def _summary_text(model: Any) -> str:
    """``model.summary()``'s text, kept per model while its variables stay the same.

    Keras renders it with ``rich`` (~15-60 ms on a loaded 2-core CPU): a later fit of
    the same model reuses it.
    """
    key = tuple(id(v) for v in getattr(model, "weights", ()))
    cached = _summaries.get(model)
    if cached is not None and cached[0] == key and key:
        return cached[1]
    text = model_summary_text(model)
    try:
        _summaries[model] = (key, text)
    except TypeError:  # not weak-referenceable: no cache
        pass
    return text


_summaries: weakref.WeakKeyDictionary[Any, tuple[tuple[int, ...], str]] = (
    weakref.WeakKeyDictionary()
)


def _built(model: Any) -> bool:
    """True when the model and every sublayer have made their variables."""
    try:
        return bool(model.built) and all(layer.built for layer in model._flatten_layers())
    except Exception:  # noqa: BLE001
        return bool(getattr(model, "built", False))


def _kind(data: Any) -> str:
    """What fit's x is, in a user's words (``PyDataset``, ``generator``, ...)."""
    if data is None:
        return "missing"
    names = [c.__name__ for c in type(data).__mro__]
    for known in ("PyDataset", "Sequence"):
        if known in names:
            return f"{known} ({type(data).__name__})" if names[0] != known else known
    if inspect.isgenerator(data):
        return "generator"
    return type(data).__name__
