"""A graph loop that keeps Keras metrics of its own: an accuracy and a running count of
the samples seen updated in its train step, a validation accuracy only its test step
updates (reset after each epoch, as the Keras guide's loop does). Runs an epoch and
argv[1] seconds more."""

import sys
import time

import keras
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.normal(size=(64, 8)).astype("float32")
y = (x[:, 0] > 0).astype("int64")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
opt = keras.optimizers.Adam(0.01)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_acc = keras.metrics.SparseCategoricalAccuracy(name="train_acc")
seen = keras.metrics.Sum(name="seen")  # not a mean: read through result()
val_acc = keras.metrics.SparseCategoricalAccuracy(name="val_acc")


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        logits = model(xb, training=True)
        loss = loss_fn(yb, logits)
    grads = tape.gradient(loss, model.trainable_weights)
    opt.apply_gradients(zip(grads, model.trainable_weights, strict=True))
    train_acc.update_state(yb, logits)
    seen.update_state(tf.cast(tf.shape(xb)[0], tf.float32))
    return loss


@tf.function
def test_step(xb, yb):
    val_acc.update_state(yb, model(xb, training=False))


end = None  # argv[1] seconds after the first epoch (its traces are not counted)
while end is None or time.monotonic() < end:
    for _ in range(100):
        train_step(x, y)
    test_step(x, y)
    print(f"train acc {float(train_acc.result()):.3f} val acc {float(val_acc.result()):.3f}")
    train_acc.reset_state()
    val_acc.reset_state()
    end = end or time.monotonic() + float(sys.argv[1])
