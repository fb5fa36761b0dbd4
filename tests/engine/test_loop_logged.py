"""``monitor.log`` inside a discovered loop: its scalars go with the step the script is at.

A ``tf.function`` loop's steps are read from the device up to 0.2 s late; a value logged at
an epoch's end still belongs to that epoch's last step, not to the last step read.
"""

from __future__ import annotations

import pytest

from tests.engine.helpers import console, of, run_script
from tests.engine.test_loop_nan import TRAIN_STEP
from tfstudio.core.events import MonitorError, StepEnded
from tfstudio.core.options import RunOptions

pytestmark = pytest.mark.tf

LOOP = """
import numpy as np, keras, tensorflow as tf
from tfstudio import monitor
rng = np.random.default_rng(0)
x = rng.random((16 * 8, 4), dtype="float32"); y = x.sum(1, keepdims=True)
"""
LOOP += (
    TRAIN_STEP
    + """
for epoch in range(6):
    for i in range(16):
        train_step(x[i * 8 : (i + 1) * 8], y[i * 8 : (i + 1) * 8])
    monitor.log(epoch, val_score=float(epoch) / 10)
"""
)


@pytest.mark.parametrize("decorator", ["@tf.function", ""], ids=["graph", "eager"])
def test_a_value_logged_at_an_epochs_end_goes_with_its_last_step(write_script, decorator):
    script = write_script(LOOP.format(decorator=decorator))
    ended, events = run_script(script, options=RunOptions(inspector=False))
    assert ended.status == "finished" and ended.global_step == 96
    logged = [(e.global_step, e.values["val_score"]) for e in of(events, StepEnded)
              if e.values.get("val_score", float("nan")) == e.values.get("val_score")]  # fmt: skip
    assert logged == [(16 * (k + 1), k / 10) for k in range(6)]
    losses = [e.global_step for e in of(events, StepEnded) if "loss" in e.values]
    assert sorted(set(losses)) == list(range(1, 97))  # every step, each once


TRACED_LOG = """
import tensorflow as tf
from tfstudio import monitor

v = tf.Variable(1.0)

@tf.function
def step():
    monitor.log(0, value=v * 2.0)  # a symbolic tensor while traced: a no-op without tfstudio
    v.assign_add(1.0)

for _ in range(3):
    step()
print("value", float(v), flush=True)
"""


def test_a_log_the_monitor_cannot_take_never_fails_the_script(write_script):
    ended, events = run_script(write_script(TRACED_LOG), options=RunOptions(inspector=False))
    assert ended.status == "finished" and ended.exit_code == 0
    assert "value 4.0" in console(events)
    (error,) = of(events, MonitorError)  # said once, in words
    assert error.where == "monitor.log" and "inside a tf.function" in error.message
    assert ended.global_step == 0 and ended.loops == 0  # nothing was logged
