"""UI ingest benchmark: how the real MainWindow keeps up with a fast synthetic run.

Drives ``MainWindow`` offscreen (no TensorFlow) with a producer thread that puts
``StepEnded`` events on the channel at a paced rate (1k, 10k, 100k steps/s), an
``EpochEnded`` every 1,000 steps, and reports per rate: the bridge's frame time
(one timer tick: drain + ingest, plus setData on the frames that redraw; median
and p99), the redraws (a live run's redraws are budgeted, see ui/bridge.py: their
rate and their cost including Qt's paint), the frame rate reached, events
produced vs consumed (dropped must be 0) and the largest backlog. Then it pushes
1M steps as fast as the UI takes them and reports the process RSS and the bytes
held by the decimated Series stores.

Each phase is a run of ``--fits`` fits (20 by default: a ``FitStarted`` with a new
model, epochs, a ``FitEnded``) reporting ``--families`` metric families (12 by
default: loss and 11 metrics, most of which come and go from fit to fit), so the
plots break at every fit, mark each one, and hide the families not shown by default.
``--fits 1 --families 2`` is the single-MLP run this benchmark started with.

With ``--compare N`` (5 by default) the live run is drawn with N recorded runs of
``--compare-steps`` steps each (100k by default) beside it, as the Runs panel and the
previous run put them there: each a :class:`~tfstudio.core.run_store.RunStore` filled
the way a folder fills one (columns per metric, two fits, epoch points), drawn as a
layer of every plot. ``--compare 0`` is the live run alone.

    QT_QPA_PLATFORM=offscreen python bench/ui_ingest.py [--seconds 4] [--x-axis fit]

The last line is the summary: ``ui: median frame ms = X, p99 = Y, dropped = D at
10000 steps/s``.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import threading
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import psutil  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tfstudio.core.channel import Channel  # noqa: E402
from tfstudio.core.events import (  # noqa: E402
    EpochEnded,
    FitEnded,
    FitStarted,
    ModelSummary,
    RunEnded,
    RunStarted,
    StepEnded,
)
from tfstudio.core.run_store import EPOCH, RunStore  # noqa: E402
from tfstudio.ui.main_window import MainWindow  # noqa: E402
from tfstudio.ui.panels.metric_plot import RunLayer  # noqa: E402

STEPS_PER_EPOCH = 1000


class IdleLauncher:
    """A launcher that starts nothing: the benchmark feeds the channel itself
    (``running``: whether the window sees a run under way from the start)."""

    def __init__(self, running: bool = False) -> None:
        self.running = running

    def start(self, script, args=(), options=None):
        self.running = True

    def stop(self):
        self.running = False

    def send(self, command):
        pass

    def is_running(self):
        return self.running


def keys_of_fit(fit, families):
    """Metric names of fit ``fit``: loss always; the others come and go from fit to fit."""
    names = ["loss"] + [f"metric_{i:02d}" for i in range(1, families)]
    return tuple(n for i, n in enumerate(names) if i < 2 or (fit + i) % 4)


def iter_events(start_step, total, fits=1, families=2, first_fit=0):
    """``total`` steps of realistic events in ``fits`` fits of equal length.

    Each fit starts with a ``FitStarted`` (a different model each time) and ends with
    a ``FitEnded``; an ``EpochEnded`` (with val metrics) closes every 1,000 steps.
    Metric names come and go between fits (see ``keys_of_fit``). The paced phases
    build their events before they start (``list(iter_events(...))``), so the
    Python cost of creating events (the engine's business) stays out of the UI's
    numbers; value dicts are shared between epochs with the same keys, so 400k
    pre-built events do not leave the allocator hundreds of MB larger.
    """
    rng = random.Random(start_step)
    per_fit = max(1, total // fits)
    templates = {}  # keys -> one epoch of (values, running) dicts
    g = start_step
    for f in range(fits):
        fit = first_fit + f
        keys = keys_of_fit(fit, families)
        model = ModelSummary(f"model_{fit}", "Sequential", (), 10_000, 10_000)
        yield FitStarted(fit, model, 10**6, 0, STEPS_PER_EPOCH, 1, g, g * 1e-4)
        epoch_dicts = templates.get(keys)
        if epoch_dicts is None:
            epoch_dicts = templates[keys] = _epoch_of_values(rng, keys)
        steps = per_fit if f < fits - 1 else total - per_fit * (fits - 1)
        for i in range(steps):
            g += 1
            in_epoch = i % STEPS_PER_EPOCH + 1
            epoch = i // STEPS_PER_EPOCH
            values, running = epoch_dicts[in_epoch - 1]
            yield StepEnded(fit, g, epoch, in_epoch, 1, values, running, g * 1e-4)
            if in_epoch == STEPS_PER_EPOCH:
                metrics = dict(running)
                metrics.update({f"val_{k}": v * 1.05 for k, v in running.items()})
                yield EpochEnded(fit, epoch, g, metrics, g * 1e-4)
        yield FitEnded(fit, g, False, g * 1e-4)


def _epoch_of_values(rng, keys):
    """One epoch of per-step values and running means for ``keys``."""
    out = []
    sums = dict.fromkeys(keys, 0.0)
    for in_epoch in range(1, STEPS_PER_EPOCH + 1):
        values = {}
        for j, k in enumerate(keys):
            values[k] = (j + 1) / (1.0 + in_epoch * 1e-2) + rng.random() * 0.1
            sums[k] += values[k]
        out.append((values, {k: sums[k] / in_epoch for k in keys}))
    return out


class Producer(threading.Thread):
    """Emits ``events`` on the channel at ``rate`` steps/s (EpochEnded ride along).

    ``rate=None`` means as fast as possible, but never more than ``max_backlog`` events
    ahead of the UI (so the memory measured is the UI's, not the queue's).
    """

    def __init__(self, channel, events, rate, max_backlog=50_000):
        super().__init__(daemon=True)
        self.channel = channel
        self.events = events
        self.rate = rate
        self.max_backlog = max_backlog
        self.produced = 0
        self.steps = 0
        self.elapsed = 0.0

    def run(self):
        emit = self.channel.emit
        it = iter(self.events)
        t0 = time.perf_counter()
        exhausted = False
        while not exhausted:
            if self.rate is None:
                if self.channel.pending() > self.max_backlog:
                    time.sleep(0.001)
                    continue
                due = self.steps + 5000
            else:
                due = int((time.perf_counter() - t0) * self.rate)
            while self.steps < due:
                event = next(it, None)
                if event is None:
                    exhausted = True
                    break
                emit(event)
                self.produced += 1
                if type(event) is StepEnded:
                    self.steps += 1
            if self.rate is not None:
                time.sleep(0.001)  # paced: a training loop spends its time outside Python
        self.elapsed = time.perf_counter() - t0


def recorded_store(index, steps, families):
    """A finished run of ``steps`` steps, two fits, filled as a run folder fills a store."""
    import numpy as np

    store = RunStore(f"earlier-{index}")
    half = steps // 2
    fits = []
    for f, start in enumerate((0, half)):
        model = ModelSummary(f"model_{f}", "Sequential", (), 10_000, 10_000)
        fits.append(FitStarted(f, model, 10**6, 0, STEPS_PER_EPOCH, 1, start, 0.0))
    store.add(fits)
    rng = np.random.default_rng(index)
    x = np.arange(1, steps + 1, dtype=np.float64)
    for j, key in enumerate(keys_of_fit(index, families)):
        y = (j + 1) / (1.0 + x * 1e-4) + rng.random(steps) * 0.1
        store.add_columns(key, x, y)
        epochs = x[STEPS_PER_EPOCH - 1 :: STEPS_PER_EPOCH]
        store.add_columns(f"val_{key}", epochs, (j + 1.05) / (1.0 + epochs * 1e-4), EPOCH)
    store.add_event(RunEnded("finished", 0, 2, steps, 0.0))
    return store


COMPARE_COLOURS = ("#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def pump_until(app, done, timeout):
    """Run the Qt event loop until ``done()`` or ``timeout`` seconds."""
    end = time.perf_counter() + timeout
    while not done() and time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.0005)


def percentile(values, q):
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    i = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[i]


def run_rate(app, window, channel, rate, seconds, start_step, fits, families, first_fit):
    """One paced phase of ``fits`` fits; returns a result dict."""
    bridge = window.bridge
    pump_until(app, lambda: channel.pending() == 0, 5)
    bridge.reset_stats()
    backlog = []
    bridge.frame_done.connect(lambda _n: backlog.append(channel.pending()))
    events = list(iter_events(start_step, int(rate * seconds), fits, families, first_fit))
    end_step = start_step + int(rate * seconds)
    producer = Producer(channel, events, rate)
    t0 = time.perf_counter()
    producer.start()
    ticks_before = bridge.frames
    pump_until(app, lambda: not producer.is_alive(), seconds * 5 + 10)
    producer.join()
    wall = time.perf_counter() - t0
    left_before_final_drain = channel.pending()
    frame_times = [t * 1000 for t in bridge.frame_times]
    redraw_times = [t * 1000 for t in bridge.redraw_times]
    redraws = bridge.redraws
    frames = bridge.frames - ticks_before
    bridge.tick()  # final drain
    bridge.frame_done.disconnect()
    consumed = bridge.events_consumed
    return {
        "rate": rate,
        "achieved": producer.steps / producer.elapsed if producer.elapsed else 0.0,
        "produced": producer.produced,
        "consumed": consumed,
        "dropped": producer.produced - consumed,
        "median": statistics.median(frame_times) if frame_times else float("nan"),
        "p99": percentile(frame_times, 99),
        "max": max(frame_times) if frame_times else float("nan"),
        "fps": frames / wall if wall else 0.0,
        "redraws_per_s": redraws / wall if wall else 0.0,
        "redraw_median": statistics.median(redraw_times) if redraw_times else float("nan"),
        "redraw_p99": percentile(redraw_times, 99),
        "backlog_max": max(backlog) if backlog else 0,
        "left": left_before_final_drain,
        "end_step": end_step,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per rate")
    parser.add_argument("--total", type=int, default=1_000_000, help="steps of the memory phase")
    parser.add_argument("--rates", default="1000,10000,100000")
    parser.add_argument("--fits", type=int, default=20, help="fits per phase (segments)")
    parser.add_argument("--families", type=int, default=12, help="metric families")
    parser.add_argument(
        "--x-axis", choices=("global", "fit"), default="global", help="x axis of the plots"
    )
    parser.add_argument(
        "--smoothing",
        type=float,
        default=None,
        help="EMA weight of the per-step curves (default: the app's, 0.6; 0 = off)",
    )
    parser.add_argument("--compare", type=int, default=5, help="recorded runs shown beside it")
    parser.add_argument("--compare-steps", type=int, default=100_000, help="steps of each")
    opts = parser.parse_args()

    app = QApplication.instance() or QApplication(sys.argv[:1])
    settings_dir = tempfile.mkdtemp(prefix="tfstudio-bench-")
    settings = QSettings(os.path.join(settings_dir, "s.ini"), QSettings.Format.IniFormat)
    channel = Channel()
    window = MainWindow(channel, IdleLauncher(), settings)
    window.resize(1200, 800)
    window.show()
    proc = psutil.Process()
    app.processEvents()
    rss_start = proc.memory_info().rss

    window.metrics.set_x_mode(opts.x_axis)
    if opts.smoothing is not None:
        window.metrics.set_smoothing(opts.smoothing)
    channel.emit(RunStarted("/bench/train.py", ("train.py",), "/bench", time.time()))
    window.bridge.tick()
    layers = [
        RunLayer(recorded_store(i, opts.compare_steps, opts.families), f"earlier-{i}", colour)
        for i, colour in zip(range(opts.compare), COMPARE_COLOURS * 10, strict=False)
    ]
    window.metrics.set_compared(layers)
    window.bridge.flush()

    print(
        f"bridge: {1000 / window.bridge.interval_ms():.0f} Hz timer; window 1200x800 offscreen; "
        f"{opts.fits} fits per phase, {opts.families} metric families, x axis {opts.x_axis}, "
        f"smoothing {window.metrics.smoothing:g}; beside it {opts.compare} recorded runs of "
        f"{opts.compare_steps:,} steps"
    )
    header = (
        f"{'steps/s':>8} {'achieved':>9} {'produced':>9} {'consumed':>9} {'dropped':>7} "
        f"{'median ms':>9} {'p99 ms':>7} {'max ms':>7} {'frames/s':>8} {'backlog max':>11} "
        f"{'redraws/s':>9} {'redraw ms (median/p99, incl. paint)':>36}"
    )
    print(header)
    results = {}
    step = 0
    fit = 0
    for rate in (int(r) for r in opts.rates.split(",")):
        r = run_rate(app, window, channel, rate, opts.seconds, step, opts.fits, opts.families, fit)
        step = r["end_step"]
        fit += opts.fits
        results[rate] = r
        print(
            f"{rate:>8} {r['achieved']:>9.0f} {r['produced']:>9} {r['consumed']:>9} "
            f"{r['dropped']:>7} {r['median']:>9.2f} {r['p99']:>7.2f} {r['max']:>7.2f} "
            f"{r['fps']:>8.1f} {r['backlog_max']:>11} {r['redraws_per_s']:>9.1f} "
            f"{r['redraw_median']:>17.2f} / {r['redraw_p99']:<16.2f}"
        )

    # Memory: 1M more steps as fast as the UI takes them.
    bytes0 = window.metrics.series_nbytes()
    bridge = window.bridge
    bridge.reset_stats()
    end_step = step + opts.total
    gc.collect()
    rss0 = proc.memory_info().rss
    events = iter_events(step, opts.total, opts.fits, opts.families, fit)
    producer = Producer(channel, events, None, max_backlog=10_000)
    t0 = time.perf_counter()
    producer.start()
    samples = []  # (steps consumed, RSS) every 250k steps: flat if memory is bounded

    def sample(_n):
        if bridge.steps_consumed >= (len(samples) + 1) * opts.total // 4:
            samples.append((bridge.steps_consumed, proc.memory_info().rss))

    bridge.frame_done.connect(sample)
    pump_until(app, lambda: not producer.is_alive(), 600)
    producer.join()
    bridge.tick()
    bridge.frame_done.disconnect(sample)
    wall = time.perf_counter() - t0
    gc.collect()
    rss1 = proc.memory_info().rss
    bytes1 = window.metrics.series_nbytes()
    drawn = sum(
        len(c.x) for p in window.metrics.plots.values() for c in p.curves() if c.series is not None
    )
    mem_ft = [t * 1000 for t in bridge.frame_times]
    print(
        f"memory phase: {producer.produced:,} events in {wall:.1f} s "
        f"({producer.produced / wall:,.0f}/s), consumed {bridge.events_consumed:,}, "
        f"dropped {producer.produced - bridge.events_consumed}; "
        f"frame median {statistics.median(mem_ft):.2f} ms, p99 {percentile(mem_ft, 99):.2f} ms"
    )
    print(
        f"RSS {rss_start / 2**20:.0f} MiB with the window shown; "
        f"{rss0 / 2**20:.0f} MiB -> {rss1 / 2**20:.0f} MiB "
        f"(+{(rss1 - rss0) / 2**20:.1f} MiB) after {end_step:,} steps in total; "
        f"Series stores {bytes0 / 2**10:.0f} KiB -> {bytes1 / 2**10:.0f} KiB "
        f"(fixed capacity); points handed to setData per frame: {drawn:,}"
    )
    print(
        "RSS during the memory phase: "
        + ", ".join(f"{n / 1e6:.2f}M steps {r / 2**20:.0f} MiB" for n, r in samples)
    )
    fit += opts.fits
    channel.emit(RunEnded("finished", 0, fit, end_step, 0.0))
    bridge.tick()
    plots = window.metrics.plots
    shown = window.metrics.shown_families()
    print(
        f"plots: {len(plots)} families, {len(shown)} shown by default ({', '.join(shown)}); "
        f"{fit} fits; redraws per plot: "
        + ", ".join(f"{name} {plot.redraws}" for name, plot in plots.items())
    )
    window.close()

    r = results.get(10000)
    if r is None:
        return 0
    print(
        f"ui: median frame ms = {r['median']:.2f}, p99 = {r['p99']:.2f}, "
        f"dropped = {r['dropped']} at 10000 steps/s "
        f"(live run + {opts.compare} recorded {opts.compare_steps:,}-step runs shown)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
