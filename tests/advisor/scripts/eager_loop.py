"""A subclassed model trained by an eager custom loop: its call runs eagerly (no alarm)."""

import keras
import tensorflow as tf


class Net(keras.Model):
    def __init__(self):
        super().__init__()
        self.d = keras.layers.Dense(1)
        self.calls = 0

    def call(self, x):
        self.calls += 1
        print("call", x.numpy().mean())
        return self.d(x)


net = Net()
opt = keras.optimizers.SGD(0.1)
for _ in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(net(tf.ones((2, 3))))
    opt.apply_gradients(
        zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables, strict=True)
    )
ds = tf.data.Dataset.range(3).map(lambda v: tf.py_function(lambda t: t.numpy() * 2, [v], tf.int64))
