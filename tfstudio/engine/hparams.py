"""A run's hyperparameters, recorded by themselves from the script's own calls.

:class:`HParamsCapture` watches every ``keras.Model.compile`` and ``fit`` (the fit
interceptor, ``engine/instrument.py``, tells it of each fit), the seed calls
(``keras.utils.set_random_seed``, ``tf.random.set_seed``) and the start of each
custom training loop, and emits a :class:`~tfstudio.core.events.Hyperparameters`
event whenever what is known changed: the recorder writes them to ``run.json`` and
to the event file (TensorBoard's HParams plugin data), a viewer shows them.

Only reads: the optimizer's ``get_config()``, the model's parameter count when it is
built, a dataset's batch size from its structure. Nothing is built, drawn or
iterated, so monitoring stays bit-exact.

The flat keys (c56 contract): ``optimizer``, ``optimizer.<config key>`` (the learning
rate as ``optimizer.learning_rate``, or ``optimizer.learning_rate.schedule`` = the
schedule's class and ``optimizer.learning_rate.<its config key>``), ``loss``,
``loss.<config key>``, ``metrics``, ``batch_size``, ``epochs``, ``steps_per_epoch``,
``validation``, ``model``, ``model.class``, ``model.params``, ``args``, ``seed``,
``tensorflow``, ``keras``. A later fit whose settings differ from the first adds the
keys that differ, prefixed ``fit<n>.`` (``fit2.epochs``).
"""

from __future__ import annotations

import functools
import inspect
import math
import shlex
import sys
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from tfstudio.core.events import FitStarted, Hyperparameters
from tfstudio.core.hparams import (
    HParams,
    clean,
    plain_value,
    session_end_event,
    session_start_event,
)
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.patches import Patches

if TYPE_CHECKING:
    from tfstudio.engine.recorder import Recorder

DEFAULT_BATCH_SIZE = 32  # Keras's when fit is given arrays and no batch_size
# An optimizer's config keys that say nothing (its name) or repeat the class.
_OPTIMIZER_SKIP = frozenset({"name"})
_LOSS_SKIP = frozenset({"name", "dtype", "fn"})
_SERIAL_SKIP = frozenset({"module", "registered_name"})


# -- describing what a script passed ---------------------------------------------------
def flatten(
    prefix: str, value: Any, out: dict[str, Any], skip: frozenset[str] = frozenset()
) -> None:
    """Put ``value`` into ``out`` under ``prefix``: a nested config as dotted keys, a
    serialized Keras object (``{"class_name", "config"}``) as its class name at
    ``prefix`` and its config below it; None dropped."""
    if value is None:
        return
    if isinstance(value, Mapping):
        if "class_name" in value and "config" in value:
            out[prefix] = str(value["class_name"])
            flatten(prefix, value["config"], out, skip | {"name"})
            return
        for key, item in value.items():
            if key in skip or key in _SERIAL_SKIP:
                continue
            flatten(f"{prefix}.{key}", item, out)
        return
    if isinstance(value, list | tuple):
        out[prefix] = ",".join(str(plain_value(v)) for v in value if v is not None)
        return
    out[prefix] = plain_value(value)


def shortest_float32(value: Any) -> Any:
    """A float that a float32 variable held (``0.0010000000474974513``, Keras's learning
    rate read back) as the shortest decimal of that float32 (``0.001``); any other value
    (a float32 cannot hold it exactly) as it is."""
    if type(value) is not float or not math.isfinite(value):
        return value
    f32 = np.float32(value)
    if float(f32) != value:
        return value
    return float(np.format_float_positional(f32, unique=True, trim="-"))


