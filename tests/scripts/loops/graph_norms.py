"""A @tf.function train step that records its own loss, global and per-variable gradient norms.

Writes to argv[1]: losses, global norms (tf.linalg.global_norm) and per-variable
norms (tf.norm) per step, and the variables' values after the last step. argv[2]: the
steps (12); argv[3] ``jit``: the step is compiled by XLA (``jit_compile=True``).
"""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential(
    [
        keras.Input((4,)),
        keras.layers.Dense(8, activation="relu", name="hidden"),
        keras.layers.Dense(1, name="out"),
    ],
    name="regressor",
)
opt = keras.optimizers.Adam(0.01)
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 12
jit = len(sys.argv) > 3 and sys.argv[3] == "jit"


@tf.function(jit_compile=True if jit else None)
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss, tf.linalg.global_norm(grads), [tf.norm(g) for g in grads]


losses, norms, per_variable = [], [], []
for _ in range(steps):
    loss, norm, each = train_step(x, y)
    losses.append(float(loss))
    norms.append(float(norm))
    pairs = zip(model.trainable_variables, each, strict=True)
    per_variable.append({v.path: float(n) for v, n in pairs})
final = {v.path: v.numpy().tolist() for v in model.trainable_variables}
json.dump(
    {"losses": losses, "norms": norms, "per_variable": per_variable, "final": final},
    open(sys.argv[1], "w"),
)
