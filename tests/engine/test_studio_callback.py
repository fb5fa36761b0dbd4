"""``from tfstudio import StudioCallback``: record a run from any script, distributed included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tfstudio.core.runs import list_runs, read_run_json, read_scalars
from tfstudio.engine.standalone import is_chief

pytestmark = pytest.mark.tf

MIRRORED = """
import os, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
)
import numpy as np, keras
from tfstudio import StudioCallback

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
assert strategy.num_replicas_in_sync == 2
with strategy.scope():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
x = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
y = x.sum(axis=1, keepdims=True)
cb = StudioCallback(sys.argv[1], name="mirrored.py")
model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[cb])
model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[cb])
print("RUN_DIR", cb.run_dir)
"""


def test_mirrored_strategy_records_one_value_per_step(tmp_path):
    logdir = tmp_path / "runs"
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(MIRRORED), str(logdir)],
        capture_output=True,
        text=True,
        timeout=240,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES="-1"),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    [run] = list_runs(logdir)
    assert run.name.startswith("mirrored-")
    loss = read_scalars(run.path)["step/loss"]
    # 64 samples / global batch 16 = 4 steps per epoch; 2 + 1 epochs over two fits
    assert loss.steps == list(range(1, 13))
    info = read_run_json(run.path)
    assert info["status"] == "finished" and info["steps"] == 12
    assert [s["start_step"] for s in info["segments"]] == [0, 8]
    assert run.final_loss == pytest.approx(loss.values[-1])
    assert len(read_scalars(run.path)["epoch/loss"].steps) == 3


def _config(kind: str, index: int, chief: bool) -> str:
    cluster = {"worker": ["localhost:1", "localhost:2"]}
    if chief:
        cluster["chief"] = ["localhost:0"]
    return json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}})


def test_only_the_chief_writes_under_multi_worker():
    assert is_chief("")  # one process: it writes
    assert is_chief(_config("chief", 0, chief=True))
    assert not is_chief(_config("worker", 0, chief=True))
    assert is_chief(_config("worker", 0, chief=False))
    assert not is_chief(_config("worker", 1, chief=False))
    assert not is_chief(json.dumps({"cluster": {"worker": ["a"]}, "task": {"type": "evaluator"}}))


def test_importing_tfstudio_stays_cheap():
    code = "import sys, tfstudio; assert 'tensorflow' not in sys.modules; print(tfstudio.__all__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "StudioCallback" in out.stdout
