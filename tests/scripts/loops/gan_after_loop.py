"""A single-model eager loop (the discriminator learns real from noise, with a Keras
metric), then a GAN in a tf.function: the same discriminator and optimizer, and a
generator with its own. Two loops; losses to the JSON path in argv[1]."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
generator = keras.Sequential(
    [keras.Input((2,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)],
    name="generator",
)
discriminator = keras.Sequential(
    [keras.Input((2,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)],
    name="discriminator",
)
d_opt, g_opt = keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3)
bce = keras.losses.BinaryCrossentropy(from_logits=True)
accuracy = keras.metrics.BinaryAccuracy(threshold=0.0)
real = rng.normal(size=(16, 2)).astype("float32") + 3.0
labels = np.concatenate([np.ones((16, 1)), np.zeros((16, 1))]).astype("float32")
pre: list[float] = []
for _ in range(12):  # pretrain the discriminator: real against noise
    batch = np.concatenate([real, rng.normal(size=(16, 2)).astype("float32")])
    with tf.GradientTape() as tape:
        out = discriminator(batch)
        loss = bce(labels, out)
    grads = tape.gradient(loss, discriminator.trainable_variables)
    d_opt.apply_gradients(zip(grads, discriminator.trainable_variables, strict=True))
    accuracy.update_state(labels, out)
    pre.append(float(loss))
print("pretrained: accuracy", float(accuracy.result()))


@tf.function
def gan_step(real, noise):
    with tf.GradientTape() as d_tape:
        fake = generator(noise)
        real_out, fake_out = discriminator(real), discriminator(fake)
        d_loss = bce(tf.ones_like(real_out), real_out) + bce(tf.zeros_like(fake_out), fake_out)
    d_grads = d_tape.gradient(d_loss, discriminator.trainable_variables)
    d_opt.apply_gradients(zip(d_grads, discriminator.trainable_variables, strict=True))
    accuracy.update_state(tf.ones_like(real_out), real_out)
    with tf.GradientTape() as g_tape:
        fake_out = discriminator(generator(noise))
        g_loss = bce(tf.ones_like(fake_out), fake_out)
    g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
    g_opt.apply_gradients(zip(g_grads, generator.trainable_variables, strict=True))
    return d_loss, g_loss


d_losses, g_losses = [], []
for _ in range(20):
    d, g = gan_step(real, rng.normal(size=(16, 2)).astype("float32"))
    d_losses.append(float(d))
    g_losses.append(float(g))
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        json.dump({"pretrain": pre, "d": d_losses, "g": g_losses}, f)
