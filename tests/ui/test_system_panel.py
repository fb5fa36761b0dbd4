"""System view: real psutil figures of this process, fake GPUs at the NVML boundary."""

from __future__ import annotations

import os
import re
import time

import pytest

from tests.fake_nvml import GB, H100, H100_MIG, FakeNvml
from tfstudio.core.events import DeviceMemory, RunDevices
from tfstudio.core.gpu import GpuReader, IdleGpuWatch

SHOTS = os.environ.get("TFSTUDIO_TEST_SHOTS", "")  # a folder to keep the screenshots in


@pytest.fixture(autouse=True)
def _one_sample_a_run(window):
    """The sampler's thread takes a run's first sample at once and the next an hour on: a
    test adds the samples it counts with sample_now, after the first, which a run's start
    waits for here (on its own it comes a moment later: a test's own samples could come
    before it)."""
    panel = window.system
    panel.interval_s = 3600.0
    start = panel.start_run

    def start_run(pid):
        start(pid)
        deadline = time.monotonic() + 5.0
        while not panel._sampled and time.monotonic() < deadline:  # (no events handled here)
            time.sleep(0.005)
        panel._take_sampled()

    panel.start_run = start_run


def _first_sample(qtbot, panel):
    qtbot.waitUntil(lambda: len(panel.samples) == 1, timeout=3000)


def _fake_gpu(util=87):
    """One H100 where this process (pid 0 samples the window's own) holds 22 GB."""
    dev = dict(H100, util=util, procs=[(os.getpid(), 22 * GB), (999_999, 8 * GB)])
    return FakeNvml([dev])


def _grab(widget, name):
    """Screenshot to look at (in $TFSTUDIO_TEST_SHOTS when set); checks it is not blank."""
    from PySide6.QtWidgets import QApplication

    widget.window().bridge.flush()
    QApplication.processEvents()  # let the layout give the figures their height
    image = widget.grab().toImage()
    assert image.width() > 200 and image.height() > 300
    colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, 300, 7)}
    assert len(colours) > 5, "the view rendered blank"
    if SHOTS:
        image.save(os.path.join(SHOTS, name))


def test_cpu_only_run_shows_process_and_machine_and_no_gpu(window, run):
    panel = window.system
    panel.gpu_reader = GpuReader(FakeNvml([]))  # a CPU-only machine
    run.started().fit(epochs=1, steps_per_epoch=50)
    run.emit(RunDevices(("CPU",)))
    run.steps(30, dt=0.02).frame()
    panel.sample_now()
    run.emit(DeviceMemory(1.0, (), (), (), "not available: TensorFlow computes on the CPU"))
    run.steps(20, dt=0.02, start=30).fit_end().frame()
    panel.sample_now()  # the 1 s tick: curves are redrawn with each sample during a run
    text = panel.summary()
    assert "device CPU" in text
    assert f"worker pid {os.getpid()}" not in text and "this window's process" in text
    assert "run CPU" in text and re.search(r"RSS [\d.]+ [MG]iB", text)  # GiB once TF is loaded
    assert "machine CPU" in text and "cores" in text
    assert "GPU" not in text.replace("GPU memory not available", "")
    assert "GPU memory not available" in text
    assert not panel.gpu_util_curves and not panel.note.isVisible()
    assert len(panel.samples) >= 2 and panel.samples[-1].process_rss > 10e6
    x, y = panel.step_curve.getData()
    # 20 ms per step, from the step events: one point per batch of arrivals
    assert len(x) == 2 and max(abs(y - 20.0)) < 1e-6
    assert window.status.device_label.text() == "CPU"
    _grab(window.system, "system_cpu_only.png")


