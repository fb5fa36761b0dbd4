"""A training script that falls into several TensorFlow pitfalls (for the notices screenshot)."""

import keras
import numpy as np
import tensorflow as tf


class Classifier(keras.Model):
    def __init__(self, classes):
        super().__init__()
        self.hidden = keras.layers.Dense(32, activation="relu")
        self.out = keras.layers.Dense(classes, activation="softmax")
        self.steps_seen = 0

    def call(self, x):
        self.steps_seen += 1
        print("batch mean", tf.reduce_mean(x))
        return self.out(self.hidden(x))


x = np.random.rand(1000, 8).astype("float32")
y = (x.sum(axis=1) > 4).astype("int32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000)
train = ds.take(800).batch(32)
test = ds.skip(800).batch(32)

model = Classifier(2)
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(train, validation_data=test, epochs=3)
model.save("classifier.keras")
