"""A tiny VAE (KL term via add_loss) trained by a @tf.function loop; losses to argv[1]."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf


class Sampling(keras.layers.Layer):
    def call(self, inputs):
        mean, log_var = inputs
        kl = -0.5 * tf.reduce_mean(1 + log_var - tf.square(mean) - tf.exp(log_var))
        self.add_loss(kl)
        return mean + tf.exp(0.5 * log_var) * tf.random.normal(tf.shape(mean), seed=1)


inputs = keras.Input((6,))
h = keras.layers.Dense(8, activation="relu")(inputs)
z = Sampling()([keras.layers.Dense(2)(h), keras.layers.Dense(2)(h)])
vae = keras.Model(inputs, keras.layers.Dense(6)(z), name="vae")
opt = keras.optimizers.Adam(1e-2)
x = tf.constant(np.random.default_rng(0).normal(size=(32, 6)).astype("float32"))


@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        recon = vae(x, training=True)
        loss = tf.reduce_mean(tf.square(recon - x)) + tf.add_n(vae.losses)
    grads = tape.gradient(loss, vae.trainable_variables)
    opt.apply_gradients(zip(grads, vae.trainable_variables, strict=True))
    return loss


losses = [float(train_step(x)) for _ in range(10)]
json.dump({"losses": losses}, open(sys.argv[1], "w"))
