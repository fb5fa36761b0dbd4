"""A seeded, op-deterministic training script that must end bit-identical with or without tfstudio.

Used by tests/e2e/test_bit_exact.py and bench/soak.py. It trains with Dense,
BatchNormalization, Dropout, a layer that writes a variable in ``call``, a
custom ``train_step`` (``fit``) and a custom ``GradientTape`` loop, then writes
every final weight, the optimizers' iteration counts and the next random draws
(TensorFlow, Keras, NumPy, Python) to ``OUT.npz`` and prints one sha256 per
array, so two runs compare bit for bit.

    python bit_exact.py OUT.npz
"""

import hashlib
import random
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(1234)
tf.config.experimental.enable_op_determinism()


class CountingDense(keras.layers.Layer):
    """A Dense layer that counts its own calls in a variable (written in ``call``)."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.calls = self.add_weight(
            shape=(), initializer="zeros", trainable=False, name="calls", dtype="float32"
        )

    def call(self, x):
        self.calls.assign_add(1.0)
        return x @ self.kernel


class Net(keras.Model):
    """A custom ``train_step`` over Dense, BatchNormalization, Dropout and CountingDense."""

    def __init__(self):
        super().__init__()
        self.d1 = keras.layers.Dense(16, activation="relu")
        self.bn = keras.layers.BatchNormalization()
        self.drop = keras.layers.Dropout(0.3)
        self.count = CountingDense(8)
        self.out = keras.layers.Dense(1)

    def call(self, x, training=False):
        x = self.d1(x)
        x = self.bn(x, training=training)
        x = self.drop(x, training=training)
        return self.out(self.count(x))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            pred = self(x, training=True)
            loss = tf.reduce_mean(tf.square(pred - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
        return {"loss": loss}


def main(out_path: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(160, 6)).astype("float32")
    y = (x @ rng.normal(size=(6, 1))).astype("float32")

    model = Net()
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    # 5 steps: the counter in CountingDense must end at 5 (one call per step).
    model.fit(x, y, batch_size=32, epochs=1, shuffle=True, verbose=0)

    # A custom GradientTape loop on a second model, in a tf.function.
    loop_model = keras.Sequential(
        [keras.Input((6,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dropout(0.2),
         keras.layers.Dense(1)]
    )  # fmt: skip
    opt = keras.optimizers.SGD(0.05)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(160, seed=7).batch(32)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(loop_model(xb, training=True) - yb))
        grads = tape.gradient(loss, loop_model.trainable_variables)
        opt.apply_gradients(zip(grads, loop_model.trainable_variables, strict=True))
        return loss

    for _ in range(2):
        for xb, yb in dataset:
            step(xb, yb)

    # A fit on a dataset that reshuffles every epoch (its seed from the global seed): a
    # probe batch read from it would shift every later epoch's order.
    shuffled_model = keras.Sequential(
        [keras.Input((6,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)]
    )
    shuffled_model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    shuffled = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(160).batch(32)
    # (the inspector probes the layers with a validation batch instead)
    shuffled_model.fit(shuffled, epochs=3, verbose=0, validation_data=(x[:32], y[:32]))

    arrays = {}
    for i, v in enumerate(shuffled_model.variables):
        arrays[f"shuffled/{i}/{v.path}"] = np.asarray(v.numpy())
    for i, v in enumerate(model.variables):
        arrays[f"fit/{i}/{v.path}"] = np.asarray(v.numpy())
    for i, v in enumerate(loop_model.variables):
        arrays[f"loop/{i}/{v.path}"] = np.asarray(v.numpy())
    arrays["fit/optimizer_iterations"] = np.asarray(model.optimizer.iterations.numpy())
    arrays["loop/optimizer_iterations"] = np.asarray(opt.iterations.numpy())
    arrays["counter"] = np.asarray(model.count.calls.numpy())
    arrays["next/tf"] = tf.random.uniform((4,)).numpy()
    arrays["next/keras"] = np.asarray(keras.random.uniform((4,)))
    arrays["next/numpy"] = np.random.random(4)
    arrays["next/python"] = np.asarray([random.random() for _ in range(4)])
    np.savez(out_path, **arrays)
    print(f"counter {float(arrays['counter'])}")
    for name in sorted(arrays):
        print(f"sha256 {name} {hashlib.sha256(arrays[name].tobytes()).hexdigest()}")


if __name__ == "__main__":
    main(sys.argv[1])
