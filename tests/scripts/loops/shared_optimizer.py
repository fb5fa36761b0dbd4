"""Loops that share one model and optimizer: a tf.function loop, a second tf.function
(another loss), an eager fine-tuning loop, then the first tf.function again.

Four loops (the last is the first function's steps coming again, after the others).
Every step's loss goes to the JSON path in argv[1], with each loop's step count.
"""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
opt = keras.optimizers.Adam(0.01)
huber = keras.losses.Huber()
losses: list[float] = []
loops: list[int] = []


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


@tf.function
def robust_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = huber(yb, model(xb))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


def run(step, n):
    for _ in range(n):
        losses.append(float(step(x, y)))
    loops.append(n)


run(train_step, 20)
run(robust_step, 15)
for _ in range(10):  # eager fine-tuning, same model and optimizer
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.abs(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    losses.append(float(loss))
loops.append(10)
run(train_step, 12)
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        json.dump({"losses": losses, "loops": loops}, f)
