"""A two-optimizer GAN recording both gradient norms to argv[1]; argv[2] "graph"/"eager"/"two"."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

generator = keras.Sequential(
    [keras.Input((2,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)],
    name="generator",
)
discriminator = keras.Sequential(
    [keras.Input((2,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)],
    name="discriminator",
)
g_opt, d_opt = keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3)
bce = keras.losses.BinaryCrossentropy(from_logits=True)
real = np.random.default_rng(0).normal(size=(16, 2)).astype("float32") + 3.0


def d_step(real, noise):
    with tf.GradientTape() as d_tape:
        fake = generator(noise)
        real_out, fake_out = discriminator(real), discriminator(fake)
        d_loss = bce(tf.ones_like(real_out), real_out) + bce(tf.zeros_like(fake_out), fake_out)
    d_grads = d_tape.gradient(d_loss, discriminator.trainable_variables)
    d_opt.apply_gradients(zip(d_grads, discriminator.trainable_variables, strict=True))
    return tf.linalg.global_norm(d_grads)


def g_step(noise):
    with tf.GradientTape() as g_tape:
        fake_out = discriminator(generator(noise))
        g_loss = bce(tf.ones_like(fake_out), fake_out)
    g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
    g_opt.apply_gradients(zip(g_grads, generator.trainable_variables, strict=True))
    return tf.linalg.global_norm(g_grads)


def train_step(real, noise):
    return d_step(real, noise), g_step(noise)


mode = sys.argv[2] if len(sys.argv) > 2 else "graph"
if mode == "graph":  # both updates in one tf.function
    train_step = tf.function(train_step)
elif mode == "two":  # the two updates in two tf.functions
    d_step, g_step = tf.function(d_step), tf.function(g_step)


d_norms, g_norms = [], []
rng = np.random.default_rng(1)
for _ in range(15):
    d, g = train_step(real, rng.normal(size=(16, 2)).astype("float32"))
    d_norms.append(float(d))
    g_norms.append(float(g))
json.dump({"d": d_norms, "g": g_norms}, open(sys.argv[1], "w"))
