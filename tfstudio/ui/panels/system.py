"""System panel: the run's process, the machine and the GPUs, live, kept after the run.

The panel draws a run model's system samples (``model.system``, ``system/...`` tags):
the live run's as they come, a reopened run's as its folder recorded them. While a
run is live the worker samples itself once a second (``SystemSampled`` events); the
panel takes its own samples of the worker too (psutil, NVML), on a thread of its own
(a driver call can take long: the GUI thread never waits on one), for its figures, the
idle-GPU rule and the redraw rate, and as the model's samples when the worker sends
none. It never imports TensorFlow. TensorFlow's own memory figures arrive from the worker as
:class:`DeviceMemory` events. Step time (from the step events) and GPU
utilisation share one time axis, so "GPU idle while steps are slow" shows; a
GPU left mostly idle during training earns one notice about the input pipeline.
"""

from __future__ import annotations

import html
import os
import re
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

import tfstudio
from tfstudio.core.events import (
    CheckpointRestored,
    DeviceMemory,
    EpochEnded,
    FitEnded,
    FitStarted,
    RunDevices,
    RunEnded,
    RunStarted,
    RunState,
    StepColumns,
    StepEnded,
)
from tfstudio.core.gpu import GpuReader, GpuSample, IdleGpuWatch, run_utilization
from tfstudio.core.run_model import PROGRESS_EVENTS, RunModel
from tfstudio.core.series import Series
from tfstudio.core.system import ProcessSampler, SystemSample
from tfstudio.core.system_sampling import (
    GPU_PROCESS_MEMORY,
    GPU_UTILIZATION,
    MACHINE_CPU,
    PROCESS_CPU,
    PROCESS_RSS,
    gpu_key,
    gpus_in,
    values_of,
)
from tfstudio.core.ticker import Ticker
from tfstudio.ui.panels.system_figures import (  # GAP_*: the step-time line's gaps
    GAP_FACTOR,
    GAP_MIN_S,
    SystemFigures,
    recorded_step_ms,
)
from tfstudio.ui.panels.visibility import out_of_sight
from tfstudio.ui.plotting.axes import MenuOnDemandViewBox
from tfstudio.ui.plotting.view import quiet_axes

SAMPLE_MS = 1000
STEP_SERIES_CAPACITY = 20_000
TRAINING_GAP_S = 3.0  # no step for this long: not training (paused, validating, compiling)
MAX_PAUSE_MARKS = 200
PAUSE_BRUSH = (123, 31, 162, 28)  # the status bar's "paused" purple, faint
GIB = float(1 << 30)  # the memory plot counts in GiB, as every memory figure (format_bytes)

BACKGROUND = "#ffffff"
FOREGROUND = "#303030"
STEP = "#1f77b4"
PROCESS = "#2e7d32"
MACHINE = "#9e9e9e"
GPU_COLOURS = ("#e8590c", "#6a3d9a", "#c2185b", "#00838f", "#8d6e63", "#5c6bc0")
TF_DASH = Qt.PenStyle.DashLine

TF_DATA_GUIDE = "https://www.tensorflow.org/guide/data_performance"


def input_pipeline_doc() -> str:
    """URL of the input-pipeline advice: the local docs/input_pipeline.md if present."""
    local = Path(tfstudio.__file__).resolve().parent.parent / "docs" / "input_pipeline.md"
    return local.as_uri() if local.is_file() else TF_DATA_GUIDE


