"""The recorder writes a run folder that TensorBoard's own reader and tfstudio's read back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.engine.helpers import of, run_script
from tfstudio.core.events import EpochEnded, FitStarted, ModelSummary, RunEnded, StepEnded
from tfstudio.core.options import RunOptions
from tfstudio.core.runs import list_runs, read_run_json, read_scalars
from tfstudio.engine.recorder import WRITERS, Recorder

pytestmark = pytest.mark.tf

TRAIN = """
import numpy as np, keras
rng = np.random.default_rng(0)
x = rng.normal(size=(96, 3)).astype("float32")
y = rng.normal(size=(96, 1)).astype("float32")
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile("sgd", "mse", metrics=["mae"])
model.fit(x, y, batch_size=16, epochs=2, validation_split=0.25, verbose=0)
"""


def _tb_scalars(run_dir) -> dict[str, list[tuple[int, float]]]:
    """Scalars as TensorBoard's own reader sees them (tensors of the scalars plugin)."""
    acc = EventAccumulator(str(run_dir), size_guidance={"tensors": 0, "scalars": 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["tensors"]:
        if acc.SummaryMetadata(tag).plugin_data.plugin_name != "scalars":
            continue  # histograms
        out[tag] = [
            (t.step, float(np.asarray(t.tensor_proto.float_val)[0])) for t in acc.Tensors(tag)
        ]
    return out


def test_run_folder_holds_the_steps_the_callback_emitted(write_script, tmp_path):
    logdir = tmp_path / "runs"
    ended, events = run_script(write_script(TRAIN), options=RunOptions(logdir=str(logdir)))
    assert ended.status == "finished"
    [run_dir] = [p for p in logdir.iterdir()]
    assert run_dir.name.startswith("train-")
    steps = of(events, StepEnded)
    assert len(steps) == 10  # 72 training samples / 16 -> 5 steps x 2 epochs
    tb = _tb_scalars(run_dir)
    for key in ("loss", "mae"):
        want = [(s.global_step, s.values[key]) for s in steps]
        got = tb[f"step/{key}"]
        assert [g[0] for g in got] == [w[0] for w in want]
        assert [g[1] for g in got] == pytest.approx([w[1] for w in want], rel=1e-6)
    epochs = of(events, EpochEnded)
    assert [v for _, v in tb["epoch/val_loss"]] == pytest.approx(
        [e.metrics["val_loss"] for e in epochs], rel=1e-6
    )
    rates = [v for _, v in tb["learning_rate"]]  # sent by the run's controller
    assert rates and rates == pytest.approx([0.01] * len(rates))
    # tfstudio's TensorFlow-free reader sees the same numbers
    ours = read_scalars(run_dir)
    assert ours["step/loss"].steps == [s.global_step for s in steps]
    assert ours["step/loss"].values == pytest.approx([s.values["loss"] for s in steps], rel=1e-6)
    info = read_run_json(run_dir)
    assert info["status"] == "finished" and info["exit_code"] == 0
    assert info["steps"] == 10 and info["tensorflow"]
    assert info["script"].endswith("train.py")
    assert [s["kind"] for s in info["segments"]] == ["fit"]
    assert info["segments"][0]["end_step"] == 10
    [listed] = list_runs(logdir)
    assert listed.status == "finished" and listed.steps == 10
    assert listed.final_loss == pytest.approx(steps[-1].values["loss"])


def test_the_recorder_is_a_sink_of_the_pump_and_no_channel_is_replaced(
    write_script, tmp_path, monkeypatch
):
    from tfstudio.core.channel import Channel
    from tfstudio.engine.recorder import PumpRecording
    from tfstudio.engine.session import TrainingSession

    viewer = Channel()
    session = TrainingSession(
        write_script(TRAIN), (), viewer, options=RunOptions(logdir=str(tmp_path / "runs"))
    )
    engine = session.monitor.channel
    sinks_while_training: list[list[str]] = []
    start = PumpRecording.__init__

    def noting(self, recorder, pump):  # what the pump's sinks are once recording began
        start(self, recorder, pump)
        sinks_while_training.append([type(s).__name__ for s in pump.sinks])

    monkeypatch.setattr(PumpRecording, "__init__", noting)
    ended = session.run()
    # the live advisor first (its advice joins the batch), then the viewer, then the recorder
    assert sinks_while_training == [["AdviceSink", "ChannelSink", "Recorder"]]
    assert session.monitor.channel is engine and session.channel is viewer
    events = viewer.drain()  # everything reached the viewer through the pump, RunEnded last
    assert events[-1] == ended and len(of(events, StepEnded)) == 10
    [run_dir] = list((tmp_path / "runs").iterdir())
    info = read_run_json(run_dir)
    assert info["status"] == "finished" and info["steps"] == ended.global_step == 10


def test_recording_leaves_the_runtime_for_the_script_to_configure(write_script, tmp_path):
    # A script may configure devices before TensorFlow initialises; the recorder,
    # started before the script, must not initialise it first.
    path = write_script(
        """
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
        )
        print(len(tf.config.list_logical_devices("CPU")))
        """
    )
    code = (
        "import sys; from tests.engine.helpers import run_script, console; "
        "from tfstudio.core.options import RunOptions; "
        f"ended, events = run_script({str(path)!r}, options=RunOptions(logdir={str(tmp_path)!r})); "
        "print(ended.status, console(events, 'stdout').strip())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["finished", "2"], out.stdout + out.stderr[-2000:]
    [run] = list_runs(tmp_path)
    assert read_run_json(run.path)["devices"]


def test_no_recording_when_switched_off(write_script, tmp_path):
    logdir = tmp_path / "runs"
    ended, _ = run_script(write_script(TRAIN), options=RunOptions(logdir=str(logdir), record=False))
    assert ended.status == "finished"
    assert not logdir.exists()


def test_new_kind_of_event_is_one_writer(tmp_path, monkeypatch):
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class WeightHistogram:
        step: int
        edges: tuple
        counts: tuple

    monkeypatch.setitem(
        WRITERS,
        WeightHistogram,
        lambda rec, e: rec.histogram("w/kernel", e.step, e.edges, e.counts),
    )
    rec = Recorder(tmp_path / "run")
    rec.write([WeightHistogram(3, (0.0, 1.0, 2.0), (5, 7)), object()])
    rec.close(RunEnded("finished", 0, 0, 0, 1.0))
    acc = EventAccumulator(str(tmp_path / "run"), size_guidance={"tensors": 0})
    acc.Reload()
    [t] = acc.Tensors("w/kernel")
    assert t.step == 3
    from tfstudio.core.runs import RunReader

    reader = RunReader(tmp_path / "run")
    reader.update()
    [h] = reader.histograms["w/kernel"]
    assert h.edges == (0.0, 1.0, 2.0) and h.counts == (5.0, 7.0)


def test_running_means_of_a_metric_with_no_own_value_are_recorded_and_read_back(tmp_path):
    """AUC has no per-step value (not a mean): the live plot draws Keras's running mean,
    and so does the recorded run, reopened, at the same steps."""
    from tfstudio.core.channel import StepRows
    from tfstudio.core.run_loading import load_folder
    from tfstudio.core.run_store import RunStore

    def fit(index: int, start: int) -> FitStarted:
        return FitStarted(
            index, ModelSummary("m", "Sequential", (), 10, 10), 1, 0, None, 1, start, 0.0
        )

    def step(f: int, g: int, values: dict, running: dict) -> StepEnded:
        return StepEnded(f, g, 0, g, 1, values, running, g * 0.01)

    steps = [
        step(0, g, {"loss": 1.0 / g}, {"loss": 0.9 / g, "auc": 0.5 + g / 100}) for g in range(1, 31)
    ]
    # steps 31-40: the loss has no value of its own either (a hook without it)
    steps += [
        StepEnded(0, g, 0, g, 1, {}, {"loss": 0.9 / g, "auc": 0.5 + g / 100}, g * 0.01)
        for g in range(31, 41)
    ]
    live = RunStore()
    live.add([fit(0, 0)])
    live.add_steps(steps)
    rec = Recorder(tmp_path / "run")
    rec.write([fit(0, 0), *StepRows.of(steps).columns()])
    rec.close(RunEnded("finished", 0, 1, 40, 0.4))
    recorded = load_folder(tmp_path / "run")
    for store in (live, recorded):
        assert set(store.running) == {"auc"}  # the loss's own values beat its running mean
        x, y = store.running["auc"].points()
        assert x.tolist() == list(range(1, 41))
        np.testing.assert_allclose(y, [np.float32(0.5 + g / 100) for g in range(1, 41)])
    assert recorded.steps["loss"].points()[0].tolist() == list(range(1, 31))


KILLED = """
import os, time
from tfstudio.core.events import StepEnded
from tfstudio.engine.recorder import Recorder
rec = Recorder(os.environ["RUN_DIR"], flush_every=0.2)
for i in range(1, 1000000):
    rec.write([StepEnded(0, i, 0, i, 1, {"loss": 1.0 / i}, {"loss": 1.0 / i}, 0.01 * i)])
    if i == 50:
        rec.flush()
        print("flushed", flush=True)
    time.sleep(0.002)
"""


def test_killed_writer_leaves_a_readable_interrupted_run(tmp_path):
    run_dir = tmp_path / "runs" / "killed-20260101-000000"
    env = dict(os.environ, RUN_DIR=str(run_dir))
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "flushed"
        assert list_runs(tmp_path / "runs")[0].status == "running"
        time.sleep(0.5)  # a few more periodic flushes
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    [run] = list_runs(tmp_path / "runs")
    assert run.status == "interrupted"
    loss = read_scalars(run_dir)["step/loss"]
    assert len(loss.steps) >= 50
    assert loss.steps == list(range(1, len(loss.steps) + 1))
    assert loss.values == pytest.approx([1.0 / s for s in loss.steps])


def test_hand_encoded_scalars_are_the_bytes_protobuf_writes(tmp_path):
    from tensorboard.compat.proto import event_pb2

    rec = Recorder(tmp_path / "run")
    real_writer, written = rec._writer, []
    rec._writer = type("Collect", (), {"write": lambda self, b: written.append(b)})()
    try:
        values = {"step/loss": 0.5, "step/ünïcode": -1.25}
        rec.scalars(7, values, 1234.5)
        rec.scalars(2**40, values, 1234.5)
    finally:
        rec._writer = real_writer
        rec.close()
    for data, step, first in ((written[0], 7, True), (written[1], 2**40, False)):
        want = event_pb2.Event(wall_time=1234.5, step=step)
        for tag, v in values.items():
            value = want.summary.value.add(tag=tag)
            if first:  # the scalars plugin's metadata on a tag's first value only
                value.metadata.plugin_data.plugin_name = "scalars"
            value.tensor.dtype = 1
            value.tensor.float_val.append(v)
        assert data == want.SerializeToString()


def test_inspector_samples_are_recorded_as_tensorboard_histograms_and_scalars(
    write_script, tmp_path
):
    from tfstudio.core.events import GradientStats, LayerOutputs, WeightStats

    logdir = tmp_path / "runs"
    options = RunOptions(logdir=str(logdir), sample_every=2)
    ended, events = run_script(write_script(TRAIN), options=options)
    assert ended.status == "finished"
    [run_dir] = list(logdir.iterdir())
    acc = EventAccumulator(str(run_dir), size_guidance={"tensors": 0})
    acc.Reload()
    tags = set(acc.Tags()["tensors"])
    weights = of(events, WeightStats)
    assert weights, "the inspector sampled no weights"
    kernel = next(v for v in weights[-1].variables if v.path.endswith("kernel"))
    assert f"weights/{kernel.path}" in tags  # a histogram, as TensorBoard shows them
    hist = acc.Tensors(f"weights/{kernel.path}")[-1]
    counts = np.asarray(
        hist.tensor_proto.tensor_content
        and np.frombuffer(hist.tensor_proto.tensor_content, dtype="<f8")
    ).reshape(-1, 3)[:, 2]
    assert counts.sum() == sum(kernel.hist) == 3  # a 3x1 kernel
    norms = _tb_scalars(run_dir)[f"weights/{kernel.path}/norm"]
    assert norms[-1] == (weights[-1].step, pytest.approx(kernel.norm, rel=1e-6))
    assert of(events, GradientStats) and "gradients/global_norm" in tags
    assert of(events, LayerOutputs) and any(t.startswith("outputs/") for t in tags)


def test_the_record_file_is_byte_for_byte_what_tensorflows_writer_writes(tmp_path):
    import tensorflow as tf

    from tfstudio.core.eventfile import RecordFileWriter

    records = [b"", b"x", bytes(range(256)) * 3, b"step" * 1000]
    # a block of one length is framed with numpy (its CRCs from the bytes that differ)
    block = [bytes([i, 7, (i * 37) % 256]) + b"loss" + bytes([255 - i]) for i in range(40)]
    ours = RecordFileWriter(tmp_path / "ours")
    ours.write(records[0])
    ours.write_many(records[1:])
    ours.write_many(block)
    ours.close()
    records += block
    with tf.io.TFRecordWriter(str(tmp_path / "theirs")) as theirs:
        for r in records:
            theirs.write(r)
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "theirs").read_bytes()
    read = [r.numpy() for r in tf.data.TFRecordDataset(str(tmp_path / "ours"))]
    assert read == records


def test_histogram_records_are_byte_for_byte_what_protobuf_makes_of_the_event():
    import struct

    from tensorboard.compat.proto import event_pb2

    from tfstudio.engine.recorder import _edges, histogram_event

    rng = np.random.default_rng(0)
    for bins, step, tag in [(1, 0, "w"), (30, 7, "weights/dense/kernel"), (200, 2**40, "o/ü")]:
        lo, hi = sorted(rng.normal(size=2))
        counts = rng.integers(0, 1000, bins).tolist()
        edges = [lo + (hi - lo) * i / bins for i in range(bins + 1)]
        assert _edges(lo, hi, bins).tolist() == edges
        event = event_pb2.Event(wall_time=1.7e9 + 0.25, step=step)
        value = event.summary.value.add(tag=tag)
        value.metadata.plugin_data.plugin_name = "histograms"
        value.tensor.dtype = 2  # DT_DOUBLE
        value.tensor.tensor_shape.dim.add(size=bins)
        value.tensor.tensor_shape.dim.add(size=3)
        flat = [x for row in zip(edges[:-1], edges[1:], counts, strict=True) for x in row]
        value.tensor.tensor_content = struct.pack(f"<{len(flat)}d", *flat)
        ours = histogram_event(tag, step, _edges(lo, hi, bins), counts, 1.7e9 + 0.25)
        assert ours == event.SerializeToString()
