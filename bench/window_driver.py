"""The real window (offscreen) running one script in a worker, with redraw statistics.

Used by ``window_overhead.py`` (as a process) and ``latency.py``:

    python bench/window_driver.py SCRIPT OUT.json [script args...]

writes ``{"redraws": N, "run_s": T, "redraws_per_s": R, "pulls_per_s": P,
"window_cpu_s": C, "cpu_per_redraw_ms": M, "exit": code}``: the bridge's redraws (and
its pulls: the batches it asked the worker for) from the start of
the script's last ``fit`` (its warm-up and TensorFlow's import are not counted)
to the end of the run, that time, and the window process's CPU time over it
(all its threads: draining the pipe, ingesting, painting).

With ``TFSTUDIO_WINDOW_PROFILE=PATH`` set, the window's UI thread runs under
cProfile (its clock: the thread's CPU time) from the last ``fit``'s start to the
run's end, and its statistics are written to PATH (read them with
``python -m pstats PATH``).
"""

from __future__ import annotations

import cProfile
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any


class _RedrawSpy:
    """A panel that only notes each redraw (registered last: after every real panel)."""

    EVENTS = ()

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback

    def ingest_steps(self, steps: Sequence[object]) -> None:
        """Steps are the other panels' business."""

    def ingest_event(self, event: object) -> None:
        """So are other events."""

    def refresh(self) -> None:
        """A redraw just updated every panel."""
        self.callback()


def run_window(
    script: str,
    args: Sequence[str] = (),
    on_redraw: Callable[[Any], None] | None = None,
) -> dict[str, float]:
    """Run ``script`` in the window with live plots; statistics of the window's redraws."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from tfstudio.core.channel import Channel
    from tfstudio.core.process import ProcessLauncher
    from tfstudio.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=False)
    settings = QSettings(os.devnull, QSettings.Format.IniFormat)
    window = MainWindow(channel, launcher, settings)
    window.show()
    bridge = window.bridge
    marks: dict[str, float] = {}
    profile_path = os.environ.get("TFSTUDIO_WINDOW_PROFILE")
    profiler: cProfile.Profile | None = None
    if on_redraw is not None:
        bridge.add_panel(_RedrawSpy(lambda: on_redraw(window)))  # refreshed after the others

    def started(_event: object) -> None:  # each fit: the last one is what counts
        marks["t0"] = time.perf_counter()
        marks["c0"] = time.process_time()
        marks["r0"] = bridge.redraws
        marks["p0"] = bridge.pulls
        nonlocal profiler
        if profile_path:
            if profiler is not None:
                profiler.disable()
            # a fresh profile at each fit's start (disable/enable would add to the old
            # one): what is written is the last fit's, the warm-up's plots and tracing not in it
            profiler = cProfile.Profile(time.thread_time)
            profiler.enable()

    def ended(status: str, code: int) -> None:
        if profiler is not None:
            profiler.disable()
        marks["t1"] = time.perf_counter()
        marks["c1"] = time.process_time()
        marks["r1"] = bridge.redraws
        marks["p1"] = bridge.pulls
        marks["exit"] = code
        QTimer.singleShot(0, app.quit)

    bridge.fit_started.connect(started)
    window.run_finished.connect(ended)
    window.open_script(script)
    QTimer.singleShot(0, lambda: window.run_script(tuple(args)))
    app.exec()
    launcher.shutdown()
    bridge.stop()
    if profiler is not None and profile_path:
        profiler.dump_stats(profile_path)
    run_s = marks["t1"] - marks["t0"]
    redraws = marks["r1"] - marks["r0"]
    cpu_s = marks["c1"] - marks["c0"]
    return {
        "redraws": redraws,
        "run_s": run_s,
        "redraws_per_s": redraws / run_s,
        "pulls_per_s": (marks["p1"] - marks["p0"]) / run_s,
        "window_cpu_s": cpu_s,
        "cpu_per_redraw_ms": 1000 * cpu_s / max(1, redraws),
        "exit": marks["exit"],
    }


if __name__ == "__main__":
    stats = run_window(sys.argv[1], sys.argv[3:])
    with open(sys.argv[2], "w") as f:
        json.dump(stats, f)
