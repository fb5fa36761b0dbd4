"""A small MLP training script that reports its own steps/s (used by bench/window_overhead.py).

Writes the measured steps/s to the file named by $TFSTUDIO_BENCH_OUT (stdout
is the window's console when it runs inside tfstudio).
"""

import os
import time

import keras
import numpy as np
import tensorflow as tf

STEPS = int(os.environ.get("TFSTUDIO_BENCH_STEPS", "2000"))
rng = np.random.default_rng(0)
x = rng.normal(size=(6400, 32)).astype("float32")
y = rng.integers(0, 10, size=6400).astype("int32")
data = tf.data.Dataset.from_tensor_slices((x, y)).batch(64).repeat()
model = keras.Sequential(
    [
        keras.Input((32,)),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(10),
    ]
)
model.compile(
    "adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
)
model.fit(data, epochs=1, steps_per_epoch=50, verbose=0)  # warm-up: tracing
start = time.perf_counter()
model.fit(data, epochs=4, steps_per_epoch=STEPS // 4, verbose=0)
rate = STEPS / (time.perf_counter() - start)
print(f"{rate:.1f} steps/s")
with open(os.environ["TFSTUDIO_BENCH_OUT"], "w") as f:
    f.write(f"{rate}\n")
