"""The NVML reader against a fake NVML module (the hardware boundary), and for real."""

from __future__ import annotations

import os

import pytest

from tests.fake_nvml import GB, H100, H100_MIG, H100_TOTAL, T4, FakeNvml
from tfstudio.core import gpu as gpu_module
from tfstudio.core.gpu import GpuReader, run_utilization
from tfstudio.core.system import PeakTracker


def test_reads_names_utilisation_memory_and_extras():
    nvml = FakeNvml([H100, T4])
    reader = GpuReader(nvml)
    first, second = reader.read(pids=(100, 101))
    assert (first.index, first.name) == (0, "NVIDIA H100 80GB HBM3")
    assert first.utilization == 87.0
    assert (first.memory_used, first.memory_total) == (30 * GB, H100_TOTAL)
    assert first.process_memory == 22 * GB  # the run's process and its child, not pid 555
    assert first.temperature == 61.0
    assert first.power == pytest.approx(310.5) and first.power_limit == pytest.approx(700.0)
    assert (second.name, second.utilization, second.process_memory) == ("Tesla T4", 3.0, 0)
    assert second.temperature is None and second.power is None  # NOT_SUPPORTED: just absent
    assert reader.note is None and reader.available
    assert nvml.inits == 1
    reader.read(pids=(100,))
    assert nvml.inits == 1  # started once, not per read
    reader.close()
    assert nvml.shutdowns == 1


def test_a_gpu_in_mig_mode_is_read_as_its_mig_devices():
    # A shared H100 in MIG mode beside a whole T4: the run (pids 100, 101) holds 11 GB
    # on the 3g.40gb device; NVML gives no utilisation for MIG devices.
    reader = GpuReader(FakeNvml([H100_MIG, T4]))
    big, small, whole = reader.read(pids=(100, 101))
    assert reader.note is None and reader.available  # before, NOT_SUPPORTED ended all figures
    assert (big.label, big.name) == ("GPU 0 MIG 0", "NVIDIA H100 80GB HBM3 MIG 3g.40gb")
    assert (big.memory_used, big.memory_total, big.process_memory) == (12 * GB, 40 * GB, 11 * GB)
    assert big.utilization is None
    assert (big.temperature, big.power) == (48.0, 180.0)  # the physical GPU's
    assert (small.label, small.mig, small.process_memory) == ("GPU 0 MIG 2", 2, 0)  # slot 1 empty
    assert (whole.label, whole.mig, whole.utilization) == ("GPU 1", None, 3.0)
    assert len({big.key, small.key, whole.key}) == 3
    # The busy figure is the GPU the run holds memory on: a MIG device, which has none.
    assert run_utilization((big, small, whole)) is None
    peaks = PeakTracker()
    peaks.add_gpus((big, small, whole))
    assert peaks.summary() == "peak memory: host --, GPU:0 MIG 0 11.0 GiB"


def test_a_gpu_in_mig_mode_with_no_device_of_ours_is_read_whole():
    # MIG on, but no MIG device this process may see: the GPU itself, without utilisation.
    (sample,) = GpuReader(FakeNvml([dict(H100_MIG, migs=[None, None])])).read(pids=(100,))
    assert (sample.label, sample.utilization, sample.memory_used) == ("GPU 0", None, 13 * GB)


def test_a_gpu_that_gives_no_utilisation_keeps_its_other_figures():
    # Some virtual GPUs answer NOT_SUPPORTED for utilisation and nothing else.
    reader = GpuReader(FakeNvml([{k: v for k, v in H100.items() if k != "util"}]))
    (sample,) = reader.read(pids=(100,))
    assert sample.utilization is None and sample.process_memory == 20 * GB
    assert reader.note is None and reader.read(pids=(100,))  # read again: not given up


def test_a_gpu_without_mig_mode_is_read_whole():
    # An H100 with MIG off, answering as a real one did (mode (0, 0), no MIG device
    # slots), and a T4 without MIG (NOT_SUPPORTED).
    (h100, t4) = GpuReader(FakeNvml([dict(H100, mig_mode=0, migs=[]), T4])).read()
    assert (h100.label, h100.mig, h100.utilization) == ("GPU 0", None, 87.0)
    assert (t4.label, t4.mig) == ("GPU 1", None)


def test_without_pids_process_memory_is_unknown():
    (sample,) = GpuReader(FakeNvml([H100])).read()
    assert sample.process_memory is None


