"""Many runs in one window, views switched and runs picked while data arrives: does it ever hang?

The window as run_app builds it (garbage collected on the GUI thread, the stall
watchdog on), a real worker per run, a small fit script run ``--runs`` times in a
row. While each run streams, a driver timer switches the inspector's views every
few hundred milliseconds and picks a random pair of earlier runs. A 20 ms GUI timer
records the longest pause of the GUI thread; the watchdog reports any stall (5 s)
with every thread's stack on stderr.

    QT_QPA_PLATFORM=offscreen python bench/window_stress.py [--runs 5] [--steps 400]

Ends with one line: ``window_stress: R runs, V view switches, P picks, longest GUI
pause M ms, stalls S`` and exits non-zero on a stall or a run that did not finish.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = """
import sys
import numpy as np, keras
steps = int(sys.argv[1])
x = np.random.rand(steps * 16, 8).astype("float32"); y = (x.sum(1) > 4).astype("int32")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(2)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(x, y, batch_size=16, epochs=2, validation_split=0.1, verbose=0)
"""

VIEWS = ("weights", "gradients", "outputs", "system")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=400, help="steps per epoch of each run")
    args = parser.parse_args(argv)

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from tfstudio.core.channel import Channel
    from tfstudio.core.options import RunOptions
    from tfstudio.core.process import ProcessLauncher
    from tfstudio.ui import guards
    from tfstudio.ui.main_window import MainWindow

    work = Path(tempfile.mkdtemp(prefix="tfstudio-stress-"))
    script = work / "stress_fit.py"
    script.write_text(SCRIPT)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    collector, watchdog = guards.install(app)
    channel = Channel()
    launcher = ProcessLauncher(channel, script_cwd=True)
    window = MainWindow(channel, launcher)
    window.run_options = RunOptions(logdir=str(work / "runs"))
    window.resize(1400, 900)
    window.show()
    launcher.prepare()
    window.open_script(str(script))

    rng = random.Random(0)
    state = {"runs": 0, "finished": 0, "views": 0, "picks": 0, "gap": 0.0, "last": 0.0}

    def tick() -> None:
        now = time.perf_counter()
        if state["last"]:
            state["gap"] = max(state["gap"], now - state["last"])
        state["last"] = now

    def drive() -> None:
        if not window.is_running():
            return
        window.show_view(VIEWS[state["views"] % len(VIEWS)])
        state["views"] += 1
        names = [window.runs.tree.topLevelItem(i).text(0)
                 for i in range(window.runs.tree.topLevelItemCount())]  # fmt: skip
        if len(names) >= 2 and state["views"] % 2 == 0:
            window.runs.select(rng.sample(names, 2))
            state["picks"] += 1

    def next_run() -> None:
        if state["runs"] >= args.runs:
            app.exit(0)
            return
        state["runs"] += 1
        window.run_script([str(args.steps)])

    def on_finished(status: str, _code: int) -> None:
        state["finished"] += status == "finished"
        QTimer.singleShot(300, next_run)

    window.run_finished.connect(on_finished)
    beat = QTimer()
    beat.timeout.connect(tick)
    beat.start(20)
    driver = QTimer()
    driver.timeout.connect(drive)
    driver.start(250)
    QTimer.singleShot(0, next_run)
    app.exec()
    watchdog.close()
    launcher.shutdown()
    collector.uninstall()
    print(
        f"window_stress: {state['finished']}/{args.runs} runs finished, {state['views']} view "
        f"switches, {state['picks']} picks, longest GUI pause {state['gap'] * 1000:.0f} ms, "
        f"stalls {watchdog.stalls}"
    )
    return 0 if watchdog.stalls == 0 and state["finished"] == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
