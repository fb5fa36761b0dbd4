"""A fit, then a @tf.function loop on the same model; what ran each step to argv[1].

A callback notes, at each batch, whether ``tf.function``'s ``__call__`` is TensorFlow's
own (tfstudio takes its loop wrapper off while a fit runs); the loop after the fit
notes it again and writes its losses.
"""

import json
import sys

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.eager.polymorphic_function import polymorphic_function

seen = {"fit": [], "loop": []}


def wrapped() -> bool:
    """Whether tf.function calls go through a wrapper of tfstudio's now."""
    call = polymorphic_function.Function.__dict__["__call__"]
    return call.__module__.startswith("tfstudio")


class Note(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        seen["fit"].append(wrapped())


model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[Note()])
seen["after_fit"] = wrapped()
opt = keras.optimizers.Adam(0.01)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


losses = [float(train_step(x, y)) for _ in range(6)]
seen["loop"] = wrapped()
json.dump({"losses": losses, "seen": seen}, open(sys.argv[1], "w"))
