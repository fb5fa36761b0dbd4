"""Which devices a run computes on, asked only once TensorFlow has set them up.

Listing devices initialises TensorFlow's runtime, which would freeze settings a
script may still want to change (visible devices, memory growth, threads). So
nothing here initialises anything: before the runtime is up it answers None.
"""

from __future__ import annotations

import sys


def runtime_initialized() -> bool:
    """True once TensorFlow's eager context exists (the script ran an op or built a model)."""
    if "tensorflow" not in sys.modules:
        return False
    try:
        from tensorflow.python.eager import context

        return bool(getattr(context.context(), "_initialized", False))
    except Exception:  # noqa: BLE001 - a TF without this private flag: do not guess
        return False


def describe_devices() -> tuple[str, ...] | None:
    """Human names of the devices in use (``("GPU 0: NVIDIA H100 …",)`` or ``("CPU",)``).

    Returns None while TensorFlow's runtime is not initialised.
    """
    if not runtime_initialized():
        return None
    import tensorflow as tf

    names: list[str] = []
    try:
        visible = tf.config.get_visible_devices("GPU")
    except Exception:  # noqa: BLE001
        visible = []
    for index, device in enumerate(visible):
        try:
            details = tf.config.experimental.get_device_details(device)
        except Exception:  # noqa: BLE001
            details = {}
        name = details.get("device_name") or device.name
        names.append(f"GPU {index}: {name}")
    return tuple(names) if names else ("CPU",)
