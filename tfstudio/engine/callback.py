"""StudioCallback: Keras batch and epoch hooks -> events; commands applied between steps.

Per-step cost is the budget that matters (Keras 3 runs batch hooks
synchronously): ``on_train_batch_end`` only appends the batch's logs to the
channel as one raw row and checks for commands. Everything else happens once per
epoch or per fit, or on the pump's thread.

Keras 3 reports running means over the epoch in ``logs``; the batch's own value
of a mean metric is derived from two successive running means weighted by the
samples seen: ``own = (c_k*m_k - c_j*m_j) / (c_k - c_j)``, for a whole block of
rows at once on the pump's thread (``core/fit_rows.py``). Metrics that are not
means (AUC, precision) have no per-batch value: only their running value is sent.
Values a custom ``train_step`` returns that are not tracked metrics are taken as
the batch's own. Means that count in units of their own (a ``train_step``'s MAE
tracker counting samples beside a loss tracker counting batches) get their own
counts in the row (``c_k`` a tuple, one per key).
"""

from __future__ import annotations

import math
from time import perf_counter
from typing import Any

import keras
import numpy as np

from tfstudio.core.channel import BLOCK_ROWS
from tfstudio.core.events import EpochEnded, FitEnded, FitStarted, ModelBuilt
from tfstudio.core.fit_rows import MEAN as _MEAN
from tfstudio.core.fit_rows import RAW as _RAW
from tfstudio.core.fit_rows import RUNNING as _RUNNING
from tfstudio.core.fit_rows import RowLayout
from tfstudio.engine.control import TrainingController
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.probes.inspector import NEVER, Inspector
from tfstudio.engine.probes.model import model_summary