def test_gpu_run_shows_gpu_figures_and_tensorflow_memory(window, run, qtbot):
    panel = window.system
    panel.gpu_reader = GpuReader(_fake_gpu())
    run.started().frame()
    _first_sample(qtbot, panel)
    run.fit(epochs=1, steps_per_epoch=100)
    run.emit(RunDevices(("GPU 0: NVIDIA H100 80GB HBM3",)))
    run.emit(DeviceMemory(0.5, ("GPU:0",), (28 * GB,), (29 * GB,)))
    run.steps(40, dt=0.01).frame()
    panel.sample_now()
    text = panel.summary()
    assert "GPU 0 NVIDIA H100 80GB HBM3" in text
    assert "util 87%" in text and "memory 30.0 GiB / 79.6 GiB" in text
    assert "run 22.0 GiB" in text  # only this run's process, not pid 999999
    assert "61 °C" in text and "310 / 700 W" in text
    assert "TensorFlow GPU:0: 28.0 GiB in use, peak 29.0 GiB" in text
    _, util = panel.gpu_util_curves[(0, -1)].getData()
    assert list(util[-2:]) == [87.0, 87.0]
    _, run_mem = panel.gpu_mem_curves[(0, -1)].getData()
    assert run_mem[-1] == 22.0
    _, tf_mem = panel.tf_mem_curves["GPU:0"].getData()
    assert list(tf_mem) == [28.0]
    status = window.status.device_label.text()
    assert status == "GPU 0: NVIDIA H100 80GB HBM3 · 28.0 GiB"
    assert "peak 29.0 GiB" in window.status.device_label.toolTip()
    _grab(window.system, "system_gpu.png")


def test_a_mig_device_shows_its_memory_and_says_utilisation_is_not_given(window, run):
    # The run holds memory on the 3g.40gb MIG device of a shared H100 (this process)
    mig = dict(H100_MIG["migs"][0], procs=[(os.getpid(), 11 * GB), (999_999, 1 * GB)])
    panel = window.system
    panel.gpu_reader = GpuReader(FakeNvml([dict(H100_MIG, migs=[mig, None, None])]))
    panel.idle_watch = IdleGpuWatch(threshold=30, sustain_s=0.0)
    run.started().fit(epochs=1, steps_per_epoch=100)
    run.emit(RunDevices(("GPU 0: NVIDIA H100 80GB HBM3 MIG 3g.40gb",)))
    run.steps(40, dt=0.01).frame()
    panel.sample_now()
    panel.sample_now()
    text = panel.summary()
    assert "GPU 0 MIG 0 NVIDIA H100 80GB HBM3 MIG 3g.40gb" in text
    assert "util n/a (MIG) · memory 12.0 GiB / 40.0 GiB · run 11.0 GiB" in text
    assert "48 °C" in text  # the physical GPU's
    assert (0, 0) not in panel.gpu_util_curves  # no utilisation line of NaNs in the key
    _, run_mem = panel.gpu_mem_curves[(0, 0)].getData()
    assert list(run_mem[-2:]) == [11.0, 11.0]
    assert not panel.notice_text  # an unknown utilisation never reads as an idle GPU
    assert panel.note.text() == ""  # and no NVML failure is said
    _grab(window.system, "system_mig.png")


def test_in_a_container_the_runs_gpu_memory_is_left_out_and_said_why(window, run):
    # NVML lists only the host's pids (none exists here): the run's memory is unknown
    panel = window.system
    panel.gpu_reader = GpuReader(FakeNvml([dict(H100, procs=[(4_000_001, 20 * GB)])]))
    run.started().fit(epochs=1, steps_per_epoch=100)
    run.steps(40, dt=0.01).frame()
    panel.sample_now()
    text = panel.summary()
    assert "util 87% · memory 30.0 GiB / 79.6 GiB · 61" in text and "run 0" not in text
    assert panel.note.text().startswith("Run's GPU memory unknown") and panel.note.isVisible()
    assert (0, -1) in panel.gpu_util_curves
    assert (0, -1) not in panel.gpu_mem_curves  # no "GPU 0 (run)" line without a figure
    _grab(window.system, "system_container.png")


def test_idle_gpu_during_training_gives_one_notice_with_a_link(window, run, qtbot):
    panel = window.system
    panel.gpu_reader = GpuReader(_fake_gpu(util=4))
    panel.idle_watch = IdleGpuWatch(threshold=30, sustain_s=0.0)
    run.started().frame()
    panel.sample_now()  # not in a fit yet: no notice
    assert not panel.notice_text
    run.fit(epochs=1, steps_per_epoch=100).steps(10).frame()
    with qtbot.waitSignal(panel.notice_shown, timeout=1000) as signal:
        panel.sample_now()
    assert "input pipeline" in signal.args[0] and "prefetch" in signal.args[0]
    assert "input_pipeline.md" in signal.args[0] or "data_performance" in signal.args[0]
    assert panel.notice.isVisible() and panel.notice.openExternalLinks()
    with qtbot.assertNotEmitted(panel.notice_shown):
        panel.sample_now()
    _grab(window.system, "system_idle_notice.png")


