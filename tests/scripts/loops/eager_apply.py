"""Eager custom loop with a Keras optimizer; writes its own losses to argv[1]."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(0.05)
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
losses, norms = [], []
for _ in range(12):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    losses.append(float(loss))
    norms.append(float(tf.linalg.global_norm(grads)))
json.dump({"losses": losses, "norms": norms}, open(sys.argv[1], "w"))