class StudioCallback(keras.callbacks.Callback):
    """Reports one ``fit`` call as events and applies Stop/Pause/Resume at batch ends.

    Args:
        monitor: the run's shared counters, flags and channel.
        fit_index: which fit of the run this is.
        initial_epoch: the fit's ``initial_epoch``.
    """

    def __init__(self, monitor: RunMonitor, fit_index: int, initial_epoch: int = 0) -> None:
        super().__init__()
        self._monitor = monitor
        self._emit = monitor.channel.emit
        self._rows = monitor.channel.rows  # raw rows, appended lock-free (core/fit_rows.py)
        self._seal_full = monitor.channel.seal_full
        self._settled = False  # nothing once-a-fit is left to do at a batch end (_settle)
        self._last_k = math.inf  # an epoch's last batch end is settled (its counts read)
        self._has_commands = monitor.channel.has_commands
        self.fit_index = fit_index
        self.initial_epoch = initial_epoch
        self.stopped = False
        self._kinds: dict[str, int] | None = None
        # Means whose count per batch is not the loss tracker's (a train_step's loss
        # tracker counts batches, its MAE samples): key -> (count variable, per batch),
        # so an epoch's partial last batch is weighted by its own count
        self._own: dict[str, tuple[Any, float]] = {}
        # Means of the model no log key is named after (a VAE's `total_loss` tracker,
        # returned as "loss"): looked at once, at the fit's second batch end
        self._unclaimed: list[Any] = []
        self._loss_count: Any = None  # the loss tracker's sample count variable
        self._steps: int | None = None
        self._epoch = initial_epoch
        self._prev_k = 0
        # the previous batch end's samples seen (its raw row's c_k: a float, or a tuple
        # of each key's when means count in units of their own)
        self._prev_c: float | tuple = 0.0
        # the previous batch end's running values (its raw row's), for its keys; None at
        # an epoch's first batch end and after the loss tracker was reset
        self._prev_vals: tuple | None = None
        self._layout: RowLayout | None = None  # this epoch's raw rows' keys and kinds
        self._per_batch = 1.0  # samples per batch (weights of the derivation)
        # per key of the layout, its tracker's samples per batch; None when every mean
        # counts as the loss tracker does
        self._units: tuple[float, ...] | None = None
        self._base_k = 0  # steps of this epoch before the loss tracker was last reset
        if monitor.control is None:
            monitor.control = TrainingController(monitor)
        self.control: TrainingController = monitor.control
        self.fit_data: Any = None  # fit's x, set by the interceptor (the inspector's probe batch)
        # whether the fit's batches carry sample weights (None: its data cannot tell)
        self.sample_weighted: bool | None = False
        # fit's validation_data: the probe batch when x cannot give one
        self.fit_validation: Any = None
        self._inspector: Inspector | None = None
        self._inspect_at = NEVER  # global step at which the inspector next wants the hook
        self.user_callbacks: list[Any] = []  # the fit's own callbacks (to say who ended it)
        self._unbuilt = False  # the model had no weights at the fit's start: count at step 1

    # -- fit -----------------------------------------------------------
    def on_train_begin(self, logs: dict | None = None) -> None:
        """Announce the fit and its model."""
        self._monitor.report_devices()
        try:
            params = self.params or {}
            self._steps = params.get("steps")
            self._last_k = self._steps if self._steps is not None else math.inf
            model = self.model
            spe = _steps_per_execution(model)
            self._monitor.fits_started += 1
            summary = model_summary(model)
            self._unbuilt = not summary.built
            self._emit(
                FitStarted(
                    fit_index=self.fit_index,
                    model=summary,
                    epochs=int(params.get("epochs") or 0),
                    initial_epoch=self.initial_epoch,
                    steps_per_epoch=self._steps,
                    steps_per_execution=spe,
                    global_step=self._monitor.global_step,
                    time=self._monitor.now(),
                    verbose=_verbosity(params.get("verbose")),
                    number=self._monitor.fits_started,
                    output=self._monitor.output_mark(),
                )
            )
            self._monitor.flush()  # the viewer has the fit's line before Keras's first output
        except Exception as exc:  # noqa: BLE001 - monitoring must never break training
            self._monitor.report_error("on_train_begin", exc)
        try:
            model = self.model
            self.control.begin(
                model, getattr(model, "optimizer", None), self.request_stop, self._rebase
            )
        except Exception as exc:  # noqa: BLE001
            self._monitor.report_error("controls (on_train_begin)", exc)
        if self._monitor.options.inspector:
            try:
                self._inspector = Inspector(
                    self._monitor, self.fit_index, self.fit_data, self.fit_validation
                )
                self._inspector.begin(self.model, _steps_per_execution(self.model))
                self._inspect_at = self._inspector.next_at
            except Exception as exc:  # noqa: BLE001
                self._monitor.report_error("inspector", exc)

    def on_train_end(self, logs: dict | None = None) -> None:
        """Mark the end of this fit segment."""
        self._inspect_at = NEVER
        if self._inspector is not None:
            self._inspector.end()
        try:
            self.control.end()
        except Exception as exc:  # noqa: BLE001
            self._monitor.report_error("controls (on_train_end)", exc)
        try:
            early = self._early_end()
            if early:
                self._monitor.note(early)
        except Exception as exc:  # noqa: BLE001
            self._monitor.report_error("on_train_end (early end)", exc)
        try:
            mon = self._monitor
            self._emit(
                FitEnded(
                    self.fit_index, mon.global_step, self.stopped, mon.now(), mon.output_mark()
                )
            )
            self._monitor.flush()  # a fit's end reaches the viewer even if the process dies next
        except Exception as exc:  # noqa: BLE001
            self._monitor.report_error("on_train_end", exc)

    def _early_end(self) -> str:
        """Why the fit ended before its last epoch, when one of its callbacks ended it.

        ``EarlyStopping`` with ``verbose=0`` (its default) says nothing: the run just
        ends after epoch 20 of 30. Empty when the fit ran its epochs or tfstudio ended it.
        """
        model = self.model
        epochs = int((self.params or {}).get("epochs") or 0)
        done = self._epoch + 1
        if self.stopped or not getattr(model, "stop_training", False) or done >= epochs:
            return ""
        head = f"Fit {self.fit_index + 1} ended after epoch {done} of {epochs}"
        for cb in self.user_callbacks:
            if isinstance(cb, keras.callbacks.EarlyStopping) and cb.stopped_epoch > 0:
                best = cb.best
                text = (
                    f"{head}: EarlyStopping saw {cb.monitor} not improve for {cb.patience} "
                    f"epoch{'s' if cb.patience != 1 else ''}"
                )
                if best is not None:
                    text += f" (best {float(best):.4g} at epoch {cb.best_epoch + 1})"
                if cb.restore_best_weights and cb.best_weights is not None:
                    text += f"; the model now holds epoch {cb.best_epoch + 1}'s weights"
                return text + "."
        names = sorted(
            {
                type(cb).__name__
                for cb in self.user_callbacks
                if not isinstance(cb, keras.callbacks.History | keras.callbacks.ProgbarLogger)
            }
        )
        by = f" (by one of its callbacks: {', '.join(names)})" if names else ""
        return f"{head}: model.stop_training was set{by}."

    # -- epochs --------------------------------------------------------
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        """Reset the per-epoch running-mean bookkeeping."""
        self._epoch = epoch
        self._prev_k = 0
        self._prev_c = 0.0
        self._prev_vals = None
        self._base_k = 0
        if self._layout is not None:
            self._layout = self._layout.for_epoch(epoch)

    def _rebase(self) -> None:
        """The loss tracker was reset mid-epoch (after a restore): derive from there."""
        self._base_k = self._prev_k
        self._prev_c = 0.0
        self._prev_vals = None

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        """Send the epoch's metrics, ``val_`` metrics included."""
        try:
            metrics = {k: _to_float(v) for k, v in (logs or {}).items()}
            if self.stopped:
                # Validation was skipped or cut short by Stop: no val_ numbers to trust.
                metrics = {k: v for k, v in metrics.items() if not k.startswith("val_")}
            self._emit(
                EpochEnded(
                    self.fit_index, epoch, self._monitor.global_step, metrics, self._monitor.now()
                )
            )
        except Exception as exc:  # noqa: BLE001
            self._monitor.report_error("on_epoch_end", exc)

    # -- steps (the hot path) ------------------------------------------
    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Append this hook's logs to the channel as one raw row; then the step boundary.

        Every batch end appends the same raw row (``core/fit_rows.py``); each batch's
        own values are derived from it on the pump's thread. What is not the same from
        one batch end to the next (the fit's first, an epoch's last with its counts
        read, new keys) is settled first in :meth:`_settle`.
        """
        loss = None
        k = batch + 1
        if logs is None:
            logs = {}
        try:
            layout = self._layout
            if not (
                self._settled
                and self._prev_k < k < self._last_k
                and tuple(logs) == layout.keys  # in order: the values come in it
            ):
                k, c_k, layout = self._settle(k, logs)
            else:
                units = self._units
                b = k - self._base_k
                c_k = b * self._per_batch if units is None else tuple(b * u for u in units)
            if k > self._prev_k:
                vals = tuple(logs.values())
                n = k - self._prev_k
                mon = self._monitor
                step = mon.global_step = mon.global_step + n
                rows = self._rows
                rows.append(
                    (layout, step, k, n, perf_counter() - mon.t0, c_k, self._prev_c, vals,
                     self._prev_vals)
                )  # fmt: skip
                self._prev_k, self._prev_c, self._prev_vals = k, c_k, vals
                if len(rows) >= BLOCK_ROWS:
                    self._seal_full()
                i = layout.loss_at
                if i is not None and type(vals[i]) is float:  # (a number Keras made a float)
                    loss = vals[i]
        except Exception as exc:  # noqa: BLE001
            self._monitor.report_error("on_train_batch_end", exc)
        if self._monitor.global_step >= self._inspect_at:
            self._inspect()
        self.control.after_step(loss)

    def _settle(self, k: int, logs: dict) -> tuple[int, float | tuple, RowLayout]:
        """A batch end unlike the one before: the fit's first (what to derive how), its
        second (unnamed means claimed), an epoch's last (counts read), new keys.

        Returns the batch end's step within the epoch (Keras may report the end of the
        last execution past the epoch's end), its samples seen (``c_k``: one count, or
        each key's where means count in units of their own) and the rows' layout.
        """
        if self._unbuilt:  # the fit's first batch end: the model is built now
            self._unbuilt = False
            self._announce_built()
        steps_per_epoch = self._steps
        last = False
        if steps_per_epoch is not None and k >= steps_per_epoch:
            k = steps_per_epoch
            last = True
        kinds = self._kinds
        if kinds is None:  # the fit's first batch end: what to derive how, read once a fit
            kinds = self._classify(logs)
            if self._loss_count is not None:
                # An epoch's first batch is a whole one: its size holds for the fit's later
                # epochs (only the last batch of an epoch may be smaller: its count is
                # read). Each read is ~0.25 ms of the step.
                self._per_batch = max(_count(self._loss_count) / k, 1e-12)
            self._own = self._own_units(kinds, k)
        elif self._unclaimed and self._prev_k > 0:
            self._claim(logs, kinds)
        self._settled = not self._unclaimed
        keys = tuple(logs)
        layout = self._layout
        layout_kinds = [kinds.get(key, _RAW) for key in keys]
        if layout is None or not layout.same(self._epoch, keys, layout_kinds):
            old = layout.keys if layout is not None else ()
            layout = self._layout = RowLayout(self.fit_index, self._epoch, keys, layout_kinds)
            own = self._own
            self._units = (
                tuple(own[key][1] if key in own else self._per_batch for key in keys)
                if own
                else None
            )
            if self._prev_vals is not None and old != keys:
                # new keys mid-epoch: the previous values by key; a key new here is
                # its own previous (its batch's value is its running value)
                vals = tuple(logs.values())
                self._prev_vals = _realign(old, self._prev_vals, keys, vals)
                if type(self._prev_c) is tuple:  # (0: a new key's batch is its first)
                    self._prev_c = _realign(old, self._prev_c, keys, (0.0,) * len(keys))
        b = k - self._base_k
        units = self._units
        c_k: float | tuple = b * self._per_batch
        if last and self._loss_count is not None:
            c_k = _count(self._loss_count)
        if units is not None:
            own = self._own
            c_k = tuple(
                (_count(own[key][0]) if last else b * u) if key in own else c_k
                for key, u in zip(keys, units, strict=True)
            )
        return k, c_k, layout

    def _announce_built(self) -> None:
        """Tell the parameter counts of a model built by the fit's first step."""
        try:
            summary = model_summary(self.model)
            if summary.built:
                self._emit(
                    ModelBuilt(self.fit_index, summary.total_params, summary.trainable_params)
                )
        except Exception as exc:  # noqa: BLE001
            self._monitor.report_error("model parameters", exc)

    def _inspect(self) -> None:
        try:
            self._inspector.at_step(self._monitor.global_step)
            self._inspect_at = self._inspector.next_at
        except Exception as exc:  # noqa: BLE001
            self._inspect_at = NEVER
            self._monitor.report_error("inspector", exc)

    def _classify(self, logs: dict) -> dict[str, int]:
        """Decide once per fit which log keys are running means, from the model's metrics."""
        means: set[str] = set()
        stateful: set[str] = set()
        for metric in _flat_metrics(self.model):
            if isinstance(metric, keras.metrics.Mean):
                means.add(metric.name)
                if metric.name == "loss" and hasattr(metric, "count"):
                    self._loss_count = metric.count
            else:
                stateful.add(metric.name)
        # A mean whose count per batch varies unlike the samples' cannot give its batch's
        # own value from the logs (its running value is sent): a weighted metric under
        # sample weights (the count sums them), and the compiled metrics of a model whose
        # outputs carry a Keras mask (padded sequences: they count the unmasked share).
        # Plain `metrics=` ignore sample weights, and a count of one per batch (a
        # train_step's Mean tracker) is in proportion: derived as usual.
        weighted = set()
        if self.sample_weighted is not False:
            weighted = _weighted_metric_names(self.model)
        if _outputs_masked(self.model):
            weighted |= _compiled_metric_names(self.model)
        stateful |= weighted & means
        means -= weighted
        # a multi-output model logs its outputs' metrics as "<output>_<metric>" (cls_accuracy
        # for the "accuracy" of output "cls"): the same metrics, by those names too (only
        # the model's own output names: a train_step's raw "d_loss" stays raw)
        outputs = [str(o) for o in getattr(self.model, "output_names", None) or []]
        means |= {f"{o}_{name}" for o in outputs for name in means}
        stateful |= {f"{o}_{name}" for o in outputs for name in stateful}
        kinds = {}
        for key in logs:
            kinds[key] = _MEAN if key in means else (_RUNNING if key in stateful else _RAW)
        self._kinds = kinds
        if any(kind == _RAW for kind in kinds.values()):
            self._unclaimed = [
                m
                for m in _flat_metrics(self.model)
                if isinstance(m, keras.metrics.Mean) and m.name not in logs and m.name in means
            ][:8]
        return kinds

    def _own_units(self, kinds: dict[str, int], k: int) -> dict[str, tuple[Any, float]]:
        """At the fit's first batch end: the means (by their own names) whose count per
        batch differs from the loss tracker's, with theirs (one count read each, once a
        fit; a compiled model's metrics count samples as its loss tracker does)."""
        out: dict[str, tuple[Any, float]] = {}
        try:
            for metric in _flat_metrics(self.model):
                name = metric.name
                count = getattr(metric, "count", None)
                if name == "loss" or kinds.get(name) != _MEAN or count is None:
                    continue
                per_batch = _count(count) / k
                if per_batch > 0 and abs(per_batch - self._per_batch) > 1e-6 * self._per_batch:
                    out[name] = (count, per_batch)
        except Exception as exc:  # noqa: BLE001 - the shared count is used, as before
            self._monitor.report_error("metric counts", exc)
            return {}
        return out

    def _claim(self, logs: dict, kinds: dict[str, int]) -> None:
        """At the fit's second batch end (within an epoch): a raw value that is one of the
        model's unnamed Means' running value is that running mean, and derived like one
        (the Keras VAE example returns its `total_loss` tracker's result as "loss"; at
        the first batch a running mean and the batch's value are the same, so only now
        can they be told apart). A few variable reads, once a fit."""
        unclaimed, self._unclaimed = self._unclaimed, []
        try:
            results = [float(np.asarray(m.result())) for m in unclaimed]
        except Exception as exc:  # noqa: BLE001 - the values stay as they came
            self._monitor.report_error("metric kinds", exc)
            return
        for key, value in logs.items():
            if kinds.get(key) != _RAW:
                continue
            v = float(value)
            if any(r == v or abs(r - v) <= 1e-7 * abs(v) for r in results):
                kinds[key] = _MEAN

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """During the validation pass of a fit, Stop also ends validation at once."""
        if self._has_commands():
            self.control.apply_commands()
        if self.stopped and hasattr(self.model, "stop_evaluating"):
            self.model.stop_evaluating = True

    # -- stopping --------------------------------------------------------
    def request_stop(self) -> None:
        """End this fit after the current batch, skipping the validation pass."""
        if self.stopped:
            return
        self.stopped = True
        self.model.stop_training = True
        _skip_evaluation(self.model)


