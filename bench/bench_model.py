"""The small MLP and data every training benchmark here uses (one definition)."""

from __future__ import annotations

from typing import Any


def mlp_and_data(batch: int = 64, prefetch: bool = True) -> tuple[Any, Any]:
    """A compiled 32-128-128-10 MLP and an endless ``tf.data`` pipeline of 100 batches."""
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
    model.compile(
        "adam",
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model, data
