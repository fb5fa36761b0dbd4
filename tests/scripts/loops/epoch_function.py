"""A whole epoch in one ``tf.function``: the dataset loop runs inside the graph (a
``tf.while_loop``), so one call is 16 steps. Each step's loss to argv[1]."""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(512, 8)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int64")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
model = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)]
)
opt = keras.optimizers.Adam(0.01)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_epoch(ds):
    losses = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    for xb, yb in ds:
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply(grads, model.trainable_variables)
        losses = losses.write(losses.size(), loss)
    return losses.stack()


own = []
for epoch in range(4):
    own.extend(train_epoch(ds).numpy().tolist())
    print("epoch", epoch, own[-1])
json.dump({"losses": own}, open(sys.argv[1], "w"))
