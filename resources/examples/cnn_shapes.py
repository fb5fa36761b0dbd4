"""A small CNN that tells circles, squares and triangles apart.

The images are drawn by the script itself (nothing is downloaded), so later
layer-output views have pictures to show.

    python cnn_shapes.py [--epochs N]
"""

import argparse

import keras
import numpy as np

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=8)
parser.add_argument("--samples", type=int, default=1500)
args = parser.parse_args()

SIZE = 28
CLASSES = ("circle", "square", "triangle")


def draw(kind, rng):
    """One SIZE x SIZE grey image of a shape at a random place and size."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype("float32")
    r = rng.uniform(5, 10)
    cx, cy = rng.uniform(r + 1, SIZE - r - 1, size=2)
    if kind == "circle":
        mask = (xx - cx) ** 2 + (yy - cy) ** 2 <= r**2
    elif kind == "square":
        mask = (np.abs(xx - cx) <= r * 0.8) & (np.abs(yy - cy) <= r * 0.8)
    else:  # triangle pointing up
        top = cy - r
        mask = (yy >= top) & (yy <= cy + r) & (np.abs(xx - cx) <= (yy - top) * 0.6)
    image = mask.astype("float32") * rng.uniform(0.6, 1.0)
    image += rng.normal(0.0, 0.08, size=image.shape)
    return np.clip(image, 0.0, 1.0)


def make_images(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(CLASSES), size=n)
    images = np.stack([draw(CLASSES[k], rng) for k in labels])[..., None]
    return images.astype("float32"), labels.astype("int32")


x_train, y_train = make_images(args.samples, seed=0)
x_val, y_val = make_images(max(args.samples // 5, 64), seed=1)

model = keras.Sequential(
    [
        keras.Input(shape=(SIZE, SIZE, 1)),
        keras.layers.Conv2D(8, 3, activation="relu", name="conv1"),
        keras.layers.MaxPooling2D(name="pool1"),
        keras.layers.Conv2D(16, 3, activation="relu", name="conv2"),
        keras.layers.MaxPooling2D(name="pool2"),
        keras.layers.Flatten(),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(len(CLASSES), activation="softmax"),
    ],
    name="shapes_cnn",
)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
# Keras batches the arrays and shuffles the training images anew each epoch.
model.fit(
    x_train,
    y_train,
    batch_size=32,
    validation_data=(x_val, y_val),
    epochs=args.epochs,
    verbose=2,
)
loss, acc = model.evaluate(x_val, y_val, batch_size=128, verbose=0)
print(f"validation accuracy: {acc:.3f} on {len(x_val)} images of {', '.join(CLASSES)}")