class SystemPanel(SystemFigures, QWidget):
    """The live system view of a run; implements the bridge's panel protocol.

    Args:
        parent: Qt parent.
        gpu_reader: NVML access (tests pass one over a fake NVML module); a default
            :class:`GpuReader` is made on the first run when None.
        interval_ms: milliseconds between samples while a run is live.
        model: the run shown (the window's session gives it; :meth:`show_model` changes
            it); None: one of the panel's own, for a panel used alone.
    """

    notice_shown = Signal(str)  # the input-pipeline notice, once per run
    machine_sampled = Signal(int, float)  # cpu_count, machine CPU % (each sample of a run)

    EVENTS = PROGRESS_EVENTS  # the kinds the bridge hands ingest_event / ingest_steps

    def __init__(
        self,
        parent: QWidget | None = None,
        gpu_reader: GpuReader | None = None,
        interval_ms: int = SAMPLE_MS,
        model: RunModel | None = None,
    ) -> None:
        super().__init__(parent)
        self._own = model is None  # a panel used alone keeps its samples in a model of its own
        self.model = model if model is not None else RunModel(live=True)
        self._sampled_model = self.model  # the live run's: where samples go
        # a reopened run's (metrics, system) revisions when drawn: read on, drawn again
        self._read_at: tuple[int, int] = (-1, -1)
        self.gpu_reader = gpu_reader
        self.sampler: ProcessSampler | None = None
        self.idle_watch = IdleGpuWatch()
        self.interval_s = interval_ms / 1000
        # The samples are taken on a thread of their own (psutil, and NVML: a driver call
        # can take long, and the window must never wait on one); this GUI timer takes them.
        self._ticker: Ticker | None = None
        self._sampled: deque[tuple[float, SystemSample | None, tuple[GpuSample, ...]]] = deque()
        self._timer = QTimer(self)
        self._timer.setInterval(max(1, interval_ms // 4))
        self._timer.timeout.connect(self._take_sampled)
        self._build()
        self._clear()
        self._render()

    # -- construction ------------------------------------------------------
    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.setSpacing(4)
        self.figures = QLabel(self)
        self.figures.setObjectName("systemFigures")
        self.figures.setTextFormat(Qt.TextFormat.RichText)
        self.figures.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.figures.setWordWrap(True)
        self.notice = QLabel(self)
        self.notice.setObjectName("systemNotice")
        self.notice.setWordWrap(True)
        self.notice.setTextFormat(Qt.TextFormat.RichText)
        self.notice.setOpenExternalLinks(True)
        self.notice.setStyleSheet(
            "QLabel#systemNotice { background: #fff4e5; border: 1px solid #f0c36d;"
            " border-radius: 3px; padding: 4px; color: #5d4037; }"
        )
        self.note = QLabel(self)
        self.note.setObjectName("systemNote")
        self.note.setWordWrap(True)
        self.note.setStyleSheet("QLabel#systemNote { color: #7a7a7a; }")
        self.plots = pg.GraphicsLayoutWidget(self)
        self.plots.setBackground(BACKGROUND)
        self.plots.ci.setSpacing(0)
        self.plots.ci.setContentsMargins(2, 2, 2, 2)
        self.step_plot = self._plot(0, "step ms")
        self.util_plot = self._plot(1, "busy %")
        self.memory_plot = self._plot(2, "memory GiB")
        self.memory_plot.setLabel("bottom", "seconds since the run started")
        for plot in (self.util_plot, self.memory_plot):
            plot.setXLink(self.step_plot)
        for plot in (self.step_plot, self.util_plot):  # one time axis: numbers at the bottom only
            plot.getAxis("bottom").setStyle(showValues=False)
            plot.getAxis("bottom").setHeight(6)
        self.util_plot.setYRange(0, 100, padding=0.02)
        self.step_plot.setLimits(xMin=0)  # the run's time starts at 0
        self.step_curve = self._curve(self.step_plot, "per step", STEP)
        self.step_curve.setData([], [], connect="finite")  # NaN: no steps there (a gap)
        # Nothing drawn: it holds the samples' time span, so the shared time axis follows
        # the samples while no step comes (paused, evaluating), not only the steps.
        self.time_span = pg.PlotDataItem([], [], pen=pg.mkPen(None))
        self.step_plot.addItem(self.time_span)
        self.pause_marks: list[pg.LinearRegionItem] = []
        self.cpu_curve = self._curve(self.util_plot, "run CPU", PROCESS)
        self.machine_curve = self._curve(self.util_plot, "machine CPU", MACHINE)
        self.rss_curve = self._curve(self.memory_plot, "run RSS", PROCESS)
        # keyed by GpuSample.key: (NVML index, MIG device index or -1 for a whole GPU)
        self.gpu_util_curves: dict[tuple[int, int], pg.PlotDataItem] = {}
        self.gpu_mem_curves: dict[tuple[int, int], pg.PlotDataItem] = {}
        self.tf_mem_curves: dict[str, pg.PlotDataItem] = {}
        layout.addWidget(self.figures)
        layout.addWidget(self.notice)
        layout.addWidget(self.note)
        layout.addWidget(self.plots, 1)

    def _plot(self, row: int, label: str) -> pg.PlotItem:
        plot = self.plots.addPlot(
            row=2 * row, col=0, axisItems=quiet_axes(), viewBox=MenuOnDemandViewBox()
        )
        plot.setLabel("left", label)
        # Horizontal major lines only: a full grid cost ~90 ms a paint (as in metrics.py).
        plot.showGrid(x=False, y=True, alpha=0.15)
        plot.setMouseEnabled(x=True, y=False)
        plot.getAxis("left").setWidth(52)
        for axis in ("left", "bottom"):
            plot.getAxis(axis).enableAutoSIPrefix(False)  # "mGiB" and "ks" read badly
            plot.getAxis(axis).setPen(FOREGROUND)
            plot.getAxis(axis).setTextPen(FOREGROUND)
        # The legend goes in its own row under the plot, so it never hides a curve.
        legend = pg.LegendItem(labelTextSize="7pt", labelTextColor=FOREGROUND, colCount=3)
        self.plots.addItem(legend, row=2 * row + 1, col=0)
        self.plots.ci.layout.setRowFixedHeight(2 * row + 1, 22)
        plot.legend = legend  # plot.plot(name=...) and removeItem keep it up to date
        return plot

    @staticmethod
    def _curve(
        plot: pg.PlotItem, name: str, colour: str, style: Qt.PenStyle = Qt.PenStyle.SolidLine
    ) -> pg.PlotDataItem:
        pen = pg.mkPen(colour, width=1.6, style=style)
        return plot.plot([], [], pen=pen, name=name)

    def _clear(self) -> None:
        self.live = False
        self.pid = 0
        self.devices: RunDevices | None = None
        self.t0 = time.monotonic()
        self.samples: list[SystemSample] = []
        self.sample_times: list[float] = []
        self.gpu_samples: list[tuple[GpuSample, ...]] = []
        self.tf_memory: list[DeviceMemory] = []
        self.tf_note = ""
        self.steps = Series(STEP_SERIES_CAPACITY)
        self._step_offset: float | None = None  # window clock - run clock (min over arrivals)
        self._prev_step: tuple[float, int] | None = None  # (time, global_step) in this epoch
        self._step_s: float | None = None  # usual seconds per step (moving average)
        self.pauses: list[list[float]] = []  # [start, end] in run time; end NaN while paused
        self._paused = False
        self._gap_at: float | None = None  # a break to write before the next point
        self._boundary: tuple[float, int] | None = None  # last step before an epoch/fit end
        self._last_step_arrival = -1e9
        self._in_fit = False
        self.notice_text = ""
        self.idle_watch.reset()
        for plot, curves in (
            (self.util_plot, self.gpu_util_curves),
            (self.memory_plot, self.gpu_mem_curves),
            (self.memory_plot, self.tf_mem_curves),
        ):
            for item in curves.values():
                plot.removeItem(item)
            curves.clear()
        for mark in getattr(self, "pause_marks", ()):
            self.step_plot.removeItem(mark)
        self.pause_marks = []
        self._dirty = True

    def show_model(self, model: RunModel) -> None:
        """Draw ``model``'s samples (the live run's, or a reopened run's)."""
        if model is self.model:
            return
        self.model = model
        if model.live and not self.live:  # the next live run's (no run is sampled now)
            self._sampled_model = model
        self._dirty = True
        self._render()

    def _shows_live(self) -> bool:
        return self.model is self._sampled_model

    # -- panel protocol ----------------------------------------------------
    def ingest_steps(self, steps: Sequence[StepEnded]) -> None:
        """Turn a run of steps into step-time points (one per batch of arrivals).

        A stretch without steps (a pause, an evaluation, saving between two loops)
        is a gap in the series, never a slow step: the step after it carries the
        stretch, so it only starts the next measurement.
        """
        arrival = time.monotonic() - self.t0
        last = steps[-1]
        offset = arrival - last.time
        if self._step_offset is None or offset < self._step_offset:
            self._step_offset = offset
        self._last_step_arrival = arrival
        if self._paused:  # a step means training goes on, even if the resume event lags
            self._end_pause(steps[0].time)
        if type(steps) is StepColumns:
            times = steps.time
            gsteps = steps.global_step
        else:
            times = np.fromiter((s.time for s in steps), np.float64, len(steps))
            gsteps = np.fromiter((s.global_step for s in steps), np.int64, len(steps))
        first = (float(times[0]), int(gsteps[0]))
        boundary, self._boundary = self._boundary, None
        if boundary is not None and self._is_gap(boundary, first):
            self._add_gap(boundary[0])
        start = self._prev_step
        if start is not None:
            times = np.concatenate(([start[0]], times))
            gsteps = np.concatenate(([start[1]], gsteps))
        else:
            start = first
        # Only where two hooks are more than GAP_MIN_S apart can there be a gap: look at those.
        for i in np.nonzero(np.diff(times) > GAP_MIN_S)[0].tolist():
            before = (float(times[i]), int(gsteps[i]))
            after = (float(times[i + 1]), int(gsteps[i + 1]))
            if self._is_gap(before, after):
                self._add_step_point(start, before)
                self._add_gap(before[0])
                start = after
        prev = (float(times[-1]), int(gsteps[-1]))
        self._add_step_point(start, prev)
        self._prev_step = prev

    def _is_gap(self, prev: tuple[float, int], step: tuple[float, int]) -> bool:
        """True when the time between two hooks ((time, global step) each) is far beyond
        the run's usual step."""
        dt = step[0] - prev[0]
        if dt <= GAP_MIN_S:
            return False
        usual = self._step_s
        if usual is None:
            return False  # nothing to compare with yet
        return dt > GAP_FACTOR * usual * max(1, step[1] - prev[1])

    def _add_step_point(
        self, start: tuple[float, int] | None, end: tuple[float, int] | None
    ) -> None:
        if start is None or end is None or end[1] <= start[1] or end[0] <= start[0]:
            return
        per_step = (end[0] - start[0]) / (end[1] - start[1])
        if self._gap_at is not None:
            self.steps.append(self._gap_at, float("nan"))
            self._gap_at = None
        self.steps.append(end[0], 1000.0 * per_step)
        self._step_s = per_step if self._step_s is None else 0.8 * self._step_s + 0.2 * per_step
        self._dirty = True

    def _add_gap(self, t: float) -> None:
        """Break the step-time line at ``t``: no steps ran after it for a while.

        The break is written with the next point, so a series never ends in one.
        """
        if len(self.steps) and self._gap_at is None:
            self._gap_at = t

    def _mark_boundary(self) -> None:
        """An epoch or fit ended: the next step only starts a measurement, and if
        what ran meanwhile (validation, callbacks, the script) took long, it is a gap."""
        if self._prev_step is not None:
            self._boundary = self._prev_step
        self._prev_step = None

    def _start_pause(self) -> None:
        t = self._prev_step[0] if self._prev_step is not None else 0.0
        self._add_gap(t)
        self._prev_step = None
        if not self._paused:
            self._paused = True
            self.pauses.append([t, float("nan")])
            del self.pauses[:-MAX_PAUSE_MARKS]
            self._dirty = True

    def _end_pause(self, t: float) -> None:
        self._paused = False
        if self.pauses and np.isnan(self.pauses[-1][1]):
            self.pauses[-1][1] = max(t, self.pauses[-1][0])
            self._dirty = True

    def ingest_event(self, event: object) -> None:
        """Follow the run: start and stop sampling, devices, TF memory, fit boundaries."""
        if isinstance(event, RunStarted):
            self.start_run(event.pid)
        elif isinstance(event, RunEnded):
            self.end_run()
        elif isinstance(event, RunDevices):
            self.devices = event
            self._dirty = True
        elif isinstance(event, DeviceMemory):
            if event.available:
                self.tf_memory.append(event)
            else:
                self.tf_note = event.note
            self._dirty = True
        elif isinstance(event, FitStarted):
            self._in_fit = True
            self._prev_step = None
        elif isinstance(event, EpochEnded):
            self._mark_boundary()  # the validation pass is not a step
        elif isinstance(event, FitEnded):
            self._in_fit = False
            self._mark_boundary()
        elif isinstance(event, RunState):
            if event.state == "paused":
                self._start_pause()
            else:
                self._prev_step = None  # the first step after Resume carries the pause
        elif isinstance(event, CheckpointRestored):
            self._add_gap(self._prev_step[0] if self._prev_step is not None else 0.0)
            self._prev_step = None

    def refresh(self) -> None:
        """Redraw what changed; while a run is live the curves wait for the 1 s sample tick.

        Out of sight (the dock closed or behind another) nothing is drawn until shown.
        """
        recorded = not self._shows_live()
        read = (self.model.metrics.revision, self.model.revision("system"))
        if recorded and read != self._read_at:
            self._read_at = read  # a reopened run read on: its steps, its samples
            self._dirty = True
        if self._dirty and not out_of_sight(self):
            self._render(curves=not self.live or recorded)

    # -- sampling ----------------------------------------------------------
    def start_run(self, pid: int) -> None:
        """Forget the previous run and sample ``pid`` (0: this process) every second."""
        self._clear()
        self.live = True
        self.pid = pid
        self._sampled_model = self.model  # the window showed the new run's model at its start
        if self._own:
            self.model.system.clear()
        self.sampler = ProcessSampler(pid)
        if self.gpu_reader is None:
            self.gpu_reader = GpuReader()
        self._start_sampling()
        self._timer.start()

    def forget_run(self) -> None:
        """Another script was opened: the last run's figures go (nothing while one is live)."""
        if self.live:
            return
        self._clear()
        self._render()

    def end_run(self) -> None:
        """Stop sampling (what was taken is shown); the run's figures stay on screen."""
        if self.live:
            self._timer.stop()
            self._stop_sampling()
            self._take_sampled()  # (taken before the end)
            self.live = False
        self._render()

    def stop(self) -> None:
        """Stop sampling (the window is closing)."""
        self._timer.stop()
        self._stop_sampling()
        self.live = False

    def is_sampling(self) -> bool:
        """True while a live run is sampled."""
        return self._timer.isActive()

    def _start_sampling(self) -> None:
        """Sample the run every ``interval_s`` on a thread of its own, at once first."""
        self._stop_sampling()
        sampled = self._sampled = deque()  # this run's: a late sample of the last one is lost
        sampler, reader, t0 = self.sampler, self.gpu_reader, self.t0
        failed: list[BaseException] = []

        def take() -> None:  # on the sampler's thread
            if sampler is not None and not failed:
                sampled.append((time.monotonic() - t0, *_look(sampler, reader)))

        def on_error(exc: BaseException) -> None:  # said once; the figures stop
            failed.append(exc)
            print(f"tfstudio: the system view stopped sampling: {exc!r}", file=sys.stderr)

        self._ticker = Ticker("tfstudio-system-view", self.interval_s, take, on_error)
        self._ticker.start(first_now=True)

    def _stop_sampling(self) -> None:
        """Stop the sampler's thread without waiting for it (it may be in a driver call)."""
        if self._ticker is not None:
            self._ticker.stop(timeout=0)
            self._ticker = None

    def _take_sampled(self) -> None:
        """On the GUI thread: the samples the sampler's thread took since the last call."""
        sampled = self._sampled
        while sampled:
            self.add_sample(*sampled.popleft())

    def sample_now(self) -> None:
        """Take one sample of the process, the machine and the GPUs here, and redraw."""
        if self.sampler is not None:
            self.add_sample(time.monotonic() - self.t0, *_look(self.sampler, self.gpu_reader))

    def add_sample(
        self, t: float, sample: SystemSample | None, gpus: tuple[GpuSample, ...]
    ) -> None:
        """Record one sample taken ``t`` seconds into the run, and redraw."""
        if sample is None:  # no psutil: nothing to show
            self._dirty = True
            self._render()
            return
        self.samples.append(sample)
        self.sample_times.append(t)
        self.gpu_samples.append(gpus)
        model = self._sampled_model
        if not model.system_from_worker:  # the worker's own samples win (core/run_model.py)
            model.add_system_sample(t, values_of(sample, gpus))
        self._watch_idle(t, gpus)
        self.machine_sampled.emit(sample.cpu_count, sample.machine_cpu)
        self._dirty = True
        if not out_of_sight(self):  # else drawn when shown (showEvent)
            self._render()

    def _watch_idle(self, t: float, gpus: tuple[GpuSample, ...]) -> None:
        busy = run_utilization(gpus)
        if busy is None:
            return
        training = self._in_fit and t - self._last_step_arrival < TRAINING_GAP_S
        if self.idle_watch.feed(t, busy, training):
            self.notice_text = (
                f"The GPU was under {self.idle_watch.threshold:.0f}% busy for "
                f"{self.idle_watch.sustain_s:.0f} s of training: the input pipeline may be "
                "the bottleneck. Try <code>dataset.cache()</code> and "
                "<code>dataset.prefetch(tf.data.AUTOTUNE)</code> — see "
                f"<a href='{input_pipeline_doc()}'>input pipeline advice</a>."
            )
            self.notice_shown.emit(self.notice_text)

    # -- drawing -------------------------------------------------------------
    def _render(self, curves: bool = True) -> None:
        self._dirty = False
        _set_text(self.figures, self._figures_html())
        _set_text(self.notice, self.notice_text)
        note = (self.gpu_reader.note if self.gpu_reader else None) or ""
        _set_text(self.note, note)
        if curves and not out_of_sight(self):  # a hidden dock keeps sampling, draws when shown
            self._draw_curves()

    def _draw_curves(self) -> None:
        live = self._shows_live()
        x, y = self.steps.view() if live else recorded_step_ms(self.model)
        offset = (self._step_offset or 0.0) if live else 0.0
        few = len(x) < 60  # a handful of points (slow steps) needs markers to be seen
        if few != (self.step_curve.opts["symbol"] is not None):
            self.step_curve.setSymbol("o" if few else None)
            self.step_curve.setSymbolSize(4)
            self.step_curve.setSymbolBrush(STEP)
            self.step_curve.setSymbolPen(None)
        self.step_curve.setData(x + offset, y, connect="finite")
        _from_zero(self.step_plot, y)
        self._draw_pauses(offset)
        system = self.model.system
        times = np.concatenate([system.arrays(tag)[0] for tag in system.tags()] or [[]])
        span = np.asarray([times.min(), times.max()]) if len(times) else times
        self.time_span.setData(span, np.zeros(len(span)))
        ncpu = self.samples[-1].cpu_count if self.samples else (os.cpu_count() or 1)
        for curve, tag, scale in (
            (self.cpu_curve, PROCESS_CPU, 1.0 / ncpu),
            (self.machine_curve, MACHINE_CPU, 1.0),
            (self.rss_curve, PROCESS_RSS, 1 / GIB),
        ):
            t, v = system.arrays(tag)
            curve.setData(t, v * scale)
        for i, prefix in enumerate(gpus_in(system)):
            key, label = gpu_key(prefix)
            colour = GPU_COLOURS[i % len(GPU_COLOURS)]
            t, busy = system.arrays(prefix + GPU_UTILIZATION)
            self._gpu_line(self.gpu_util_curves, key, self.util_plot, label, colour, t, busy)
            t, held = system.arrays(prefix + GPU_PROCESS_MEMORY)
            self._gpu_line(
                self.gpu_mem_curves, key, self.memory_plot, f"{label} (run)", colour, t, held / GIB
            )
        if self.tf_memory and live:
            names = sorted({n for e in self.tf_memory for n in e.devices})
            offset_t = self._step_offset or 0.0
            tf_t = np.asarray([e.time + offset_t for e in self.tf_memory])
            for i, name in enumerate(names):
                curve = self.tf_mem_curves.get(name)
                if curve is None:
                    colour = GPU_COLOURS[i % len(GPU_COLOURS)]
                    curve = self._curve(self.memory_plot, f"{name} (TF)", colour, TF_DASH)
                    self.tf_mem_curves[name] = curve
                values = [
                    e.current[e.devices.index(name)] / GIB if name in e.devices else np.nan
                    for e in self.tf_memory
                ]
                curve.setData(tf_t, np.asarray(values))
        memory = [c.getData()[1] for c in self.memory_plot.listDataItems()]
        _from_zero(self.memory_plot, np.concatenate([m for m in memory if m is not None] or [[]]))

    def _draw_pauses(self, offset: float) -> None:
        """Shade each pause on the step-time plot (an open one up to the newest step)."""
        newest = self._prev_step[0] if self._prev_step is not None else None
        pauses = self.pauses if self._shows_live() else []  # a live run's (not recorded)
        while len(self.pause_marks) < len(pauses):
            mark = pg.LinearRegionItem(
                movable=False, brush=pg.mkBrush(PAUSE_BRUSH), pen=pg.mkPen(None)
            )
            mark.setZValue(-10)
            mark.setToolTip("paused")
            self.step_plot.addItem(mark, ignoreBounds=True)
            self.pause_marks.append(mark)
        while len(self.pause_marks) > len(pauses):
            self.step_plot.removeItem(self.pause_marks.pop())
        now = time.monotonic() - self.t0 - offset
        for mark, (start, end) in zip(self.pause_marks, pauses, strict=True):
            if np.isnan(end):
                end = max(start, now if self.live else (newest or start))
            mark.setRegion((start + offset, end + offset))

    def _gpu_line(
        self,
        curves: dict[tuple[int, int], pg.PlotDataItem],
        key: tuple[int, int],
        plot: pg.PlotItem,
        name: str,
        colour: str,
        times: np.ndarray,
        values: np.ndarray,
    ) -> None:
        """Draw one GPU's line. None is made while NVML gave no figure for it (a MIG
        device's utilisation, the run's memory seen from a container): the key lists no
        empty line."""
        curve = curves.get(key)
        if curve is None:
            if np.isnan(values).all():
                return
            curve = self._curve(plot, name, colour)
            curves[key] = curve
        curve.setData(times, values)

    def showEvent(self, event: QShowEvent) -> None:
        """Draw what was sampled while the dock was hidden."""
        super().showEvent(event)
        if self._dirty:
            self._render(curves=False)
        self._draw_curves()

    def catch_up(self) -> None:
        """Draw what was sampled while out of sight, now that the dock is in front."""
        if out_of_sight(self):
            return
        if self._dirty:
            self._render(curves=False)
        self._draw_curves()

    def summary(self) -> str:
        """The figures as plain text (tests, logs), as of the latest sample."""
        if self._dirty:
            self._render(curves=False)
        doc = self.figures.text().replace("</tr>", "\n").replace("<br>", " ")
        lines = html.unescape(re.sub(r"<[^>]+>", " ", doc)).splitlines()
        return "\n".join(" ".join(line.split()) for line in lines if line.strip())


def _look(
    sampler: ProcessSampler, reader: GpuReader | None
) -> tuple[SystemSample | None, tuple[GpuSample, ...]]:
    """One look at the run's processes, the machine and the GPUs the run holds memory on."""
    sample = sampler.sample()
    return sample, reader.read(sampler.pids()) if reader is not None else ()


def _from_zero(plot: pg.PlotItem, ys: np.ndarray) -> None:
    """Show ``0 .. max`` on the y axis: step times and memory read against zero."""
    finite = ys[np.isfinite(ys)] if len(ys) else ys
    top = float(finite.max()) if len(finite) else 1.0
    plot.setYRange(0.0, top * 1.1 if top > 0 else 1.0, padding=0)


def _set_text(label: QLabel, text: str) -> None:
    """Set a label's text only when it changed (setText re-lays-out); hide it when empty."""
    if label.text() != text:
        label.setText(text)
    if label.isVisibleTo(label.parentWidget()) != bool(text):
        label.setVisible(bool(text))


def _nan(value: float | None, scale: float = 1.0) -> float:
    return float("nan") if value is None else float(value) * scale
