"""A fit, then a @tf.function loop on the same model; the loop's losses to argv[1]."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model.fit(x, y, batch_size=8, epochs=1, verbose=0)
opt = keras.optimizers.Adam(0.01)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


losses = [float(train_step(x, y)) for _ in range(6)]
json.dump({"losses": losses}, open(sys.argv[1], "w"))
