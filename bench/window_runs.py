"""Many runs in one window (offscreen): the window's resident memory after each run.

Used by ``soak.py --window-runs N`` (as a process, so only the window's own
memory is measured):

    python bench/window_runs.py N OUT.json [--script PATH] [--logdir DIR]

Runs a tiny script (a 2-step fit, recorded into ``--logdir``) N times in one
``MainWindow`` with a launcher that keeps a warm spare, as the app does. After
each run ends the window settles (events processed for a moment, then a full
garbage collection, so what is measured is what stays) and its RSS is noted.
Writes ``{"rss_mb": [...], "seconds": T, "exits": [...], "live": {...}}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

TINY_SCRIPT = """\
import numpy as np
import keras

x = np.zeros((8, 2), "float32")
y = np.ones((8, 1), "float32")
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y, batch_size=4, epochs=1, verbose=0)
print("two steps done")
"""
SETTLE_S = 0.5  # after a run ends: the last frames, the runs list, the previous run read


def rss_mb() -> float:
    """This process's resident memory in MB (Linux: /proc/self/statm)."""
    with open("/proc/self/statm", encoding="ascii") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def live_counts(window: object) -> dict[str, int]:
    """How many of the things that used to pile up run after run are alive now."""
    from PySide6.QtCore import QObject

    from tfstudio.core.run_store import RunStore

    stores = sum(isinstance(o, RunStore) for o in gc.get_objects())
    return {
        "run_stores": stores,
        "pinned_runs": len(window.runs.pinned),
        "console_folds": len(window.console.folds),
        "console_blocks": window.console.view.document().blockCount(),
        "qobjects": len(window.findChildren(QObject)),
    }


def run_many(runs: int, script: str, logdir: str) -> dict:
    """Run ``script`` ``runs`` times in one window; RSS after each run and what stays alive."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QSettings
    from PySide6.QtWidgets import QApplication

    from tfstudio.core.channel import Channel
    from tfstudio.core.process import ProcessLauncher
    from tfstudio.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True, keep_spare=True)
    window = MainWindow(channel, launcher, QSettings(os.devnull, QSettings.Format.IniFormat))
    window.run_options = dataclasses.replace(window.run_options, logdir=logdir)
    window.show()
    if not window.open_script(script):
        raise SystemExit(f"cannot open {script}: {window.console.text()[-500:]}")
    launcher.prepare()
    exits: list[int] = []
    rss: list[float] = []
    loop = QEventLoop()
    window.run_finished.connect(lambda _status, code: (exits.append(code), loop.quit()))
    started = time.perf_counter()
    try:
        for i in range(runs):
            if not window.run_script(()):
                raise SystemExit(f"run {i + 1} did not start: {window.console.text()[-500:]}")
            loop.exec()
            settle_until = time.monotonic() + SETTLE_S
            while time.monotonic() < settle_until:
                app.processEvents()
                time.sleep(0.02)
            gc.collect()
            rss.append(rss_mb())
            print(f"window run {i + 1}/{runs}: rss {rss[-1]:.1f} MB", flush=True)
        live = live_counts(window)
    finally:
        launcher.shutdown()
        window.bridge.stop()
        window.close()
    return {
        "rss_mb": rss,
        "exits": exits,
        "seconds": time.perf_counter() - started,
        "live": live,
    }


def main() -> None:
    """Run the window N times and write the RSS figures as JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", type=int)
    p.add_argument("out")
    p.add_argument("--script", help="the script to run (default: a 2-step fit)")
    p.add_argument("--logdir", help="where runs record (default: a temporary folder)")
    ns = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="tfstudio-window-runs-") as tmp:
        script = ns.script
        if script is None:
            script = str(Path(tmp) / "two_steps.py")
            Path(script).write_text(TINY_SCRIPT)
        result = run_many(ns.runs, script, ns.logdir or str(Path(tmp) / "runs"))
    Path(ns.out).write_text(json.dumps(result))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
