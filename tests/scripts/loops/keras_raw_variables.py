"""Two loops whose variables are raw tf.Variables (default name "Variable"); losses to argv[1].

The first, as in TensorFlow's "basic training loops" guide: a keras.Model subclass
holding two tf.Variable attributes, which Keras 3 does not list in its
trainable_variables, trained with a tape and assign_sub. The second trains two bare
tf.Variables made inside a function, the third a module-level tf.Variable in a
tf.function step. No loop may be called "Variable".
"""

import json
import sys

import keras
import tensorflow as tf


class Line(keras.Model):
    """y = w * x + b, with raw variables."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def call(self, x):
        return self.w * x + self.b


tf.random.set_seed(0)
x = tf.random.normal([64])
y = 3.0 * x + 2.0
line = Line()
losses = []


def train(model, steps, rate=0.1):
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x)))
        dw, db = tape.gradient(loss, [model.w, model.b])
        model.w.assign_sub(rate * dw)
        model.b.assign_sub(rate * db)
        losses.append(float(loss))


def fit_bare(steps, rate=0.1):
    slope = tf.Variable(1.0)
    offset = tf.Variable(0.0)
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - (slope * x + offset)))
        ds, do = tape.gradient(loss, [slope, offset])
        slope.assign_sub(rate * ds)
        offset.assign_sub(rate * do)
        losses.append(float(loss))


u = tf.Variable(0.5)


@tf.function
def graph_step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - u * x))
    (grad,) = tape.gradient(loss, [u])
    u.assign_sub(0.1 * grad)
    return loss


train(line, 6)
fit_bare(5)
losses += [float(graph_step()) for _ in range(4)]
json.dump({"losses": losses}, open(sys.argv[1], "w"))
