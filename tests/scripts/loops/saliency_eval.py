"""No training: a saliency map (gradient of an input) and an evaluation."""

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
x = tf.constant(np.ones((2, 4), "float32"))
with tf.GradientTape() as tape:
    tape.watch(x)
    out = model(x)
saliency = tape.gradient(out, x)
with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    out = tf.reduce_sum(model(x))
first, second = tape.gradient(out, x), tape.gradient(out, x)
loss = keras.losses.MeanSquaredError()(np.zeros((2, 3)), model(x))
counter = tf.Variable(0)
counter.assign_add(1)
print("saliency", saliency.shape, float(loss))
