"""The window's CPU per redraw, measured on one captured run replayed into fresh windows.

``window_overhead.py`` measures what the window costs the training process, but on 2
cores its rounds spread wider than the effect of a change to the window. This bench
takes the training out: it captures the events the real window drained during one run
of ``bench/mlp_steps.py`` (the worker, pulls and all, as ``window_driver.py`` runs it),
then replays them, at the times they were drained, into a fresh offscreen window per
replay, redrawing at the live rate of a 2-core machine (14/s, paced by paint cost as
in a run). Each replay reports, from the last fit's start to the run's end:

- the window process's CPU per redraw (all threads) and the UI thread's, split into
  the plots' paints (every pyqtgraph view's ``paintEvent``), the bridge's ticks
  (drain, ingest, the panels' refresh) and the rest (Qt's other widgets, layout, the
  event loop);
- the axes' paints per redraw and their CPU, and how often a metric plot's y range moved.

With ``--variants FILE``, FILE (a Python file) defines ``VARIANTS``: name -> a function
called before each replay's window is made (to switch something off or on); the
replays of all variants are interleaved, in a fresh random order each round.
``bench/window_replay_old_axes.py`` is the variant of the axes before 2026-11-27.

    python bench/window_replay.py [--events FILE] [--rounds 5] [--variants FILE] [--steps N]
                                  [--metrics accuracy,top3,xent]

Without ``--events`` (or when FILE does not exist) it captures a run first (and keeps
it in FILE when given), of ``--steps`` timed steps (a long run: its curves hold more
points at each redraw; a per-step curve keeps up to 20,000).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "mlp_steps.py"
REDRAW_HZ = 14.0  # the bridge's live rate on a machine with no core to spare

CAPTURE = """
import pickle, sys, time
sys.path.insert(0, {bench!r})
from tfstudio.core import channel
log = []
drain = channel.Channel.drain
def logged(self):
    events = drain(self)
    if events:
        log.append((time.perf_counter(), events))
    return events
channel.Channel.drain = logged
from window_driver import run_window
run_window({script!r})
with open({out!r}, "wb") as f:
    pickle.dump(log, f)
"""


def capture(path: Path, steps: int | None = None, metrics: str | None = None) -> None:
    """Run ``mlp_steps.py`` in the real window and keep every batch of events it drained
    (``steps``: its timed steps, else its own default; ``metrics``: its model's metrics,
    comma-separated, see ``bench_model.py``)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        if steps is not None:
            env["TFSTUDIO_BENCH_STEPS"] = str(steps)
        if metrics:
            env["TFSTUDIO_BENCH_METRICS"] = metrics
        env["TFSTUDIO_BENCH_OUT"] = str(Path(tmp) / "rate.json")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        code = CAPTURE.format(bench=str(ROOT / "bench"), script=str(SCRIPT), out=str(path))
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)


class Meters:
    """Counters the replays read: CPU of paints and ticks, axis paints, y-range moves."""

    def __init__(self) -> None:
        import pyqtgraph as pg

        import tfstudio.ui.bridge as bridge_module
        from tfstudio.ui.plotting import view

        self.acc: collections.Counter[str] = collections.Counter()
        acc = self.acc

        def timed(cls: type, name: str, key: str, where: Callable[[object], bool]) -> None:
            original = getattr(cls, name)

            def wrapper(self: object, *args: object) -> object:
                t0 = time.thread_time()
                result = original(self, *args)
                if where(self):
                    acc[key] += time.thread_time() - t0
                    acc[key + " n"] += 1
                return result

            setattr(cls, name, wrapper)

        timed(pg.GraphicsView, "paintEvent", "paint", lambda _: True)
        timed(bridge_module.Bridge, "tick", "tick", lambda _: True)
        shown_axis = lambda a: getattr(a, "orientation", "") in ("left", "bottom")  # noqa: E731
        timed(pg.AxisItem, "paint", "axis", shown_axis)
        refresh_range = view.PlotView.refresh_range

        def counted(plot: view.PlotView) -> None:
            before = plot.y_range
            refresh_range(plot)
            if plot.y_range != before:
                acc["y moves"] += 1

        view.PlotView.refresh_range = counted

    def snapshot(self) -> dict[str, float]:
        return dict(self.acc)