def test_figures_are_kept_after_the_run_and_cleared_by_the_next(window, run, qtbot):
    panel = window.system
    panel.interval_s = 1.0  # a sample a second, as in the window
    panel.gpu_reader = GpuReader(_fake_gpu())
    run.started().fit(epochs=1, steps_per_epoch=10).frame()
    assert panel.is_sampling()
    qtbot.waitUntil(lambda: len(panel.samples) >= 2, timeout=5000)  # the 1 s QTimer samples
    run.steps(10).fit_end().ended().frame()
    assert not panel.is_sampling()
    kept = len(panel.samples)
    assert "util 87%" in panel.summary()
    qtbot.wait(1200)
    assert len(panel.samples) == kept  # no sampling once the run ended
    run.started().frame()
    _first_sample(qtbot, panel)  # the new run's, taken at once on the sampler's thread
    assert panel.gpu_util_curves
    assert "peak" in panel.summary()


def test_a_stuck_gpu_driver_never_holds_the_window(window, run, qtbot):
    # NVML calls can hang with a driver in trouble: the window samples off its GUI thread,
    # keeps answering, and shows the figures once the driver answers again
    import threading

    panel = window.system
    del panel.start_run  # the window's own: it waits for no sample
    nvml = _fake_gpu()
    nvml.hang = threading.Event()
    threading.Timer(3.0, nvml.hang.set).start()  # the driver answers 3 s on
    panel.gpu_reader = GpuReader(nvml)
    started = time.monotonic()
    run.started().fit(epochs=1, steps_per_epoch=100)
    run.steps(20, dt=0.01).frame()
    qtbot.wait(300)  # the GUI thread turns while the sampler's thread waits on the driver
    assert time.monotonic() - started < 2.0, "the window waited on the driver"
    assert panel.samples == [] and window.status.step_label.text() == "step 20/100"
    _first_sample(qtbot, panel)
    assert "util 87%" in panel.summary()


def test_broken_nvml_gives_one_quiet_note(window, run):
    panel = window.system
    nvml = _fake_gpu()
    panel.gpu_reader = GpuReader(nvml)
    run.started().frame()
    nvml.fail_utilization_with = 15  # GPU is lost
    panel.sample_now()
    panel.sample_now()
    assert panel.note.isVisible()
    assert panel.note.text().startswith("GPU figures stopped: NVML failed")
    assert panel.samples[-1].alive  # CPU figures go on


def test_view_menu_toggles_the_system_dock(window):
    dock = window.findChild(type(window._console_dock), "systemDock")
    assert dock is not None and dock.widget() is window.system
    action = dock.toggleViewAction()
    assert action in window.menuBar().actions()[2].menu().actions()
    assert dock.isVisible()
    action.trigger()
    assert not dock.isVisible()
    action.trigger()
    assert dock.isVisible()


def test_hidden_dock_keeps_sampling_and_draws_when_shown(window, run, qtbot):
    panel = window.system
    panel.gpu_reader = GpuReader(_fake_gpu())
    window._system_dock.toggleViewAction().trigger()  # hide
    assert not panel.isVisible()
    run.started().frame()
    _first_sample(qtbot, panel)
    panel.sample_now()
    assert len(panel.samples) == 2
    assert panel.rss_curve.getData()[0] is None  # nothing drawn while hidden
    window._system_dock.toggleViewAction().trigger()  # show
    x, _ = panel.rss_curve.getData()
    assert len(x) == 2


def _step_series(panel):
    import numpy as np

    x, y = panel.steps.view()
    return np.asarray(x), np.asarray(y)