def describe_optimizer(optimizer: Any) -> dict[str, Any]:
    """``optimizer`` = its class, ``optimizer.<key>`` its config (Keras's ``get_config()``;
    a learning-rate schedule as ``optimizer.learning_rate.schedule`` + its config)."""
    if optimizer is None:
        return {}
    out: dict[str, Any] = {"optimizer": type(optimizer).__name__}
    try:
        config = optimizer.get_config()
    except Exception:  # noqa: BLE001 - a custom optimizer without a config: its class says it
        return out
    if not isinstance(config, Mapping):
        return out
    for key, value in config.items():
        if key in _OPTIMIZER_SKIP:
            continue
        if key == "learning_rate" and isinstance(value, Mapping) and "class_name" in value:
            out["optimizer.learning_rate.schedule"] = str(value["class_name"])
            flatten("optimizer.learning_rate", value.get("config") or {}, out, frozenset({"name"}))
            continue
        flatten(f"optimizer.{key}", value, out)
    return {k: shortest_float32(v) for k, v in out.items()}


def _name_of(thing: Any) -> str:
    """A loss or metric as the script named it: a string as is, an object by its class
    (a metric by its ``name``), a function by its name."""
    if isinstance(thing, str):
        return thing
    if inspect.isfunction(thing) or inspect.isbuiltin(thing):
        return thing.__name__
    if inspect.isclass(thing):
        return thing.__name__
    return type(thing).__name__


def _metric_name(metric: Any) -> str:
    if isinstance(metric, str) or inspect.isfunction(metric):
        return _name_of(metric)
    name = getattr(metric, "name", None)
    return name if isinstance(name, str) and name else _name_of(metric)


def _names(value: Any, name: Callable[[Any], str]) -> str | None:
    """Comma-joined names of a loss/metrics argument (a dict per output: ``out:name``)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        parts = []
        for out, item in value.items():
            items = item if isinstance(item, list | tuple) else [item]
            parts += [f"{out}:{name(i)}" for i in items if i is not None]
        return ",".join(parts)
    if isinstance(value, list | tuple):
        return ",".join(_names(v, name) or "" for v in value if v is not None)
    return name(value)


def describe_loss(loss: Any) -> dict[str, Any]:
    """``loss`` = its name; a Loss object's settings (``from_logits``, ...) as ``loss.<key>``."""
    out: dict[str, Any] = {}
    names = _names(loss, _name_of)
    if names:
        out["loss"] = names
    get_config = getattr(loss, "get_config", None)
    if callable(get_config) and not isinstance(loss, str | Mapping | list | tuple):
        try:
            config = get_config()
        except Exception:  # noqa: BLE001 - its name says enough
            config = None
        if isinstance(config, Mapping):
            for key, value in config.items():
                if key in _LOSS_SKIP or (key == "reduction" and value == "sum_over_batch_size"):
                    continue
                flatten(f"loss.{key}", value, out)
    return out


def own_optimizers(model: Any) -> dict[str, Any]:
    """Optimizers a model keeps besides ``model.optimizer`` (a GAN's ``d_optimizer`` and
    ``g_optimizer``, set by its own ``compile``), each under its attribute's name."""
    out: dict[str, Any] = {}
    main = getattr(model, "optimizer", None)
    for name, value in list(vars(model).items()):
        if name.startswith("_") or value is main or value is None:
            continue
        if hasattr(value, "apply_gradients") and hasattr(value, "get_config"):
            for key, item in describe_optimizer(value).items():
                out[name + key[len("optimizer") :]] = item
    return out


def describe_compile(
    model: Any, arguments: Mapping[str, Any], own_compile: bool = False
) -> dict[str, Any]:
    """What a ``compile`` call set: optimizer (the model's, once compiled), loss, metrics.

    Args:
        own_compile: the model's class has a ``compile`` of its own that called Keras's:
            when it keeps optimizers of its own and passed none on, ``model.optimizer`` is
            Keras's default, which its ``train_step`` does not use: left out.
    """
    out: dict[str, Any] = {}
    others = own_optimizers(model)
    if "optimizer" in arguments or not (own_compile and others):
        out.update(describe_optimizer(getattr(model, "optimizer", None)))
    out.update(others)
    out.update(describe_loss(arguments.get("loss")))
    metrics = _names(arguments.get("metrics"), _metric_name)
    if metrics:
        out["metrics"] = metrics
    weighted = _names(arguments.get("weighted_metrics"), _metric_name)
    if weighted:
        out["weighted_metrics"] = weighted
    for key in ("steps_per_execution", "run_eagerly", "jit_compile"):
        if key in arguments and arguments[key] not in (None, "auto"):
            out[key] = arguments[key]
    return out


