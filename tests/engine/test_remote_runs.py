"""Recording to a URL: the worker writes through tf.io.gfile, the reader reads the same URL.

No network here, so no real gs:// bucket: ``file://`` is a scheme both sides reach
(TensorFlow's file system for it in the worker, TensorBoard's file layer + fsspec in
the reader), and ``ram://`` (TensorFlow's in-memory file system) checks that the
recorder writes through TensorFlow's file systems and nothing else.
"""

from __future__ import annotations

import json

import pytest

from tests.engine.helpers import of, run_script
from tfstudio.core.events import CheckpointSaved, RunEnded, RunStarted, StepEnded
from tfstudio.core.locations import UnsupportedLocation, UrlPath
from tfstudio.core.options import RunOptions
from tfstudio.core.runs import RunReader, list_runs, read_run_json
from tfstudio.engine.recorder import Recorder

pytestmark = pytest.mark.tf

TRAIN = """
import numpy as np, keras
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 3)).astype("float32")
y = rng.normal(size=(64, 1)).astype("float32")
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y, batch_size=16, epochs=2, verbose=0)
"""


def _steps(n, start=1):
    return [
        StepEnded(0, g, 0, g, 1, {"loss": 1.0 / g}, {"loss": 1.0 / g}, 0.01 * g)
        for g in range(start, start + n)
    ]


def test_a_run_recorded_to_a_url_lists_and_reads_back_through_that_url(write_script, tmp_path):
    pytest.importorskip("fsspec", reason="the reader reaches file:// through fsspec")
    url = f"file://{tmp_path}/runs"
    options = RunOptions(logdir=url, checkpoint_every=3)
    ended, events = run_script(write_script(TRAIN), options=options)
    assert ended.status == "finished", ended.message
    saved = of(events, CheckpointSaved)
    assert [e.step for e in saved] == [3, 6]
    steps = of(events, StepEnded)
    assert len(steps) == 8
    [local] = (tmp_path / "runs").iterdir()  # TensorFlow's file:// wrote the files
    assert any("tfevents" in p.name for p in local.iterdir())
    # the checkpoints are in the run's folder at that URL too, with their index
    assert all(e.path.startswith(f"{url}/{local.name}/checkpoints/ckpt-") for e in saved)
    folder = local / "checkpoints"
    assert {"checkpoint", "tfstudio-checkpoints.json", "ckpt-6.index"} <= {
        p.name for p in folder.iterdir()
    }
    index = json.loads((folder / "tfstudio-checkpoints.json").read_text())
    assert [c["step"] for c in index["checkpoints"]] == [3, 6]
    [run] = list_runs(url)
    assert isinstance(run.path, UrlPath) and run.path.name == local.name
    assert run.status == "finished" and run.steps == 8
    reader = RunReader(run.path)
    reader.update()
    assert reader.scalars["step/loss"].steps == [s.global_step for s in steps]
    assert reader.scalars["step/loss"].values == pytest.approx(
        [s.values["loss"] for s in steps], rel=1e-6
    )


def test_a_followed_url_run_gives_only_what_was_appended(tmp_path):
    pytest.importorskip("fsspec")
    url = UrlPath(f"file://{tmp_path}/runs")
    rec = Recorder.for_script(url, "/x/train.py", flush_every=3600)
    assert isinstance(rec.run_dir, UrlPath) and str(rec.run_dir).startswith(str(url))
    rec.write([RunStarted("/x/train.py", ("train.py",), "/x", 0.0), *_steps(5)])
    rec.flush()
    reader = RunReader(rec.run_dir)
    assert reader.update() == 5
    assert read_run_json(rec.run_dir)["status"] == "running"
    rec.write(_steps(3, start=6))
    rec.flush()
    assert reader.update() == 3
    rec.close(RunEnded("finished", 0, 1, 8, 1.0))
    assert read_run_json(rec.run_dir)["status"] == "finished"
    assert reader.scalars["step/loss"].steps == list(range(1, 9))


def test_the_recorder_writes_through_tensorflows_file_systems(tmp_path):
    import tensorflow as tf
    from tensorboard.compat.proto import event_pb2

    base = f"ram://{tmp_path.name}/runs"  # only TensorFlow can reach this: no local file
    rec = Recorder.for_script(base, "/x/train.py")
    rec.write([RunStarted("/x/train.py", ("train.py",), "/x", 0.0), *_steps(4)])
    rec.close(RunEnded("finished", 0, 1, 4, 1.0))
    [name] = tf.io.gfile.listdir(base)
    folder = f"{base}/{name.rstrip('/')}"
    assert str(rec.run_dir) == folder
    files = tf.io.gfile.listdir(folder)
    with tf.io.gfile.GFile(f"{folder}/run.json", "rb") as f:
        info = json.loads(f.read())
    assert info["status"] == "finished" and info["steps"] == 4
    [events_name] = [n for n in files if "tfevents" in n]
    losses = []
    for record in tf.data.TFRecordDataset(f"{folder}/{events_name}"):
        event = event_pb2.Event.FromString(record.numpy())
        losses += [v for v in event.summary.value if v.tag == "step/loss"]
    assert len(losses) == 4
    # the reader (TensorBoard's layer, no TensorFlow) cannot reach ram://: it says so
    with pytest.raises(UnsupportedLocation, match="ram://"):
        list_runs(base)


def test_a_scheme_tensorflow_lacks_is_reported_and_the_run_goes_on(write_script):
    ended, events = run_script(write_script(TRAIN), options=RunOptions(logdir="nosuchfs://b/r"))
    assert ended.status == "finished"  # training never fails because of monitoring
    assert len(of(events, StepEnded)) == 8
    reported = [e for e in events if type(e).__name__ == "MonitorError"]
    assert reported and "nosuchfs://" in str(reported[0])
