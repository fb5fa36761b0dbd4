"""Intercepts ``keras.Model.fit`` so unmodified scripts are monitored (autolog style).

While a run lasts, ``keras.Model.fit`` is replaced by a wrapper that adds a
:class:`StudioCallback` beside the user's own callbacks; the original is put back
when the run ends.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.script import RunStopped
from tfstudio.engine.tf_import import ensure_keras

_MISSING = object()


class FitInterceptor:
    """Patches ``keras.Model.fit`` for one run; a context manager.

    Args:
        monitor: the run's shared state; each intercepted fit becomes a segment.
    """

    def __init__(self, monitor: RunMonitor) -> None:
        self.monitor = monitor
        self._keras: Any = None
        self._saved: Any = _MISSING

    def __enter__(self) -> FitInterceptor:
        keras = ensure_keras()
        self._keras = keras
        model_cls = keras.Model
        self._saved = model_cls.__dict__.get("fit", _MISSING)
        original = model_cls.fit
        model_cls.fit = self._wrap(original)
        return self

    def __exit__(self, *exc: object) -> None:
        model_cls = self._keras.Model
        if self._saved is _MISSING:
            try:
                del model_cls.fit
            except AttributeError:
                pass
        else:
            model_cls.fit = self._saved

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
            bound = signature.bind(model, *args, **kwargs)
            callback = StudioCallback(
                monitor, monitor.fits, initial_epoch=int(bound.arguments.get("initial_epoch", 0))
            )
            callback.fit_data = bound.arguments.get("x")
            user_callbacks = bound.arguments.get("callbacks")
            if isinstance(user_callbacks, keras.callbacks.CallbackList):
                user_callbacks.append(callback)
            else:
                bound.arguments["callbacks"] = [*(user_callbacks or []), callback]
            monitor.fits += 1
            monitor.in_fit = True
            try:
                history = original(*bound.args, **bound.kwargs)
            finally:
                monitor.in_fit = False
                restore_evaluation(model)
            if monitor.stop_requested.is_set():
                raise RunStopped()
            return history

        fit.__tfstudio_wrapped__ = True  # type: ignore[attr-defined]
        return fit
