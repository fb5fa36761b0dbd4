"""The explicit API for custom training loops: ``from tfstudio import monitor``.

``monitor.log(step, loss=..., accuracy=...)`` reports scalars at a step and
``monitor.watch(model_or_module)`` names the loop after a model or module.
Importing this module does not import TensorFlow. Outside a tfstudio run both
calls do nothing (one ``None`` check); inside one, tfstudio's engine installs a
sink here for the run's duration (``tfstudio.engine.loops.explicit.ExplicitApi``).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["log", "watch"]


class _Sink(Protocol):
    def log(self, step: Any, scalars: dict[str, Any]) -> None: ...

    def watch(self, obj: Any, name: str | None) -> None: ...


_sink: _Sink | None = None  # set by the engine while a run lasts


def log(step: int, **scalars: float) -> None:
    """Report ``scalars`` (e.g. ``loss=0.3``) at training step ``step``; no-op outside tfstudio."""
    sink = _sink
    if sink is not None:  # (it reports what it cannot take: the script goes on, as without it)
        sink.log(step, scalars)


def watch(model_or_module: Any, name: str | None = None) -> Any:
    """Name the custom loop that trains ``model_or_module``; returns it; no-op outside tfstudio."""
    sink = _sink
    if sink is not None:
        sink.watch(model_or_module, name)
    return model_or_module


# Called inside a tf.function, AutoGraph would convert these (and what they call) into graph
# code; marked as its own artifacts, they are called as they are.
log.autograph_info__ = None  # type: ignore[attr-defined]
watch.autograph_info__ = None  # type: ignore[attr-defined]
