"""A seeded @tf.function step that draws noise from a stateful random op (tf.random.normal).

Writes to argv[1]: each step's loss and global gradient norm, the final weights and
the next random draw, so a run under tfstudio compares bit for bit with plain Python.
"""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

tf.random.set_seed(7)
keras.utils.set_random_seed(7)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(0.05)
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)


@tf.function
def train_step(x, y):
    noisy = x + tf.random.normal(tf.shape(x), stddev=0.1)  # the op keeps its own state
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(noisy) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss, tf.linalg.global_norm(grads)


losses, norms = [], []
for _ in range(25):
    loss, norm = train_step(x, y)
    losses.append(float(loss))
    norms.append(float(norm))
json.dump(
    {
        "losses": losses,
        "norms": norms,
        "final": [v.numpy().tolist() for v in model.trainable_variables],
        "next": tf.random.normal([3]).numpy().tolist(),
    },
    open(sys.argv[1], "w"),
)
