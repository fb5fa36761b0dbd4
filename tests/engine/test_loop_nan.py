"""The NaN guard in custom loops: the offending step is named, eager and ``tf.function`` alike.

A graph step's loss exists on the device only: the reader finds it NaN up to a read later
(0.2 s), and the guard acts at the next call of the step function, naming the step whose
loss was NaN, not the one it stopped or paused at.
"""

from __future__ import annotations

import math

import pytest

from tests.conftest import wait_for
from tests.engine.helpers import of, run_script
from tests.engine.test_controls import start
from tfstudio.core.commands import Stop
from tfstudio.core.events import NonFinite, RunState, StepEnded
from tfstudio.core.options import RunOptions
from tfstudio.engine.control import NAN_EXIT_CODE

pytestmark = pytest.mark.tf

# A one-layer model and its step, eager or @tf.function (``decorator``), for the loop tests.
TRAIN_STEP = """
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(0.01)

{decorator}
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(xb) - yb) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss
"""

# Batch 7 (steps count from 1) holds a NaN input: its loss is NaN, and so is every later one.
# A graph loop's NaN is read within 0.2 s: the loop is long enough that a loaded machine's
# reader still reads it while the loop runs (400 steps ended first once in CI).
STEPS = 4000
LOOP = """
import numpy as np, keras, tensorflow as tf
STEPS = {steps}
rng = np.random.default_rng(0)
x = rng.random((8 * STEPS, 4), dtype="float32"); y = x.sum(1, keepdims=True)
x[6 * 8] = np.nan
"""
LOOP += (
    TRAIN_STEP
    + """
for i in range(STEPS):
    train_step(x[i * 8 : (i + 1) * 8], y[i * 8 : (i + 1) * 8])
"""
)


@pytest.mark.parametrize("decorator", ["@tf.function", ""], ids=["graph", "eager"])
def test_a_nan_loss_stops_the_loop_naming_its_step(write_script, decorator):
    script = write_script(LOOP.format(decorator=decorator, steps=STEPS))
    ended, events = run_script(script, options=RunOptions(on_nan="stop", inspector=False))
    assert ended.status == "stopped" and ended.exit_code == NAN_EXIT_CODE
    assert "non-finite loss at step 7 " in ended.message
    (nan,) = of(events, NonFinite)
    assert nan.global_step == 7 and nan.action == "stop" and math.isnan(nan.loss)
    assert "none was recomputed" in nan.detail  # the script's batches are its own
    losses = {e.global_step: e.values["loss"] for e in of(events, StepEnded)}
    assert all(math.isfinite(losses[s]) for s in range(1, 7)) and math.isnan(losses[7])
    assert ended.global_step < STEPS  # stopped, not trained to the end


def test_a_nan_loss_in_a_graph_loop_pauses_it_in_the_window(write_script):
    script = write_script(LOOP.format(decorator="@tf.function", steps=STEPS))
    session, seen = start(script, on_nan="pause")
    wait_for(lambda: of(seen.poll(), RunState))
    paused = of(seen.events, RunState)[0]
    assert paused.state == "paused" and paused.reason == "non-finite loss"
    (nan,) = of(seen.events, NonFinite)
    assert nan.global_step == 7 and nan.action == "pause"
    seen.channel.send(Stop())
    ended = session.join(timeout=60)
    assert ended is not None and ended.status == "stopped"


GAN = """
import numpy as np, keras, tensorflow as tf
generator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)], name="generator")
critic = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)], name="critic")
g_opt, c_opt = keras.optimizers.SGD(0.01), keras.optimizers.SGD(0.01)
real = np.random.default_rng(0).normal(size=(8, 2)).astype("float32")
noise = np.random.default_rng(1).normal(size=(400, 2, 8, 2)).astype("float32")
noise[6, 1, 0, 0] = np.nan  # step 7: the generator's loss is NaN first (the critic's at 8)

@tf.function
def train_step(real, z, z2):
    with tf.GradientTape() as tape:
        c_loss = tf.reduce_mean(critic(generator(z))) - tf.reduce_mean(critic(real))
    c_opt.apply_gradients(zip(tape.gradient(c_loss, critic.trainable_variables),
                              critic.trainable_variables))
    with tf.GradientTape() as tape:
        g_loss = -tf.reduce_mean(critic(generator(z2)))
    g_opt.apply_gradients(zip(tape.gradient(g_loss, generator.trainable_variables),
                              generator.trainable_variables))

for i in range(400):
    train_step(real, noise[i, 0], noise[i, 1])
"""


def test_a_nan_in_a_gans_second_model_is_named_at_its_own_step(write_script):
    ended, events = run_script(
        write_script(GAN), options=RunOptions(on_nan="stop", inspector=False)
    )
    assert ended.exit_code == NAN_EXIT_CODE
    (nan,) = of(events, NonFinite)
    assert nan.global_step == 7
    steps = {e.global_step: e.values for e in of(events, StepEnded)}
    assert math.isfinite(steps[7]["loss (critic)"]) and math.isnan(steps[7]["loss (generator)"])
