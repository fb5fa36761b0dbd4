"""Intercepts ``keras.Model.fit`` so unmodified scripts are monitored (autolog style).

While a run lasts, ``keras.Model.fit`` is replaced by a wrapper that adds a
:class:`StudioCallback` beside the user's own callbacks; the original is put back
when the run ends. If Keras is not imported yet (a cold worker, where the script
sets TensorFlow's environment variables before importing it), the patch is
applied the moment the script's own ``import keras`` finishes.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import inspect
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from tfstudio.engine.hparams import HParamsCapture
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.patches import Patches
from tfstudio.engine.script import RunStopped


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``callback(module)`` right after the module ``name`` has been executed."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.callback = callback
        self._busy = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> Any:
        """Find ``name`` through the other finders and hook its loader; ignore the rest."""
        if fullname != self.name or self._busy:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return None
        original = loader.exec_module
        callback = self.callback

        def exec_module(module: ModuleType) -> None:
            original(module)
            callback(module)

        loader.exec_module = exec_module  # this loader instance serves this import only
        return spec

    def remove(self) -> None:
        """Stop watching (a no-op once removed or after the import happened)."""
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def patch_on_import(
    name: str,
    ready: str,
    patch: Callable[[ModuleType], None],
    report: Callable[[str, BaseException], None],
    what: str,
    after: Callable[[], None] | None = None,
) -> _AfterImport | None:
    """Call ``patch(module)`` now if ``name`` is imported already (it has ``ready``);
    otherwise right after the script's own import of it, then ``after()``.

    A patch that fails after the script's import is reported as ``report(what, exc)``
    and never breaks that import (one that fails now raises).

    Returns the hook to remove when the run ends (None when ``patch`` ran now); it
    removes itself once it fired.
    """
    module = sys.modules.get(name)
    if module is not None and hasattr(module, ready):
        patch(module)
        return None

    def imported(module: ModuleType) -> None:
        hook.remove()
        try:
            patch(module)
        except Exception as exc:  # noqa: BLE001 - never break the script's own import
            report(what, exc)
        if after is not None:
            after()

    hook = _AfterImport(name, imported)
    sys.meta_path.insert(0, hook)
    return hook


class FitInterceptor:
    """Patches ``keras.Model.fit`` for one run; a context manager.

    Args:
        monitor: the run's shared state; each intercepted fit becomes a segment.
    """

    def __init__(self, monitor: RunMonitor) -> None:
        self.monitor = monitor
        self._keras: Any = None
        self._patches = Patches()
        self._hook: _AfterImport | None = None
        # what compile, fit and the seed calls set: the run's hyperparameters
        self.hparams = monitor.hparams = HParamsCapture(monitor)

    def __enter__(self) -> FitInterceptor:
        self._hook = patch_on_import(
            "keras",
            "Model",
            self._patch,
            self.monitor.report_error,
            "intercepting keras.Model.fit",
            after=self._keras_imported,
        )
        return self

    def _keras_imported(self) -> None:
        for hook in self.monitor.on_keras_imported:
            try:
                hook()
            except Exception as exc:  # noqa: BLE001
                self.monitor.report_error("after the script imported keras", exc)

    def _patch(self, keras: Any) -> None:
        self._keras = keras
        self._patches.replace(keras.Model, "fit", self._wrap)
        self.hparams.patch(keras)

    def __exit__(self, *exc: object) -> None:
        if self._hook is not None:
            self._hook.remove()
        self.hparams.unpatch()
        self._patches.restore()
        self._keras = None

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        monitor = self.monitor
        signature = inspect.signature(original)
        keras = self._keras
        from tfstudio.engine.callback import StudioCallback, restore_evaluation

        @functools.wraps(original)
        def fit(model: Any, *args: Any, **kwargs: Any) -> Any:
            if monitor.in_fit:  # a fit inside a fit (rare): leave it alone
                return original(model, *args, **kwargs)
            if monitor.stop_requested.is_set():
                raise RunStopped()
            control = monitor.control
            if control is not None and control.stop_at_reached:
                # --stop-at-step: training is over; the rest of the script runs, fits do not.
                monitor.note("fit skipped: --stop-at-step was reached")
                skipped = keras.callbacks.History()
                skipped.set_model(model)
                return skipped
            bound = signature.bind(model, *args, **kwargs)
            callback = StudioCallback(  # loops and fits share the segment numbering
                monitor,
                monitor.fits + monitor.loops,
                initial_epoch=int(bound.arguments.get("initial_epoch", 0)),
            )
            callback.fit_data = bound.arguments.get("x")
            callback.sample_weighted = sample_weighted(bound.arguments)
            callback.fit_validation = bound.arguments.get("validation_data")
            user_callbacks = bound.arguments.get("callbacks")
            if isinstance(user_callbacks, keras.callbacks.CallbackList):
                callback.user_callbacks = list(user_callbacks.callbacks)
                user_callbacks.append(callback)
            else:
                callback.user_callbacks = list(user_callbacks or [])
                bound.arguments["callbacks"] = [*(user_callbacks or []), callback]
            self.hparams.fit_called(model, bound.arguments)  # reads only; never raises
            monitor.fits += 1
            monitor.in_fit = True
            try:
                history = original(*bound.args, **bound.kwargs)
            finally:
                monitor.in_fit = False
                restore_evaluation(model)
                self.hparams.fit_ended(model)
            if monitor.stop_requested.is_set():
                raise RunStopped()
            return history

        fit.__tfstudio_wrapped__ = True  # type: ignore[attr-defined]
        return fit


def sample_weighted(arguments: dict[str, Any]) -> bool | None:
    """Whether a fit's batches carry sample weights (``class_weight``, ``sample_weight``,
    a dataset of ``(x, y, w)``); None when its data cannot tell (a generator, a
    ``PyDataset``). A weighted metric's running mean then counts weights, not samples."""
    if arguments.get("class_weight") is not None or arguments.get("sample_weight") is not None:
        return True
    x = arguments.get("x")
    spec = getattr(x, "element_spec", None)
    if spec is not None:  # a tf.data.Dataset
        return isinstance(spec, tuple) and len(spec) == 3
    if x is None or hasattr(x, "shape") or isinstance(x, dict | list | tuple):
        return False  # arrays: weights come only through the arguments above
    return None
