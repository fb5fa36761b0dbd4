"""An eager GAN-style loop (no tf.function): a discriminator and a generator, each with
its own optimizer, updated one after the other; the step's Keras metrics (the count of
real samples seen, the discriminator's accuracy on them) are updated after both
updates. Runs argv[1] steps, then writes each step's count of samples seen to argv[2]."""

import sys

import keras
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
real = rng.normal(1.0, 0.5, size=(32, 4)).astype("float32")
noise = rng.normal(size=(32, 2)).astype("float32")
disc = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
gen = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4)])
d_opt, g_opt = keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3)
bce = keras.losses.BinaryCrossentropy(from_logits=True)
seen = keras.metrics.Sum(name="seen")
d_acc = keras.metrics.BinaryAccuracy(name="d_acc", threshold=0.0)
history = []

for step in range(1, int(sys.argv[1]) + 1):
    with tf.GradientTape() as tape:
        fake = gen(noise)
        logits = disc(tf.concat([real, fake], 0))
        labels = tf.concat([tf.ones((32, 1)), tf.zeros((32, 1))], 0)
        d_loss = bce(labels, logits)
    grads = tape.gradient(d_loss, disc.trainable_weights)
    d_opt.apply_gradients(zip(grads, disc.trainable_weights, strict=True))
    with tf.GradientTape() as tape:
        g_loss = bce(tf.ones((32, 1)), disc(gen(noise)))
    grads = tape.gradient(g_loss, gen.trainable_weights)
    g_opt.apply_gradients(zip(grads, gen.trainable_weights, strict=True))
    seen.update_state(32.0)
    d_acc.update_state(labels, logits)
    history.append((step, float(seen.result()), float(d_acc.result())))
np.save(sys.argv[2], np.array(history))