def _skip_evaluation(model: Any) -> None:
    """After Stop, Keras would still run validation; make this model's evaluate a no-op.

    The instance attribute is removed again when the fit returns (see instrument).
    """

    def evaluate(*args: Any, **kwargs: Any) -> dict:
        return {}

    model.evaluate = evaluate
    model._tfstudio_skipped_evaluate = True


def restore_evaluation(model: Any) -> None:
    """Undo :func:`_skip_evaluation` (no-op if it was not applied)."""
    if model.__dict__.pop("_tfstudio_skipped_evaluate", False):
        model.__dict__.pop("evaluate", None)


def _realign(old: tuple[str, ...], values: tuple, keys: tuple[str, ...], fill: tuple) -> tuple:
    """``values`` (one per key of ``old``) for ``keys``: ``fill``'s where a key is new."""
    by_key = dict(zip(old, values, strict=True))
    return tuple(by_key.get(key, f) for key, f in zip(keys, fill, strict=True))


def _count(variable: Any) -> float:
    from tfstudio.engine.probes.values import host_value  # one raw read (~4x less Python)

    return float(host_value(variable))


def _to_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _outputs_masked(model: Any) -> bool:
    """Whether any of the model's (symbolic) outputs carries a Keras mask."""
    try:
        outputs = list(getattr(model, "outputs", None) or [])
    except Exception:  # noqa: BLE001 - a subclassed model has no symbolic outputs
        return False
    return any(getattr(o, "_keras_mask", None) is not None for o in outputs)


