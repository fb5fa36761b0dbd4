"""A headless run at default settings records weights, gradients and layer outputs from
its first steps (issue 54: a short fit recorded no gradient at all, its recording twin
waiting for the time budget to pay for its trace). Read back from the run folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfstudio.core.recorded import GRADIENTS, OUTPUTS, WEIGHTS
from tfstudio.core.runs import RunReader, list_runs

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]

FIT = """
import numpy as np, keras
rng = np.random.default_rng(0)
x = rng.normal(size=(1600, 4)).astype("float32")
y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")).astype("float32")
m = keras.Sequential(
    [keras.Input((4,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
)
m.compile("adam", "mse")
m.fit(x, y, batch_size=16, epochs=2, validation_data=(x[:64], y[:64]), verbose=0)
"""

LOOP = """
import tensorflow as tf
tf.random.set_seed(0)
x = tf.random.normal([256, 3])
y = tf.reduce_sum(x, axis=1, keepdims=True)
w = tf.Variable(tf.zeros([3, 1]), name="w")
b = tf.Variable(0.0, name="b")
opt = tf.keras.optimizers.SGD(0.05)

@tf.function
def step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(xb @ w + b - yb))
    grads = tape.gradient(loss, [w, b])
    opt.apply_gradients(zip(grads, [w, b]))
    return loss

for i in range(200):
    j = (i * 32) % 256
    step(x[j : j + 32], y[j : j + 32])
"""


def run_headless(script: Path, logdir: Path) -> tuple[int, dict[str, list[int]]]:
    """``tfstudio run`` at default settings; the run's steps, and the sampled steps of
    each kind (weights, gradients, layer outputs) read back from its folder."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="-1", PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "tfstudio", "run", "--logdir", str(logdir), str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=script.parent,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "no gradients were" not in result.stderr
    [run] = list_runs(logdir)
    reader = RunReader(run.path)
    reader.update()
    steps: dict[str, list[int]] = {}
    for kind, prefix in (("weights", WEIGHTS), ("gradients", GRADIENTS), ("outputs", OUTPUTS)):
        sampled = {
            h.step for tag, hs in reader.histograms.items() if tag.startswith(prefix) for h in hs
        }
        steps[kind] = sorted(sampled)
    return run.steps, steps


def test_a_short_fit_records_weights_gradients_and_layer_outputs_from_its_first_steps(
    write_script, tmp_path
):
    total, sampled = run_headless(write_script(FIT), tmp_path / "runs")
    assert total == 200
    assert sampled["weights"][0] == 1
    assert sampled["gradients"][0] == 1  # on main before issue 54: none at all
    assert sampled["outputs"] and sampled["outputs"][0] <= total // 10
    assert sampled["gradients"] == sampled["weights"]  # every sample has both


def test_a_short_loop_records_weights_and_gradients_from_its_first_steps(write_script, tmp_path):
    total, sampled = run_headless(write_script(LOOP), tmp_path / "runs")
    assert total == 200
    assert sampled["weights"] and sampled["weights"][0] <= total // 10
    assert sampled["gradients"] and sampled["gradients"][0] <= total // 10
