"""TensorFlow's memory figures from the worker: on the CPU, one clean "not available"."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.engine.helpers import console, of, run_script
from tfstudio.core.channel import Channel
from tfstudio.core.events import DeviceMemory, MonitorError, RunEnded, StepEnded
from tfstudio.engine.monitor import RunMonitor
from tfstudio.engine.probes import memory
from tfstudio.engine.probes.memory import NOT_AVAILABLE, TFMemorySampler

pytestmark = pytest.mark.tf


def test_cpu_run_reports_not_available_once(write_script):
    path = write_script(
        """
        import numpy as np, keras
        x = np.zeros((64, 3), "float32"); y = np.zeros((64, 1), "float32")
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        model.fit(x, y, batch_size=16, epochs=2, verbose=0)
        """
    )
    ended, events = run_script(path)
    assert ended.status == "finished", console(events)
    reports = of(events, DeviceMemory)
    assert len(reports) == 1, reports
    (report,) = reports
    assert not report.available and report.devices == () and report.current == ()
    assert report.note == NOT_AVAILABLE
    assert not of(events, MonitorError)
    assert events.index(report) < events.index(of(events, RunEnded)[0])
    assert len(of(events, StepEnded)) == 8  # training unaffected


def test_sampler_never_initialises_tensorflow():
    """Entering and leaving the sampler before any TF op leaves the runtime unconfigured."""
    code = textwrap.dedent(
        """
        import tensorflow as tf
        from tensorflow.python.eager import context
        from tfstudio.core.channel import Channel
        from tfstudio.engine.monitor import RunMonitor
        from tfstudio.engine.probes.memory import TFMemorySampler
        channel = Channel()
        with TFMemorySampler(RunMonitor(channel), interval=0.05) as sampler:
            import time; time.sleep(0.3)
        assert not context.context()._initialized, "the sampler initialised TensorFlow"
        assert channel.drain() == [] and sampler.samples == 0
        tf.config.threading.set_intra_op_parallelism_threads(1)  # still allowed: not initialised
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_sampler_failure_is_reported_once_and_stops(monkeypatch):
    def broken():
        raise RuntimeError("context is gone")

    monkeypatch.setattr(memory, "_devices_initialised", broken)
    channel = Channel()
    with TFMemorySampler(RunMonitor(channel), interval=0.01) as sampler:
        import time

        time.sleep(0.1)
    events = channel.drain()
    errors = of(events, MonitorError)
    assert len(errors) == 1 and errors[0].where == "GPU memory sampler"
    assert "context is gone" in errors[0].message
    assert sampler.samples == 0 and not of(events, DeviceMemory)
