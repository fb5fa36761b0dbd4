"""What recording a graph loop's step on the device costs, op by op, side by side.

Four ``tf.function`` train steps of the small MLP that ``overhead.py --loop`` uses, in
one process, timed in turn each round (300 steps each, 30 rounds): bare; ``now`` (what
tfstudio adds today: loss cast/mean, per-step gradient norm, ``scatter_nd_update`` of
the row and the counter's increment); ``lossonly`` (only the loss, scalar-index scatter);
``lean`` (loss and norm, scalar-index scatter, no reshapes). Prints each variant's
median ratio to bare. No tfstudio code runs here: it isolates the device ops.

    python bench/loop_write_cost.py
"""

import os
import statistics
import time

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import keras
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = tf.constant(rng.normal(size=(64, 32)).astype("float32"))
y = tf.constant(rng.integers(0, 10, size=(64,)))
model = keras.Sequential(
    [
        keras.Input((32,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ]
)
opt = keras.optimizers.Adam(1e-3)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
RING = 4096
buf = tf.Variable(tf.zeros([RING, 2]))
cnt = tf.Variable(0, dtype=tf.int64)
buf1 = tf.Variable(tf.zeros([RING]))


def make(kind: str) -> tf.types.experimental.PolymorphicFunction:
    """A train step with the recording ops ``kind`` names."""

    def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        if kind == "now":  # current: cast+mean, norm, scatter_nd with reshapes
            v = tf.reduce_mean(tf.cast(loss, tf.float32))
            sq = tf.add_n([tf.nn.l2_loss(g) for g in grads])
            i = cnt.read_value()
            w = buf.scatter_nd_update(
                tf.reshape(i % RING, [1, 1]), tf.reshape(tf.stack([v, sq]), [1, 2])
            )
            with tf.control_dependencies([w]):
                cnt.assign_add(1)
        elif kind == "lossonly":
            i = cnt.read_value()
            w = tf.raw_ops.ResourceScatterUpdate(
                resource=buf1.handle, indices=i % RING, updates=loss
            )
            with tf.control_dependencies([w]):
                cnt.assign_add(1)
        elif kind == "lean":  # scalar index scatter, norm
            sq = tf.add_n([tf.nn.l2_loss(g) for g in grads])
            i = cnt.read_value()
            w = tf.raw_ops.ResourceScatterUpdate(
                resource=buf.handle, indices=i % RING, updates=tf.stack([loss, sq])
            )
            with tf.control_dependencies([w]):
                cnt.assign_add(1)
        return loss

    return tf.function(step)


fns = {k: make(k) for k in ("bare", "now", "lossonly", "lean")}
for f in fns.values():
    f(x, y).numpy()


def timed(fn: tf.types.experimental.PolymorphicFunction, n: int = 300) -> float:
    """Steps per second of ``n`` steps of ``fn``."""
    t = time.perf_counter()
    for _ in range(n):
        fn(x, y)
    fn(x, y).numpy()
    return n / (time.perf_counter() - t)


r = {k: [] for k in fns if k != "bare"}
for _ in range(30):
    b = timed(fns["bare"])
    for k in r:
        r[k].append(timed(fns[k]) / b)
for k, v in r.items():
    print(k, round(statistics.median(v), 4))
