"""A fixed loss scale: an optimizer's ``loss_scale_factor`` (no ``LossScaleOptimizer``); the
step takes gradients of ``scale_loss(loss)`` and ``apply`` divides them back, in a
``tf.function``. Each step's loss and the norm of the gradients applied to argv[1]."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(0.01, loss_scale_factor=64.0)


@tf.function
def step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
        scaled = opt.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    opt.apply(grads, model.trainable_variables)
    return loss, tf.linalg.global_norm(grads) / 64.0


losses, norms = [], []
for _epoch in range(3):
    for i in range(0, 256, 32):
        loss, norm = step(x[i : i + 32], y[i : i + 32])
        losses.append(float(loss))
        norms.append(float(norm))
print("loss", losses[-1])
json.dump({"losses": losses, "norms": norms}, open(sys.argv[1], "w"))
