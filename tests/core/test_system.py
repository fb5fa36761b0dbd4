"""psutil figures of a real process tree, peaks, and the headless ResourceWatch."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from tfstudio.core.events import DeviceMemory, RunDevices, RunEnded, RunStarted, SystemSampled
from tfstudio.core.gpu import GpuReader, GpuSample
from tfstudio.core.system import (
    PeakTracker,
    ProcessSampler,
    ResourceWatch,
    device_line,
    format_bytes,
    peak_rss_of,
)

MB = 1_000_000

# A parent that holds 60 MB and keeps one core busy, with a child holding 120 MB.
TREE = textwrap.dedent(
    """
    import subprocess, sys, time
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; b = b'x' * (120 * 10**6); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    child.stdout.readline()
    held = b'y' * (60 * 10**6)
    print('ready', flush=True)
    end = time.time() + 60
    while time.time() < end:
        child.poll()  # spins, and reaps the child at once when the test kills it
    """
)


@pytest.fixture
def tree():
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        import psutil

        try:
            kids = psutil.Process(proc.pid).children(recursive=True)
        except psutil.Error:
            kids = []
        for kid in kids:
            kid.kill()
        psutil.wait_procs(kids, timeout=10)  # the parent, still alive, reaps its child at once
        proc.kill()
        proc.wait(10)
        proc.stdout.close()


def test_process_tree_cpu_and_memory(tree):
    sampler = ProcessSampler(tree.pid)
    first = sampler.sample()
    assert first.alive and first.pid == tree.pid
    time.sleep(0.6)
    s = sampler.sample()
    assert s.children == 1
    assert s.process_rss >= 180 * MB  # 60 MB + 120 MB held, plus two interpreters
    assert s.process_cpu > 5  # the parent spins (a shared machine gives it less than a core)
    assert 0 <= s.machine_cpu <= 100
    assert 0 < s.machine_memory_used < s.machine_memory_total
    assert s.cpu_count >= 1
    assert len(sampler.pids()) == 2 and tree.pid in sampler.pids()

    alone = ProcessSampler(tree.pid, include_children=False)
    own = alone.sample()
    assert own.children == 0
    assert 60 * MB <= own.process_rss < s.process_rss - 100 * MB

    peaks = PeakTracker()
    peaks.add_sample(s)
    assert peaks.host_rss >= 180 * MB
    assert peak_rss_of(tree.pid) >= 60 * MB  # Linux VmHWM of the parent alone

    tree.kill()
    tree.wait(10)
    gone = sampler.sample()
    assert not gone.alive and gone.process_rss is None and gone.process_cpu is None
    assert gone.machine_memory_total == s.machine_memory_total


def test_pid_zero_samples_this_process():
    import os

    s = ProcessSampler(0).sample()
    assert s.pid == os.getpid() and s.alive and s.process_rss > 10 * MB


def test_peak_tracker_summary_with_and_without_gpus():
    peaks = PeakTracker()
    assert peaks.summary() == "peak memory: host --"
    peaks.host_rss = 1_320_702_444  # 1.23 GiB
    assert peaks.summary() == "peak memory: host 1.23 GiB"
    peaks.add_device_memory(DeviceMemory(1.0, ("GPU:0",), (2 << 30,), (3_650_722_202,)))
    peaks.add_device_memory(DeviceMemory(2.0, ("GPU:0",), (1 << 30,), (3_100_000_000,)))
    peaks.add_gpus([GpuSample(1, "B", 5.0, 10, 100, process_memory=512 << 20)])
    assert peaks.summary() == (
        "peak memory: host 1.23 GiB, GPU:0 3.40 GiB (TensorFlow peak), GPU:1 512 MiB"
    )


def test_format_bytes_and_device_line():
    assert format_bytes(None) == "--"
    assert format_bytes(999) == "999 B"
    assert format_bytes(12_345) == "12.1 KiB"
    assert format_bytes(85_520_809_984) == "79.6 GiB"  # an H100 80GB's total, as NVML gives it
    assert format_bytes(300 << 20) == "300 MiB"
    assert device_line(RunDevices(("GPU 0: NVIDIA H100",))) == "device: GPU 0: NVIDIA H100"
    assert device_line(RunDevices(("CPU",))) == "device: CPU"


class _NoNvml:
    """An NVML module whose library is missing, as on a CPU-only machine."""

    class NVMLError(Exception):
        def __init__(self, value):
            super().__init__("NVML Shared Library Not Found")
            self.value = value

    def nvmlInit(self):
        raise self.NVMLError(12)


def test_resource_watch_follows_a_run(tree):
    with ResourceWatch(interval=0.05, gpu_reader=GpuReader(_NoNvml())) as watch:
        assert watch.ingest(RunStarted("/x/train.py", ("train.py",), "/x", 0.0, tree.pid)) is None
        assert watch.ingest(RunDevices(("CPU",))) == "device: CPU"
        time.sleep(0.3)
        watch.ingest(RunEnded("finished", 0, 1, 10, 0.3))
        assert watch._thread is None  # sampling stopped at RunEnded
        summary = watch.summary()
    assert summary.startswith("peak memory: host ")
    assert watch.peaks.host_rss >= 180 * MB
    assert "GPU" not in summary and watch.gpu_reader.note is None  # CPU-only: quietly nothing


def test_resource_watch_gpu_peaks_from_nvml_and_tensorflow(tree):
    from tests.fake_nvml import GB, H100, FakeNvml

    nvml = FakeNvml([dict(H100, procs=[(tree.pid, 3 * GB)]), dict(H100, procs=[])])
    with ResourceWatch(interval=0.05, gpu_reader=GpuReader(nvml)) as watch:
        watch.ingest(RunStarted("/x/train.py", ("train.py",), "/x", 0.0, tree.pid))
        assert watch.ingest(RunDevices(("GPU 0: NVIDIA H100 80GB HBM3",))) == (
            "device: GPU 0: NVIDIA H100 80GB HBM3"
        )
        watch.ingest(DeviceMemory(1.0, ("GPU:0",), (2 * GB,), (2_684_354_560,)))
        time.sleep(0.2)
        watch.ingest(RunEnded("finished", 0, 1, 10, 0.3))
    summary = watch.summary()
    assert summary.startswith("peak memory: host ")
    assert summary.endswith(", GPU:0 3.00 GiB (TensorFlow peak 2.50 GiB)")  # GPU 1: unused
    assert watch.peaks.gpu_process == {"GPU:0": 3 * GB, "GPU:1": 0}
    assert nvml.shutdowns == 1  # close() let NVML go


def test_resource_watch_takes_the_workers_samples_and_samples_nothing_itself(tree, monkeypatch):
    """The worker samples its run once a second (SystemSampled): the headless watch takes
    its peaks from those events and never samples the worker from outside as well."""
    from tests.fake_nvml import GB, H100, FakeNvml
    from tfstudio.core import system

    made = []

    class Counted(system.ProcessSampler):
        def __init__(self, *args, **kwargs):
            made.append(args)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(system, "ProcessSampler", Counted)
    nvml = FakeNvml([dict(H100, procs=[])])
    with ResourceWatch(interval=0.05, gpu_reader=GpuReader(nvml)) as watch:
        watch.ingest(RunStarted("/x/train.py", ("train.py",), "/x", 0.0, tree.pid))
        for t, rss, held in ((1.0, 100 * MB, 1 * GB), (2.0, 300 * MB, 3 * GB), (3.0, 200 * MB, 0)):
            values = {"process/rss_bytes": float(rss), "gpu0/process_memory_bytes": float(held)}
            values["gpu1_mig2/process_memory_bytes"] = float(held // 2)
            watch.ingest(SystemSampled(t, int(t), values))
        time.sleep(0.4)  # (eight intervals: a watch sampling from outside would have)
        watch.ingest(RunEnded("finished", 0, 1, 10, 3.0))
        summary = watch.summary()
    assert made == [] and watch.outside_samples == 0 and watch.worker_samples == 3
    assert nvml.inits == 0  # NVML was not even opened here
    # the worker's figures, and the worker's own high-water mark (read, not sampled)
    assert watch.peaks.host_rss >= 300 * MB
    assert watch.peaks.gpu_process == {"GPU:0": 3 * GB, "GPU:1 MIG 2": 3 * GB // 2}
    assert summary.startswith("peak memory: host ") and "GPU:0 3.00 GiB" in summary