def _weighted_metric_names(model: Any) -> set[str]:
    """Names of the metrics compiled as ``weighted_metrics`` (a ``MetricsList`` per output)."""
    compiled = getattr(model, "_compile_metrics", None)
    lists = getattr(compiled, "_flat_weighted_metrics", None) or []
    return {m.name for each in lists if each is not None for m in getattr(each, "metrics", [each])}


def _compiled_metric_names(model: Any) -> set[str]:
    """Names of every metric given to ``compile`` (``metrics`` and ``weighted_metrics``)."""
    return {m.name for m in getattr(getattr(model, "_compile_metrics", None), "metrics", [])}


def _flat_metrics(model: Any) -> list[Any]:
    out: list[Any] = []
    for metric in getattr(model, "metrics", []) or []:
        inner = getattr(metric, "metrics", None)
        if inner and not isinstance(metric, keras.metrics.Mean):
            out.extend(inner)  # CompileMetrics / CompileLoss wrap the real ones
        out.append(metric)
    return out


def _steps_per_execution(model: Any) -> int:
    spe = getattr(model, "steps_per_execution", 1)
    try:
        return max(1, int(spe))
    except (TypeError, ValueError):
        return 1


def _verbosity(verbose: Any) -> int:
    """A fit's ``verbose`` as Keras acts on it (``"auto"`` prints: 1)."""
    if verbose == "auto":
        return 1
    try:
        return int(verbose or 0)
    except (TypeError, ValueError):
        return 0
