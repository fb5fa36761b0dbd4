"""A graph loop whose step function is replaced by a second tf.function of the same step
halfway (as a script that rebuilds its train step): argv[1] steps of each."""

import sys

import keras
import numpy as np
import tensorflow as tf

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
model = keras.Sequential(
    [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
)
opt = keras.optimizers.Adam(0.01)
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


first = tf.function(train_step)
for _ in range(steps):
    first(x, y)
second = tf.function(train_step)
for _ in range(steps):
    second(x, y)
print("iterations", int(opt.iterations.numpy()))
