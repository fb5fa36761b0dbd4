"""A custom loop that trains until stopped: argv[1] "eager"/"graph", argv[2] "adam"/"assign"."""

import sys

import keras
import numpy as np
import tensorflow as tf

mode = sys.argv[1] if len(sys.argv) > 1 else "graph"
update = sys.argv[2] if len(sys.argv) > 2 else "adam"
model = keras.Sequential(
    [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)],
    name="regressor",
)
opt = keras.optimizers.Adam(0.01)
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    if update == "adam":
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    else:
        for v, g in zip(model.trainable_variables, grads, strict=True):
            v.assign_sub(0.01 * g)
    return loss


step = tf.function(train_step) if mode == "graph" else train_step
for _ in range(200_000):
    step(x, y)
