import keras
import tensorflow as tf


class Counting(keras.Model):
    def __init__(self, scale=2):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.calls = tf.Variable(0, trainable=False)
        self.scale = scale

    def call(self, x):
        self.calls.assign_add(1)
        return self.dense(x) * self.scale


model = Counting()
model.compile("sgd", "mse")
model.fit([[1.0]], [[1.0]], verbose=0)
