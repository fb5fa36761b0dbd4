"""The small MLP and data every training benchmark here uses (one definition).

Run as a script (what ``window_overhead.py`` and ``window_interleaved.py`` run in the
window and headless) it trains that MLP and reports its own speed: writes
``{"rate": steps/s, "cpu_per_step": s}`` to the file named by $TFSTUDIO_BENCH_OUT,
steps/s around the timed ``fit`` ($TFSTUDIO_BENCH_STEPS steps, 2,000 by default) and
the CPU time of this (the training) process per step, all its threads included.
Start-up and tracing are not counted.
"""

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


if __name__ == "__main__":
    import json
    import os
    import time

    STEPS = int(os.environ.get("TFSTUDIO_BENCH_STEPS", "2000"))
    METRICS = tuple(os.environ.get("TFSTUDIO_BENCH_METRICS", "accuracy").split(","))
    model, data = mlp_and_data(prefetch=False, metrics=METRICS)
    model.fit(data, epochs=1, steps_per_epoch=50, verbose=0)  # warm-up: tracing
    start, cpu0 = time.perf_counter(), time.process_time()
    model.fit(data, epochs=4, steps_per_epoch=STEPS // 4, verbose=0)
    rate = STEPS / (time.perf_counter() - start)
    cpu_per_step = (time.process_time() - cpu0) / STEPS
    print(f"{rate:.1f} steps/s, {cpu_per_step * 1e6:.0f} us CPU per step")
    with open(os.environ["TFSTUDIO_BENCH_OUT"], "w") as f:
        json.dump({"rate": rate, "cpu_per_step": cpu_per_step}, f)
