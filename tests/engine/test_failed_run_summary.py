"""A real script that trains, then fails: its RunEnded counts what ran (in-process, in a worker)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import wait_for
from tests.engine.helpers import run_script
from tfstudio.core.channel import Channel
from tfstudio.core.events import RunEnded
from tfstudio.core.process import ProcessLauncher

pytestmark = pytest.mark.tf

TWO_LOOPS_THEN_RAISE = """
import time
import keras
import numpy as np
import tensorflow as tf

x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
y = x.sum(axis=1, keepdims=True)
for name in ("first", "second"):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)], name=name)
    opt = keras.optimizers.SGD(0.01)
    for _ in range(5):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
time.sleep(1.2)  # a run that took a while: the summary must not say 0:00
raise ValueError("the evaluation data has the wrong shape")
"""

FIT_THEN_SEGFAULT = """
import os, signal
import keras
import numpy as np

model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(np.zeros((8, 3)), np.zeros((8, 1)), batch_size=4, epochs=1, verbose=0)
os.kill(os.getpid(), signal.SIGSEGV)
"""


def test_a_script_that_trains_two_loops_then_raises(tmp_path):
    script = tmp_path / "two_loops.py"
    script.write_text(TWO_LOOPS_THEN_RAISE)
    ended, _ = run_script(script, capture_output=False)
    assert ended.status == "failed" and ended.error.type_name == "ValueError"
    assert (ended.fits, ended.loops, ended.global_step) == (0, 2, 10)
    assert ended.time > 0
    text = ended.summary()
    assert re.match(r"Run failed after 0:0[1-9]: 0 fits, 2 loops, 10 steps — ValueError: ", text)
    assert "wrong shape" in text and "two_loops.py:" in text


def test_a_worker_that_dies_after_a_fit_counts_it(tmp_path):
    script = tmp_path / "segv_after_fit.py"
    script.write_text(FIT_THEN_SEGFAULT)
    channel = Channel()
    launcher = ProcessLauncher(channel, keep_spare=False)
    events: list[object] = []
    try:
        launcher.start(str(script))
        wait_for(
            lambda: events.extend(channel.drain()) or any(isinstance(e, RunEnded) for e in events),
            timeout=180,
        )
        wait_for(lambda: not launcher.is_running(), timeout=30)
    finally:
        launcher.shutdown()
    (ended,) = [e for e in events if isinstance(e, RunEnded)]
    assert ended.status == "failed" and "SIGSEGV" in ended.message
    assert (ended.fits, ended.loops, ended.global_step) == (1, 0, 2)
    assert "1 fit, 2 steps" in ended.summary()
