"""The small MLP and data every training benchmark here uses (one definition)."""

from __future__ import annotations

from typing import Any


def mlp_and_data(
    batch: int = 64, prefetch: bool = True, metrics: tuple[str, ...] = ("accuracy",)
) -> tuple[Any, Any]:
    """A compiled 32-128-128-10 MLP and an endless ``tf.data`` pipeline of 100 batches.

    ``metrics``: Keras metric names, or ``top3``/``top5`` (top-k accuracy) and ``xent``
    (cross-entropy as a metric): more families, more plots in the window.
    """
    import keras
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    n = batch * 100
    x = rng.normal(size=(n, 32)).astype("float32")
    y = rng.integers(0, 10, size=n).astype("int32")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch).repeat()
    if prefetch:
        data = data.prefetch(4)
    model = keras.Sequential(
        [
            keras.Input((32,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    named = {
        "top3": lambda: keras.metrics.SparseTopKCategoricalAccuracy(3, name="top3"),
        "top5": lambda: keras.metrics.SparseTopKCategoricalAccuracy(5, name="top5"),
        "xent": lambda: keras.metrics.SparseCategoricalCrossentropy(from_logits=True, name="xent"),
    }
    model.compile(
        "adam",
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[named[m]() if m in named else m for m in metrics],
    )
    return model, data
