"""A graph loop whose script sets the optimizer's rate after step 20, then one whose rate is
a schedule (it runs 30 steps, then argv[1] seconds more)."""

import sys
import time

import keras
import numpy as np
import tensorflow as tf

x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)


def loop(opt: keras.optimizers.Optimizer) -> tf.types.experimental.PolymorphicFunction:
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return train_step


opt = keras.optimizers.SGD(0.01)
step = loop(opt)
for i in range(40):
    step(x, y)
    if i == 19:
        opt.learning_rate = 0.002  # from step 21 on

schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=100, decay_rate=0.5)
step = loop(keras.optimizers.SGD(schedule))
for _ in range(30):  # its traces (the step's, the norm's, the inspector's): not timed
    step(x, y)
started = time.monotonic()
while time.monotonic() - started < float(sys.argv[1]):
    step(x, y)
