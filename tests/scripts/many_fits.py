"""Many fits in one script: eight tiny models trained one after another.

A demo (and screenshot source) for the metrics view at real-world scale: the
models differ (regressors, classifiers, one with an AUC), their metric names
come and go (``mae`` in some fits, ``accuracy`` in others, ``auc`` in one), a few
have validation data, and the first fit has one early batch whose loss spikes
about a thousand times above the rest. Quick on a CPU.

    python tests/scripts/many_fits.py [--epochs N]
"""

import argparse

import keras
import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
N, BATCH = 960, 32  # 30 steps per epoch
x = rng.normal(size=(N, 8)).astype("float32")
w = rng.normal(size=(8, 1)).astype("float32")
y_reg = (x @ w * 0.5 + rng.normal(0.0, 0.1, size=(N, 1))).astype("float32")
y_cls = np.digitize(y_reg[:, 0], np.quantile(y_reg[:, 0], [1 / 3, 2 / 3])).astype("int32")
y_bin = (y_reg[:, 0] > 0).astype("float32")

# One early batch (the 5th of the first fit) with targets 40x too large: a loss spike.
y_spiky = y_reg.copy()
y_spiky[4 * BATCH : 5 * BATCH] *= 40.0


def data(y, shuffle=True):
    """A pre-built pipeline (no per-fit numpy conversion while the GIL is held)."""
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle:
        ds = ds.shuffle(N, seed=0)
    return ds.batch(BATCH)


def spiky_then_clean():
    """First epoch with the spiky batch, then clean epochs: the spike happens once."""
    clean = data(y_reg).repeat(max(0, args.epochs - 1))
    return data(y_spiky, shuffle=False).concatenate(clean)


def mlp(name, hidden, out, activation=None):
    """A small dense model."""
    layers = [keras.Input(shape=(8,))]
    layers += [keras.layers.Dense(h, activation="relu") for h in hidden]
    layers.append(keras.layers.Dense(out, activation=activation))
    return keras.Sequential(layers, name=name)


runs = [
    # name, model, loss, metrics, targets, validation
    ("regressor_spiky", mlp("regressor_spiky", [16], 1), "mse", ["mae"], None, False),
    ("regressor_wide", mlp("regressor_wide", [64], 1), "mse", ["mae"], y_reg, True),
    ("classifier_small", mlp("classifier_small", [16], 3, "softmax"),
     "sparse_categorical_crossentropy", ["accuracy"], y_cls, True),
    ("classifier_deep", mlp("classifier_deep", [32, 32], 3, "softmax"),
     "sparse_categorical_crossentropy", ["accuracy"], y_cls, False),
    ("binary_auc", mlp("binary_auc", [16], 1, "sigmoid"), "binary_crossentropy",
     ["accuracy", keras.metrics.AUC(name="auc")], y_bin, True),
    ("regressor_huber", mlp("regressor_huber", [32], 1), "huber", ["mae"], y_reg, False),
    ("regressor_deep", mlp("regressor_deep", [32, 16], 1), "mse", ["mae", "mse"], y_reg, True),
    ("classifier_wide", mlp("classifier_wide", [128], 3, "softmax"),
     "sparse_categorical_crossentropy", ["accuracy"], y_cls, False),
]  # fmt: skip

for name, model, loss, metrics, y, validate in runs:
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=loss, metrics=metrics)
    history = model.fit(
        spiky_then_clean() if y is None else data(y),
        validation_data=data(y, shuffle=False).take(5) if validate else None,
        epochs=args.epochs,
        steps_per_epoch=N // BATCH,
        shuffle=False,
        verbose=0,
    )
    final = {k: round(v[-1], 4) for k, v in history.history.items()}
    print(f"{name}: {final}")
