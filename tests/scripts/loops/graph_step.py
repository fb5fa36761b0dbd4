"""A @tf.function train step (retraced by a Python scalar argument); losses to argv[1]."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
opt = keras.optimizers.Adam(0.01)
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)


@tf.function
def train_step(x, y, scale):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y)) * scale
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


losses = []
for i in range(20):
    scale = 1.0 if i < 10 else 2.0  # a Python scalar: a second trace
    losses.append(float(train_step(x, y, scale)))
print("traces", train_step.experimental_get_tracing_count())
json.dump({"losses": losses}, open(sys.argv[1], "w"))