def describe_model(model: Any) -> dict[str, Any]:
    """``model`` (its name), ``model.class``, ``model.params`` (only once it is built:
    building it here would draw its initial weights)."""
    out: dict[str, Any] = {
        "model": getattr(model, "name", None),
        "model.class": type(model).__name__,
    }
    if getattr(model, "built", False):
        try:
            out["model.params"] = int(model.count_params())
        except Exception:  # noqa: BLE001 - a model Keras cannot count yet
            pass
    return out


def _first_leaf(x: Any) -> Any:
    while isinstance(x, Mapping | list | tuple) and len(x):
        x = next(iter(x.values())) if isinstance(x, Mapping) else x[0]
    return x


def dataset_batch_size(dataset: Any) -> int | None:
    """The batch size a ``tf.data`` pipeline batches by, read from its structure (its
    ``batch()``'s argument, or a static first dimension); None when it cannot tell."""
    node, seen = dataset, 0
    while node is not None and seen < 64:
        size = getattr(node, "_batch_size", None)
        if size is not None:
            try:
                return int(size.numpy() if hasattr(size, "numpy") else size)
            except Exception:  # noqa: BLE001
                return None
        node = getattr(node, "_input_dataset", None)
        seen += 1
    leaf = _first_leaf(getattr(dataset, "element_spec", None))
    shape = getattr(leaf, "shape", None)
    try:
        first = shape[0] if shape is not None and len(shape) else None
    except TypeError:  # unknown rank
        first = None
    return int(first) if first is not None else None


def _length(x: Any) -> int | None:
    shape = getattr(_first_leaf(x), "shape", None)
    try:
        return int(shape[0]) if shape is not None and len(shape) and shape[0] is not None else None
    except (TypeError, ValueError):
        return None


