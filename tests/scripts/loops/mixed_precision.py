"""Mixed precision as Keras's guide trains it in a custom loop: a ``LossScaleOptimizer``
scales the loss, the gradients are of the scaled loss and ``apply`` unscales them. Eager
steps, then the same step in a ``tf.function``; each step's loss and the global norm of the
gradients the optimizer applies to argv[1]."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
keras.mixed_precision.set_global_policy("mixed_float16")
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int64")
model = keras.Sequential(
    [
        keras.Input((8,)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(2, dtype="float32"),
    ]
)
opt = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(0.01))
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
opt.build(model.trainable_variables)  # (its dynamic scale exists from here)


def step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
        scaled = opt.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    norm = tf.linalg.global_norm(grads) / tf.convert_to_tensor(opt.dynamic_scale)
    opt.apply(grads, model.trainable_variables)
    return loss, norm


graph_step = tf.function(step)
losses, norms, loops = [], [], []
for fn in (step, graph_step):
    for _ in range(2):
        for i in range(0, 256, 32):
            loss, norm = fn(x[i : i + 32], y[i : i + 32])
            losses.append(float(loss))
            norms.append(float(norm))
    loops.append(16)
    print("loss", losses[-1])
json.dump({"losses": losses, "norms": norms, "loops": loops}, open(sys.argv[1], "w"))
