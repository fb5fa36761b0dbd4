"""A compiled Keras model trained batch by batch with ``train_on_batch``; its own logs
(per batch: ``train_on_batch`` resets the metrics at each call) to argv[1]."""

import json
import sys

import keras
import numpy as np

rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
keras.utils.set_random_seed(0)
model = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
)
model.compile(
    keras.optimizers.Adam(0.01),
    keras.losses.BinaryCrossentropy(from_logits=True),
    metrics=[keras.metrics.BinaryAccuracy(threshold=0.0)],
)
logs = []
for epoch in range(6):
    for i in range(0, 256, 32):  # batches of 32: the loss tracker's mean is the loss itself
        logs.append(model.train_on_batch(x[i : i + 32], y[i : i + 32], return_dict=True))
    print("epoch", epoch, logs[-1])
json.dump(
    {"losses": [d["loss"] for d in logs], "accuracy": [d["binary_accuracy"] for d in logs]},
    open(sys.argv[1], "w"),
)