def describe_fit(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """What a ``fit`` call set: batch size (``dataset`` when its data decides and cannot
    tell), epochs, steps per epoch, validation."""
    out: dict[str, Any] = {}
    x = arguments.get("x")
    split = float(arguments.get("validation_split") or 0.0)
    batch = arguments.get("batch_size")
    n = None
    if hasattr(x, "element_spec"):  # a tf.data.Dataset batches itself
        batch = dataset_batch_size(x)
    elif x is not None and (hasattr(_first_leaf(x), "shape")):
        n = _length(x)
        batch = batch if batch is not None else DEFAULT_BATCH_SIZE
    out["batch_size"] = int(batch) if batch is not None else "dataset"
    out["epochs"] = int(arguments.get("epochs", 1) or 1)
    steps = arguments.get("steps_per_epoch")
    if steps is None and n is not None and isinstance(batch, int) and batch > 0:
        train = int(math.floor(n * (1.0 - split))) if split else n
        steps = math.ceil(train / batch)
    elif steps is None and hasattr(x, "cardinality"):
        try:
            count = int(x.cardinality())
        except Exception:  # noqa: BLE001
            count = -2
        steps = count if count >= 0 else None  # -1 infinite, -2 unknown
    if steps is not None:
        out["steps_per_epoch"] = int(steps)
    if arguments.get("validation_data") is not None:
        out["validation"] = "validation_data"
    elif split:
        out["validation"] = f"validation_split={split:g}"
    else:
        out["validation"] = "none"
    freq = arguments.get("validation_freq", 1)
    if freq not in (None, 1) and out["validation"] != "none":
        out["validation_freq"] = freq
    initial = arguments.get("initial_epoch", 0)
    if initial:
        out["initial_epoch"] = int(initial)
    return out


# -- the capture -------------------------------------------------------------------------
class HParamsCapture:
    """Collects one run's hyperparameters and emits them as they become known.

    Args:
        monitor: the run (events go to its channel).
    """

    def __init__(self, monitor: RunMonitor) -> None:
        self.monitor = monitor
        self._base: dict[str, Any] = {}  # versions, args, seed
        # id(model) -> its last compile's arguments, and whether its class's own compile
        # called Keras's
        self._compiled: dict[int, tuple[dict[str, Any], bool]] = {}
        self._fits: list[dict[str, Any]] = []  # each fit's settings, in order
        self._pending: dict[str, Any] | None = None  # a compile before the first fit
        self._loops: list[dict[str, Any]] = []
        self._sent: HParams | None = None
        self._patches = Patches()

    # -- patching -------------------------------------------------------
    def patch(self, keras: Any) -> None:
        """Wrap ``keras.Model.compile`` and the seed functions (put back by :meth:`unpatch`)."""
        self._base["keras"] = str(getattr(keras, "__version__", ""))
        tf = sys.modules.get("tensorflow")
        if tf is not None:
            self._base["tensorflow"] = str(getattr(tf, "__version__", ""))
        self._patches.replace(keras.Model, "compile", self._wrap_compile)
        utils = getattr(keras, "utils", None)
        if utils is not None and callable(getattr(utils, "set_random_seed", None)):
            self._patches.replace(utils, "set_random_seed", self._wrap_seed)
        random = getattr(tf, "random", None) if tf is not None else None
        if random is not None and callable(getattr(random, "set_seed", None)):
            self._patches.replace(random, "set_seed", self._wrap_seed)

    def unpatch(self) -> None:
        """Put back what :meth:`patch` wrapped (idempotent)."""
        self._patches.restore()

    def _wrap_compile(self, original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)
        capture = self

        @functools.wraps(original)
        def compile(model: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A001 - Keras's name
            result = original(model, *args, **kwargs)
            try:
                bound = signature.bind(model, *args, **kwargs)
                own = getattr(type(model), "compile", compile) is not compile
                capture.compiled(model, dict(bound.arguments), own)
            except Exception as exc:  # noqa: BLE001 - never break the script's compile
                capture.monitor.report_error("recording compile's hyperparameters", exc)
            return result

        compile.__tfstudio_wrapped__ = True  # type: ignore[attr-defined]
        return compile

    def _wrap_seed(self, original: Callable[..., Any]) -> Callable[..., Any]:
        capture = self

        @functools.wraps(original)
        def set_seed(seed: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(seed, *args, **kwargs)
            try:
                capture.seeded(seed)
            except Exception as exc:  # noqa: BLE001
                capture.monitor.report_error("recording the seed", exc)
            return result

        set_seed.__tfstudio_wrapped__ = True  # type: ignore[attr-defined]
        return set_seed

    # -- what the script did --------------------------------------------
    def compiled(self, model: Any, arguments: Mapping[str, Any], own: bool = False) -> None:
        """A ``compile`` returned: its settings are the model's until it is compiled again
        (``own``: called from the model class's own ``compile``)."""
        settings = describe_model(model)
        settings.update(describe_compile(model, arguments, own))
        self._compiled[id(model)] = (dict(arguments), own)
        if not self._fits:
            self._pending = settings
        self._emit()

    def fit_called(self, model: Any, arguments: Mapping[str, Any]) -> None:
        """A ``fit`` begins (before Keras runs it): its settings with its model's compile's.
        Never raises (a failure is reported once; the fit goes on)."""
        try:
            self._fit_called(model, arguments)
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("recording fit's hyperparameters", exc)

    def _fit_called(self, model: Any, arguments: Mapping[str, Any]) -> None:
        settings = describe_model(model)
        how = self._compiled.get(id(model))
        if how is not None:  # described again: a compile of its own sets its optimizers after
            compiled = describe_compile(model, *how)
        else:  # compiled before the capture began (or never): read the model
            compiled = describe_optimizer(getattr(model, "optimizer", None))
            compiled.update(describe_loss(getattr(model, "loss", None)))
        settings.update({k: v for k, v in compiled.items() if k not in settings})
        settings.update(describe_fit(arguments))
        lr = self.monitor.options.lr
        if lr is not None and not self._fits:  # --lr replaces the first fit's rate (control.py)
            for key in [k for k in settings if k.startswith("optimizer.learning_rate")]:
                del settings[key]
            settings["optimizer.learning_rate"] = float(lr)
        self._fits.append(settings)
        self._emit()

    def fit_ended(self, model: Any) -> None:
        """A fit returned: a model built by its first step now has a parameter count."""
        try:
            self._fit_ended(model)
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("recording the model's size", exc)

    def _fit_ended(self, model: Any) -> None:
        if not self._fits:
            return
        last = self._fits[-1]
        if "model.params" not in last and last.get("model") == getattr(model, "name", None):
            last.update({k: v for k, v in describe_model(model).items() if k == "model.params"})
            self._emit()

    def loop_began(self, optimizer: Any) -> None:
        """A custom training loop's controls begin (its first step): its optimizer, when
        the loop machinery found one (a loop that assigns its variables itself has none)."""
        try:
            settings = describe_optimizer(optimizer)
            if settings and settings not in self._loops:
                self._loops.append(settings)
                self._emit()
        except Exception as exc:  # noqa: BLE001
            self.monitor.report_error("recording a custom loop's hyperparameters", exc)

    def seeded(self, seed: Any) -> None:
        """The script set a global seed."""
        value = plain_value(seed)
        if value is not None and self._base.get("seed") != value:
            self._base["seed"] = value
            self._emit()

    # -- the flat dict ----------------------------------------------------
    def values(self) -> HParams:
        """Everything known now, flat (see the module's docstring for the keys)."""
        out: dict[str, Any] = {}
        if "args" not in self._base:
            self._base["args"] = shlex.join(sys.argv[1:])  # set for the script (script.py)
        out.update(self._base)
        first = self._fits[0] if self._fits else self._pending
        if first is not None:
            out.update(first)
        for n, settings in enumerate(self._fits[1:], start=2):
            for key, value in settings.items():
                if first is None or first.get(key) != value:
                    out[f"fit{n}.{key}"] = value
        for n, settings in enumerate(self._loops, start=1):
            prefix = "" if n == 1 and first is None else f"loop{n}."
            for key, value in settings.items():
                out[prefix + key] = value
        return clean(out)

    def _emit(self) -> None:
        values = self.values()
        if values != self._sent:
            self._sent = values
            self.monitor.channel.emit(Hyperparameters(values))


# -- the record: run.json and TensorBoard's HParams plugin data -------------------------
_STARTED: weakref.WeakSet[Any] = weakref.WeakSet()  # recorders whose session start is written


def record_hparams(rec: Recorder, e: Hyperparameters) -> None:
    """The recorder's writer of :class:`Hyperparameters`: ``run.json["hparams"]`` (written
    at the next flush, within ``flush_every``)."""
    rec.info["hparams"] = dict(e.values)


def record_session_start(rec: Recorder) -> None:
    """Write the HParams ``session_start_info`` once (at the run's first fit, or at its end).

    TensorBoard keeps the first one of a run, so it is written once what the first fit's
    ``compile`` and ``fit`` set is known; later changes (``fit2.`` keys) are in
    ``run.json`` only.
    """
    values = rec.info.get("hparams")
    if rec in _STARTED or not values:
        return
    _STARTED.add(rec)
    try:
        start = float(rec.info.get("start_time") or rec._t0_wall)
        rec._writer.write(session_start_event(values, start, rec._now_wall()))
    except Exception as exc:  # noqa: BLE001 - recording must never end a run
        rec._error(f"hparams session start: {exc!r}")


def record_session_end(rec: Recorder) -> None:
    """At the recorder's close: the session start if not written yet, then its end with
    the run's status (TensorBoard's HParams dashboard shows it)."""
    if not rec.info.get("hparams"):
        return
    record_session_start(rec)
    end = rec.info.get("end_time")
    try:
        status = str(rec.info.get("status", ""))
        rec._writer.write(session_end_event(status, float(end) if end else time.time()))
    except Exception as exc:  # noqa: BLE001
        rec._error(f"hparams session end: {exc!r}")


def record_fit_started(rec: Recorder, e: FitStarted) -> None:
    """A fit's start: the run's session start goes into the event file (not a loop's:
    its optimizer is told at its first step, after its start)."""
    if e.kind == "fit":
        record_session_start(rec)


HPARAMS_WRITERS = {Hyperparameters: record_hparams}
"""The recorder's writers for this module's events (``engine/record_writers.py``)."""
