"""Issue 53: two eager epochs, then the same step in a tf.function for three (80 steps).

The same model, optimizer and metric in both loops. Every step's loss goes to the JSON
path in argv[1] ({"losses": [...], "loops": [eager steps, graph steps]}), as float32.
"""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
x = np.random.rand(512, 8).astype("float32")
y = (x.sum(1) > 4).astype("int32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
model = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)]
)
opt = keras.optimizers.Adam(1e-3)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
acc = keras.metrics.SparseCategoricalAccuracy()
losses: list[float] = []
eager_steps = 0
for epoch in range(2):
    for xb, yb in ds:
        with tf.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = loss_fn(yb, logits)
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights, strict=True))
        acc.update_state(yb, logits)
        losses.append(float(loss))
        eager_steps += 1
    print("eager epoch", epoch, float(loss), float(acc.result()))
    acc.reset_state()


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        logits = model(xb, training=True)
        loss = loss_fn(yb, logits)
    grads = tape.gradient(loss, model.trainable_weights)
    opt.apply_gradients(zip(grads, model.trainable_weights, strict=True))
    acc.update_state(yb, logits)
    return loss


for epoch in range(3):
    for xb, yb in ds:
        loss = train_step(xb, yb)
        losses.append(float(loss))
    print("graph epoch", epoch, float(loss), float(acc.result()))
    acc.reset_state()

if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        json.dump({"losses": losses, "loops": [eager_steps, len(losses) - eager_steps]}, f)
