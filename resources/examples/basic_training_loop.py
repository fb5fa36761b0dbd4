"""The basic training loop from TensorFlow's guide: learn y = 3x + 2 with W, b and assign_sub.

No Keras and no fit: a tf.Module holds the variables, a GradientTape computes the
gradients and the variables are updated by hand. tfstudio finds the loop by itself.
"""

import tensorflow as tf

TRUE_W, TRUE_B = 3.0, 2.0
STEPS = 300
LEARNING_RATE = 0.02


class MyModel(tf.Module):
    """y = W * x + b."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = tf.Variable(5.0, name="W")
        self.b = tf.Variable(0.0, name="b")

    def __call__(self, x):
        return self.w * x + self.b


tf.random.set_seed(0)
x = tf.random.normal([200])
y = x * TRUE_W + TRUE_B + tf.random.normal([200], stddev=0.1)

model = MyModel(name="linear")


def train_step(model, x, y, learning_rate):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x)))
    dw, db = tape.gradient(loss, [model.w, model.b])
    model.w.assign_sub(learning_rate * dw)
    model.b.assign_sub(learning_rate * db)
    return loss


for step in range(STEPS):
    loss = train_step(model, x, y, LEARNING_RATE)
    if step % 50 == 0 or step == STEPS - 1:
        print(f"step {step:3d}: W={model.w.numpy():.3f} b={model.b.numpy():.3f} loss={loss:.5f}")

print(f"learned W={model.w.numpy():.3f} (true {TRUE_W}), b={model.b.numpy():.3f} (true {TRUE_B})")
