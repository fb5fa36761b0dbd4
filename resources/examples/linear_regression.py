"""Linear regression: learn y = 3x + 2 from noisy samples.

The classic first TensorFlow training loop. Watch the loss fall and the
printed W and b converge to 3 and 2.

    python linear_regression.py [--epochs N]
"""

import argparse

import keras
import numpy as np

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=30)
args = parser.parse_args()

rng = np.random.default_rng(0)
x = rng.uniform(-1.0, 1.0, size=(1000, 1)).astype("float32")
y = (3.0 * x + 2.0 + rng.normal(0.0, 0.1, size=x.shape)).astype("float32")

model = keras.Sequential([keras.Input(shape=(1,)), keras.layers.Dense(1, name="line")])
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.02), loss="mse")


def show_line(epoch, logs):
    w, b = model.get_layer("line").get_weights()
    print(f"epoch {epoch + 1:3d}: W = {w[0, 0]:.4f}  b = {b[0]:.4f}  (target W = 3, b = 2)")


# Keras batches the arrays and shuffles them anew each epoch.
model.fit(
    x,
    y,
    batch_size=50,
    epochs=args.epochs,
    verbose=0,
    callbacks=[keras.callbacks.LambdaCallback(on_epoch_end=show_line)],
)
w, b = model.get_layer("line").get_weights()
print(f"learned: y = {w[0, 0]:.3f} x + {b[0]:.3f}")