def replay(app: object, log: list, meters: Meters) -> dict[str, float]:
    """One replay into a fresh window; figures per redraw from the last fit's start."""
    from PySide6.QtCore import QSettings, QTimer
    from ui_ingest import IdleLauncher  # beside this file: a launcher that starts nothing

    from tfstudio.core.channel import Channel
    from tfstudio.ui.main_window import MainWindow

    channel = Channel()
    window = MainWindow(channel, IdleLauncher(), QSettings(os.devnull, QSettings.Format.IniFormat))
    window.resize(1200, 807)  # the size window_driver.py's runs get offscreen
    window.show()
    bridge = window.bridge
    bridge.note_machine_cpu = lambda *_: None  # no training here to measure: keep 14/s
    bridge.set_redraw_hz(REDRAW_HZ)
    marks: dict[str, object] = {}

    def mark(name: str) -> None:
        marks[name] = (
            time.process_time(),
            time.thread_time(),
            bridge.redraws,
            time.perf_counter(),
            meters.snapshot(),
        )

    bridge.fit_started.connect(lambda _e: mark("start"))  # the last fit's start counts
    bridge.run_ended.connect(lambda _e: (mark("end"), QTimer.singleShot(50, app.quit)))
    first, t0, fed = log[0][0], time.perf_counter(), [0]

    def feed() -> None:
        now = time.perf_counter() - t0
        while fed[0] < len(log) and log[fed[0]][0] - first <= now:
            channel.emit_all(log[fed[0]][1])
            fed[0] += 1
        if fed[0] >= len(log):
            feeder.stop()

    feeder = QTimer()
    feeder.setInterval(5)
    feeder.timeout.connect(feed)
    feeder.start()
    app.exec()
    window.close()
    window.deleteLater()
    app.processEvents()
    (c0, m0, r0, t_0, a0), (c1, m1, r1, t_1, a1) = marks["start"], marks["end"]
    n = max(1, r1 - r0)

    def per(key: str, scale: float = 1000.0) -> float:
        return scale * (a1.get(key, 0) - a0.get(key, 0)) / n

    result = {
        "process": 1000 * (c1 - c0) / n,
        "ui": 1000 * (m1 - m0) / n,
        "paint": per("paint"),
        "tick": per("tick"),
        "axis paints": per("axis n", 1.0),
        "axis": per("axis"),
        "y moves": per("y moves", 1.0),
        "redraws/s": n / (t_1 - t_0),
    }
    result["other"] = result["ui"] - result["paint"] - result["tick"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=Path, help="captured events (made when missing)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--variants", type=Path, help="a file defining VARIANTS")
    parser.add_argument(
        "--steps", type=int, help="timed steps of the captured run (mlp_steps.py: 2000)"
    )
    parser.add_argument(
        "--metrics",
        help="the captured run's metrics, comma-separated (e.g. accuracy,top3,xent: a plot "
        "each; bench_model.py)",
    )
    args = parser.parse_args()
    events = args.events
    with tempfile.TemporaryDirectory() as tmp:
        if events is None or not events.exists():
            events = events or Path(tmp) / "events.pkl"
            print(f"capturing a run of {SCRIPT.name} in the window ...", flush=True)
            capture(events, args.steps, args.metrics)
        with open(events, "rb") as f:
            log = pickle.load(f)
    variants: dict[str, Callable[[], None]] = {"this tree": lambda: None}
    if args.variants is not None:
        spec = importlib.util.spec_from_file_location("variants", args.variants)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        variants = module.VARIANTS
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    meters = Meters()
    first = next(iter(variants))
    variants[first]()
    replay(app, log, meters)  # warm-up: imports, fonts, caches
    results: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for r in range(args.rounds):
        order = list(variants)
        random.shuffle(order)
        for name in order:
            variants[name]()
            res = replay(app, log, meters)
            results[name].append(res)
            print(
                f"round {r + 1} {name:>10}: {res['process']:5.1f} ms CPU/redraw "
                f"(UI thread {res['ui']:5.1f}: paint {res['paint']:4.1f}, tick {res['tick']:4.1f}, "
                f"other {res['other']:4.1f}) at {res['redraws/s']:.1f} redraws/s",
                flush=True,
            )
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    for name, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"{name}: {med['process']:.1f} ms CPU per redraw (UI thread {med['ui']:.1f}: "
            f"paint {med['paint']:.1f}, tick {med['tick']:.1f}, other {med['other']:.1f}); "
            f"axes {med['axis paints']:.2f} paints, {med['axis']:.2f} ms per redraw; "
            f"metric y ranges moved {med['y moves']:.3f} times per redraw"
        )


if __name__ == "__main__":
    main()
