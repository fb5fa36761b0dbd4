"""A tiny model trained at about 1,000 steps/s that logs when each step's batch hook ran.

Used by bench/latency.py: writes ``time.perf_counter()`` (CLOCK_MONOTONIC on
Linux, shared by every process of the machine) at each ``on_train_batch_end`` to
$TFSTUDIO_BENCH_OUT as JSON, one value per global step.
"""

import json
import os
import time

import keras
import numpy as np

STEPS = int(os.environ.get("TFSTUDIO_BENCH_STEPS", "6000"))
stamps = []


class Stamp(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        stamps.append(time.perf_counter())


x = np.random.default_rng(0).normal(size=(8 * 500, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y, batch_size=8, epochs=STEPS // 500, verbose=0, callbacks=[Stamp()])
with open(os.environ["TFSTUDIO_BENCH_OUT"], "w") as f:
    json.dump(stamps, f)
