"""A tf.function step whose optimizer was built before it: TensorFlow traces it once.

Writes {"tracing_count": ...} to argv[1]: the function's own tracing count.
"""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)], name="line")
opt = keras.optimizers.SGD(0.01)
opt.build(model.trainable_variables)  # as the guides do: no variable made in the first trace


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


for _ in range(30):
    train_step(x, y)
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        json.dump({"tracing_count": train_step.experimental_get_tracing_count()}, f)
