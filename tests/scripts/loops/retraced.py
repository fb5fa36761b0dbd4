"""One tf.function loop retraced by its inputs: a short last batch (a new shape), then a
float64 epoch (a new dtype). One loop; every step's loss to the JSON path in argv[1]."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
x = np.random.rand(100, 4).astype("float32")  # batches of 32, 32, 32, 4
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(0.05)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - tf.cast(yb, tf.float32)))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


losses: list[float] = []
for dtype in ("float32", "float32", "float64"):
    ds = tf.data.Dataset.from_tensor_slices((x.astype(dtype), y.astype(dtype))).batch(32)
    for xb, yb in ds:
        losses.append(float(train_step(xb, yb)))
print("traces", train_step.experimental_get_tracing_count())
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        json.dump({"losses": losses, "loops": [len(losses)]}, f)
