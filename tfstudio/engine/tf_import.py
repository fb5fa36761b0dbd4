"""One import of TensorFlow and Keras per process, shared by every thread."""

from __future__ import annotations

import os
import threading
from types import ModuleType

_lock = threading.Lock()
_keras: ModuleType | None = None


def ensure_keras() -> ModuleType:
    """Import TensorFlow and Keras once (the first caller pays ~3-5 s) and return keras.

    Concurrent callers wait for the first import instead of racing it.
    """
    global _keras
    if _keras is not None:
        return _keras
    with _lock:
        if _keras is None:
            # Quieter start-up: TF's C++ info lines are noise in a training console.
            # Read at import; taken out again after, so the script's environment is its own.
            added = "TF_CPP_MIN_LOG_LEVEL" not in os.environ
            if added:
                os.environ["TF_CPP_MIN_LOG_LEVEL"] = "1"
            try:
                import keras
                import tensorflow  # noqa: F401
            finally:
                if added:
                    os.environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
            _keras = keras
    return _keras


def is_loaded() -> bool:
    """True once :func:`ensure_keras` has finished."""
    return _keras is not None
