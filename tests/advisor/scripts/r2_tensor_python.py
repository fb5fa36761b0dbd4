import keras
import tensorflow as tf


@tf.function
def f(x):
    if tf.reduce_sum(x) > 0:  # autograph converts this: silent
        x = x * 2
    return x.numpy()  # expect: tensor-as-python


class Gate(keras.layers.Layer):
    def call(self, x):
        total = tf.reduce_sum(x)
        if total > 0:  # expect: tensor-as-python
            return x * 2
        return x


class M(keras.Model):
    def __init__(self):
        super().__init__()
        self.gate = Gate()  # fitted with M: its call is traced

    def train_step(self, data):
        x, y = data
        if tf.reduce_mean(x) > 0:  # expect: tensor-as-python
            pass
        return {}


ds = tf.data.Dataset.range(4).map(lambda v: v.numpy())  # expect: tensor-as-python
model = M()
model.compile("sgd", "mse")
model.fit(tf.ones((8, 4)), tf.ones((8, 1)), verbose=0)
