"""TensorFlow's "basic training loops" guide: a tf.Module, a tape, assign_sub (no Keras);
then the same at the script's top level with two bare variables (no module, no function);
then a trainer object's method that trains the module the trainer holds.

Three loops; every step's loss goes to the JSON path in argv[1] ({"losses": [...]}).
"""

import json
import sys

import tensorflow as tf

TRUE_W, TRUE_B = 3.0, 2.0
tf.random.set_seed(0)
x = tf.random.normal(shape=[201])
y = x * TRUE_W + TRUE_B + tf.random.normal(shape=[201])


class MyModel(tf.Module):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def __call__(self, x):
        return self.w * x + self.b


def loss(target_y, predicted_y):
    return tf.reduce_mean(tf.square(target_y - predicted_y))


def train(model, x, y, learning_rate):
    with tf.GradientTape() as t:
        current_loss = loss(y, model(x))
    dw, db = t.gradient(current_loss, [model.w, model.b])
    model.w.assign_sub(learning_rate * dw)
    model.b.assign_sub(learning_rate * db)
    return current_loss


losses: list[float] = []


def training_loop(model, x, y):
    for epoch in range(10):
        losses.append(float(train(model, x, y, learning_rate=0.1)))
        print(f"Epoch {epoch:2d}: W={model.w.numpy():1.2f} b={model.b.numpy():1.2f}")


model = MyModel()
training_loop(model, x, y)

w = tf.Variable(5.0)
b = tf.Variable(0.0)
for _ in range(8):
    with tf.GradientTape() as t:
        current_loss = loss(y, w * x + b)
    dw, db = t.gradient(current_loss, [w, b])
    w.assign_sub(0.1 * dw)
    b.assign_sub(0.1 * db)
    losses.append(float(current_loss))


class Trainer:
    """Holds the module it trains (not a module itself): the loop is the module's."""

    def __init__(self, module):
        self.module = module

    def train_step(self):
        with tf.GradientTape() as t:
            current_loss = loss(y, self.module(x))
        dw, db = t.gradient(current_loss, [self.module.w, self.module.b])
        self.module.w.assign_sub(0.1 * dw)
        self.module.b.assign_sub(0.1 * db)
        return current_loss


trainer = Trainer(MyModel(name="line"))
for _ in range(6):
    losses.append(float(trainer.train_step()))

if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        json.dump({"losses": losses, "loops": [10, 8, 6]}, f)
