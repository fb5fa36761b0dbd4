"""tfstudio: a live training monitor for TensorFlow/Keras scripts."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["StudioCallback", "__version__"]


def __getattr__(name: str) -> Any:
    """``tfstudio.StudioCallback`` imports TensorFlow only when it is asked for."""
    if name == "StudioCallback":
        from tfstudio.engine.standalone import StudioCallback

        return StudioCallback
    raise AttributeError(f"module 'tfstudio' has no attribute {name!r}")