def test_per_process_memory_not_reported_is_unknown():
    windows = dict(H100, procs=[(100, None)])
    (sample,) = GpuReader(FakeNvml([windows])).read(pids=(100,))
    assert sample.process_memory is None


def test_inside_a_container_the_hosts_pids_give_unknown_not_zero():
    # The driver lists the host's pids; in a container without --pid=host none exists.
    host = [(4_000_001, 20 * GB), (4_000_002, 2 * GB)]
    reader = GpuReader(FakeNvml([dict(H100, procs=host)]))
    (sample,) = reader.read(pids=(os.getpid(),))
    assert sample.process_memory is None  # not "run 0 B" while the run holds gigabytes
    assert sample.utilization == 87.0 and sample.memory_used == 30 * GB  # the rest is read
    assert reader.note == gpu_module.FOREIGN_PIDS_NOTE and "--pid=host" in reader.note
    # A pid that exists here (another user's process, say) means the list is ours to read.
    shared = GpuReader(FakeNvml([dict(H100, procs=[(os.getppid(), 2 * GB), *host])]))
    (sample,) = shared.read(pids=(os.getpid(),))
    assert sample.process_memory == 0 and shared.note is None


def test_nvml_error_mid_run_gives_one_note_then_nothing():
    nvml = FakeNvml([H100])
    reader = GpuReader(nvml)
    assert len(reader.read((100,))) == 1
    nvml.fail_utilization_with = 15  # NVML_ERROR_GPU_IS_LOST
    assert reader.read((100,)) == ()
    note = reader.note
    assert note.startswith("GPU figures stopped: NVML failed") and "15" in note
    nvml.fail_utilization_with = None
    assert reader.read((100,)) == ()  # gave up for good: no flapping, no second note
    assert reader.note == note
    assert nvml.shutdowns == 1


def test_no_gpu_at_all_is_quiet():
    reader = GpuReader(FakeNvml([]))
    assert reader.read((1,)) == ()
    assert reader.note is None and not reader.available


@pytest.mark.parametrize("code", [9, 12])  # DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND
def test_no_driver_is_quiet(code):
    reader = GpuReader(FakeNvml([H100], init_error=code))
    assert reader.read() == () and reader.note is None


def test_other_init_failure_is_one_note():
    nvml = FakeNvml([H100], init_error=18)  # LIB_RM_VERSION_MISMATCH
    reader = GpuReader(nvml)
    assert reader.read() == ()
    assert reader.note.startswith("GPU figures are not shown: NVML did not start")
    assert reader.read() == () and nvml.inits == 1


def test_missing_library_note_only_where_a_driver_is(monkeypatch):
    def missing():
        raise ImportError("No module named 'pynvml'")

    monkeypatch.setattr(gpu_module, "_load_pynvml", missing)
    monkeypatch.setattr(gpu_module, "nvidia_driver_present", lambda: False)
    quiet = GpuReader()
    assert quiet.read() == () and quiet.note is None  # CPU-only machine
    monkeypatch.setattr(gpu_module, "nvidia_driver_present", lambda: True)
    noted = GpuReader()
    assert noted.read() == ()
    assert "nvidia-ml-py is not installed" in noted.note and "tfstudio[gpu]" in noted.note


def test_real_nvml_on_this_machine_never_raises():
    """Whatever is installed here (pynvml or not, driver or not), reading is safe."""
    reader = GpuReader()
    samples = reader.read((1,))
    for s in samples:
        assert s.memory_total > 0 and s.name
    if not gpu_module.nvidia_driver_present():
        assert samples == () and reader.note is None
    reader.close()


def test_idle_gpu_watch_fires_once_after_sustained_idle_training():
    from tfstudio.core.gpu import IdleGpuWatch

    watch = IdleGpuWatch(threshold=30, sustain_s=10)
    fired = [t for t in range(0, 60) if watch.feed(t, 5.0, training=True)]
    assert fired == [10]  # idle from t=0, notice at t=10, never again
    busy = IdleGpuWatch(threshold=30, sustain_s=10)
    assert not any(busy.feed(t, 5.0 if t % 8 else 90.0, True) for t in range(60))  # bursts reset
    paused = IdleGpuWatch(threshold=30, sustain_s=10)
    assert not any(paused.feed(t, 0.0, training=t % 9 != 0) for t in range(60))
    unknown = IdleGpuWatch(threshold=30, sustain_s=10)
    assert not any(unknown.feed(t, None, True) for t in range(60))
    watch.reset()
    assert [t for t in range(100, 130) if watch.feed(t, 0.0, True)] == [110]
