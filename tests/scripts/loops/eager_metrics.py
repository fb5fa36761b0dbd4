"""An eager loop (no tf.function) that keeps Keras metrics of its own, as the Keras
guide's first loop does: an accuracy and a running count of the samples seen, updated
after the optimizer's update; a validation accuracy only its test step updates (reset
after each epoch). Runs an epoch and argv[1] seconds more, then writes each step's
count of samples seen to argv[2] (what the plots must show at each step)."""

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
history = []  # (step, train_acc, seen) after each step

end = None  # argv[1] seconds after the first epoch
step = 0
while end is None or time.monotonic() < end:
    for _ in range(20):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights, strict=True))
        train_acc.update_state(y, logits)
        seen.update_state(tf.cast(tf.shape(x)[0], tf.float32))
        step += 1
        history.append((step, float(train_acc.result()), float(seen.result())))
    val_acc.update_state(y, model(x, training=False))
    print(f"train acc {float(train_acc.result()):.3f} val acc {float(val_acc.result()):.3f}")
    train_acc.reset_state()
    val_acc.reset_state()
    end = end or time.monotonic() + float(sys.argv[1])
np.save(sys.argv[2], np.array(history))
