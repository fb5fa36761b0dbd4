"""One eager step (a warm-up), then the same step in a tf.function: two loops (the graph
loop must not join the eager one as a GAN's second model would). Losses to argv[1]."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
x = np.random.rand(64, 8).astype("float32")
y = (x.sum(1) > 4).astype("int32")
model = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)]
)
opt = keras.optimizers.Adam(1e-3)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_weights)
    opt.apply_gradients(zip(grads, model.trainable_weights, strict=True))
    return loss


losses = [float(step(x, y))]
fast = tf.function(step)
for _ in range(30):
    losses.append(float(fast(x, y)))
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        json.dump({"losses": losses, "loops": [1, 30]}, f)
