"""The inspector: runs the probes of one ``fit`` on a cadence, from its callback.

``StudioCallback`` calls :meth:`Inspector.begin` at ``on_train_begin`` and
:meth:`Inspector.at_step` only when the global step reaches
:attr:`Inspector.next_at` (one integer comparison per step on the hot path).
At ``next_at`` the inspector either arms the gradient recorder for the coming
step, or samples (weights, gradients, layer outputs) and schedules the next
sample. Any failure is reported once and that probe is dropped; training goes on.
"""

from __future__ import annotations

import pickle
import time
import weakref
from typing import Any

from tfstudio.core.events import InspectorStatus, ModelTree
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.probes.activations import ActivationProbe, probe_batch
from tfstudio.engine.probes.cadence import Cadence
from tfstudio.engine.probes.gradients import GradientProbe
from tfstudio.engine.probes.model import model_summary_text, model_tree
from tfstudio.engine.probes.weights import WeightProbe

NEVER = 1 << 62
# One weight probe per model, kept across its fits: its tf.function is traced once.
_weight_probes: weakref.WeakKeyDictionary[Any, WeightProbe] = weakref.WeakKeyDictionary()
# One gradient probe per model: its recording train function is traced once.
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

    def __init__(self, monitor: RunMonitor, fit_index: int, data: Any = None) -> None:
        self.monitor = monitor
        self.fit_index = fit_index
        self.data = data
        options = monitor.options
        self.cadence = Cadence(options.inspector_budget, options.sample_every)
        self.next_at = NEVER
        self.largest_message = 0
        self._weights: WeightProbe | None = None
        self._gradients: GradientProbe | None = None
        self._activations: ActivationProbe | None = None
        self._sample_at = NEVER
        self._t0 = 0.0
        self._step0 = 0
        self._spe = 1
        self.model: Any = None
        self._tree_pending = False
        self._weights_failed = False

    # -- fit start / end ---------------------------------------------------
    def begin(self, model: Any, steps_per_execution: int = 1) -> None:
        """Announce the model tree; prepare the probes; schedule the first sample."""
        mon = self.monitor
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
                self._gradients.install()
            except Exception as exc:  # noqa: BLE001
                mon.report_error("inspector: gradients", exc)
                self._gradients = None
        inputs = None
        try:
            inputs = probe_batch(self.data)
        except Exception as exc:  # noqa: BLE001
            mon.report_error("inspector: probe batch", exc)
        if inputs is None:
            mon.note(
                "Inspector: no probe batch (fit's x is not an array, tensor or tf.data.Dataset): "
                "layer outputs are not sampled."
            )
        else:
            self._activations = ActivationProbe(model, inputs, mon.note)
        self._t0 = time.perf_counter()
        self._step0 = mon.global_step
        self._schedule(mon.global_step + 1)

    def end(self) -> None:
        """Restore the optimizers; stop sampling."""
        self.next_at = NEVER
        if self._gradients is not None:
            try:
                self._gradients.remove()
            except Exception as exc:  # noqa: BLE001
                self.monitor.report_error("inspector: gradients", exc)

    # -- steps -------------------------------------------------------------
    def at_step(self, step: int) -> None:
        """Called when the global step reached :attr:`next_at`: arm, or sample."""
        if step < self._sample_at:
            if self._gradients is not None:
                self._gradients.arm()
            self.next_at = self._sample_at
            return
        started = time.perf_counter()
        self._sample(step)
        cost = time.perf_counter() - started
        gap = self.cadence.next_gap(cost, step - self._step0, started + cost - self._t0)
        self._emit(
            InspectorStatus(
                self.fit_index,
                step,
                self.cadence.mode,
                gap,
                self.cadence.budget,
                self.cadence.overhead(time.perf_counter() - self._t0),
                cost * 1000.0,
                self.largest_message,
            )
        )
        self._schedule(step + gap)

    def _schedule(self, sample_at: int) -> None:
        self._sample_at = sample_at
        # Arm the gradient recorder one hook before the sampled step.
        arm_at = sample_at - self._spe
        grads = self._gradients
        if grads is not None and arm_at > self.monitor.global_step:
            self.next_at = arm_at
        else:
            self.next_at = sample_at
            if grads is not None and not grads.armed:
                grads.arm()

    def _emit_tree(self) -> None:
        try:
            tree = ModelTree(self.fit_index, model_tree(self.model), model_summary_text(self.model))
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("inspector: model tree", exc)
            return
        self._emit(tree)

    def _sample(self, step: int) -> None:
        mon = self.monitor
        if self._tree_pending:
            self._tree_pending = False
            self._emit_tree()
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
            try:
                event = probe.sample(self.fit_index, step)
            except Exception as exc:  # noqa: BLE001
                mon.report_error(f"inspector: {name}", exc)
                event = None
            if event is not None:
                self._emit(event)

    # -- helpers -----------------------------------------------------------
    def _emit(self, event: object) -> None:
        size = len(pickle.dumps(event, protocol=pickle.HIGHEST_PROTOCOL))
        self.largest_message = max(self.largest_message, size)
        self.monitor.channel.emit(event)

    def _make(self, where: str, factory: Any) -> Any:
        try:
            return factory()
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error(where, exc)
            return None


def _built(model: Any) -> bool:
    """True when the model and every sublayer have made their variables."""
    try:
        return bool(model.built) and all(layer.built for layer in model._flatten_layers())
    except Exception:  # noqa: BLE001
        return bool(getattr(model, "built", False))
