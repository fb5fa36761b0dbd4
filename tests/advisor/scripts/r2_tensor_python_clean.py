import keras
import tensorflow as tf


@tf.function
def f(x):
    if tf.reduce_sum(x) > 0:
        x = x * 2
    return x


class Gate(keras.layers.Layer):
    def __init__(self, double=True):
        super().__init__()
        self.double = double

    def call(self, x, training=None):
        if self.double and training:
            x = x * 2
        if x.shape[-1] > 3:
            x = x[..., :3]
        return tf.where(tf.reduce_sum(x) > 0, x * 2, x)


print(f(tf.constant([1.0])).numpy())
model = keras.Sequential([Gate(), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(tf.ones((8, 4)), tf.ones((8, 1)), verbose=0)