def test_a_pause_is_a_gap_in_step_time_not_a_slow_step(window, run):
    """Paused for 100 s between two stretches at 10 ms a step: no point near 100 s."""
    import numpy as np

    from tfstudio.core.events import CheckpointRestored, RunState

    panel = window.system
    panel.gpu_reader = GpuReader(FakeNvml([]))
    run.started().fit(epochs=1, steps_per_epoch=10_000)
    run.steps(50, dt=0.01).frame()
    run.steps(50, dt=0.01, start=50).frame()
    run.emit(RunState("paused", 100)).frame()
    run.time += 100.0
    run.emit(CheckpointRestored("/tmp/ckpt/ckpt-1", 60, 60), RunState("running", 60)).frame()
    run.global_step = 60
    run.steps(1, dt=0.0, start=60).frame()  # the step after Resume carries the pause
    run.steps(50, dt=0.01, start=61).frame()
    x, y = _step_series(panel)
    finite = y[np.isfinite(y)]
    assert finite.max() < 20.0, f"a point carries the pause: {finite.max():.0f} ms"
    assert np.isnan(y).sum() == 1  # one break, where the pause was
    gap = int(np.flatnonzero(np.isnan(y))[0])
    assert x[gap - 1] < 1.01 < x[gap + 1]  # between the last step before and the first after
    assert len(panel.pauses) == 1
    start, end = panel.pauses[0]
    assert abs(start - 1.0) < 1e-9 and abs(end - 101.0) < 1e-9
    panel.sample_now()
    assert len(panel.pause_marks) == 1
    lo, hi = panel.pause_marks[0].getRegion()
    assert hi - lo > 99.0
    _grab(window.system, "system_pause_gap.png")


def test_a_stretch_without_steps_is_a_gap_not_a_slow_step(window, run):
    """A loop that evaluates for 8 s between two stretches of 10 ms steps (no event marks it)."""
    import numpy as np

    panel = window.system
    panel.gpu_reader = GpuReader(FakeNvml([]))
    run.started().fit(epochs=1, steps_per_epoch=None)
    for i in range(5):
        run.steps(20, dt=0.01, start=20 * i).frame()
    run.time += 8.0  # evaluating, saving: no steps
    run.steps(20, dt=0.01, start=100).frame()  # the gap arrives inside one batch of steps
    x, y = _step_series(panel)
    finite = y[np.isfinite(y)]
    assert finite.max() < 20.0 and np.isnan(y).sum() == 1
    assert abs(finite[-1] - 10.0) < 1e-6  # the steps after the gap are measured on their own
    assert not panel.pauses  # not a pause: only a gap


def test_an_epoch_boundary_breaks_the_line_and_the_series_never_ends_in_a_gap(window, run):
    import numpy as np

    panel = window.system
    run.started().fit(epochs=2, steps_per_epoch=20)
    run.steps(10, dt=0.01).frame()
    run.steps(10, dt=0.01, start=10).epoch_end(0, loss=0.1).frame()
    x, y = _step_series(panel)
    assert np.isfinite(y).all()
    run.time += 3.0  # validation
    run.steps(10, epoch=1, dt=0.01).frame()
    run.steps(10, epoch=1, dt=0.01, start=10).fit_end().frame()
    x, y = _step_series(panel)
    assert np.isnan(y).sum() == 1 and np.isfinite(y[-1])
    assert np.nanmax(y) < 20.0
    run.fit(epochs=1, steps_per_epoch=20)
    run.time += 0.03  # a quick boundary: no gap worth a break (short epochs stay one line)
    run.steps(10, dt=0.01).frame()
    run.steps(10, dt=0.01, start=10).frame()
    x, y = _step_series(panel)
    assert np.isnan(y).sum() == 1 and np.nanmax(y) < 20.0


def test_the_time_axis_follows_the_samples_while_no_step_comes(window, run):
    """Paused (or evaluating) after a second of steps: the CPU and memory lines go on, and
    the shared time axis shows them, not only the time the steps cover."""
    panel = window.system
    panel.gpu_reader = GpuReader(FakeNvml([]))
    run.started().fit(epochs=1, steps_per_epoch=10_000)
    run.steps(50, dt=0.02).frame()  # steps over the run's first second
    sample = panel.sampler.sample()
    for t in (0.5, 1.0, 2.0, 4.0, 8.0):  # the sampler's ticks go on while no step comes
        panel.add_sample(t, sample, ())
    _grab(window.system, "system_time_follows_samples.png")
    for plot in (panel.step_plot, panel.util_plot, panel.memory_plot):
        lo, hi = plot.getViewBox().viewRange()[0]
        assert lo <= 0.5 and hi >= 8.0, f"time axis {lo:.1f}..{hi:.1f} s hides the samples"
    x, _ = panel.cpu_curve.getData()
    assert x[-1] == 8.0
