import random
import time

import keras
import tensorflow as tf

seen = []


@tf.function
def step(x):
    print("tracing", x)  # expect: trace-side-effect
    t0 = time.time()  # expect: trace-side-effect
    jitter = random.random()  # expect: trace-side-effect
    seen.append(x)  # expect: trace-side-effect
    parts = []
    parts.append(x)
    return x * jitter + t0


class Noisy(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.outputs_seen = []

    def call(self, x):
        self.outputs_seen.append(x)  # expect: trace-side-effect
        return x


ds = tf.data.Dataset.range(10).map(lambda x: print(x) or x)  # expect: trace-side-effect
step(tf.constant(1.0))
model = keras.Sequential([Noisy(), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(tf.ones((8, 4)), tf.ones((8, 1)), verbose=0)
