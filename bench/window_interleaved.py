"""The window's redraws' cost to training, in one run: phases with and without them, interleaved.

``window_overhead.py`` compares separate runs (headless, then the window), and on this
VM the same run's speed jumps between regimes for seconds at a time: its rounds differ
by more than the effect. Here one run of ``bench/bench_model.py`` as a script (``--steps``, 20,000
by default) trains in the real window (offscreen, as ``window_driver.py`` drives it),
and from the start of its timed ``fit`` the window switches every ``--phase`` seconds
between three kinds of phases, in a fresh random order each round:

- **off**: events drained and ingested as always, no redraws;
- **on** and **on'**: redraws at the bridge's live pace, as every run has them.

At each phase's ends it reads the worker's CPU time (all its threads, ``psutil``) and
its step count. R = CPU per step in on-phases / in off-phases: what the window's
redraws (panels' refresh and Qt's paint, on the other core or this one) cost the
training process. The control on'/on shows the method's resolution. Ingest, the pipe
and the window's other work run in every phase, so they are not in R.

    python bench/window_interleaved.py [--phase 1.0] [--steps 20000]

Ends: ``control: on'/on = C`` and ``window: worker cpu per step redrawing/not = R (redraws
X/s)``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "bench_model.py"  # run as a script: the MLP reports its speed
KINDS = ("off", "on", "on'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", type=float, default=1.0, help="seconds per phase")
    parser.add_argument("--steps", type=int, default=20_000, help="steps of the timed fit")
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    out = tempfile.TemporaryDirectory(prefix="tfstudio-bench-")
    os.environ["TFSTUDIO_BENCH_OUT"] = str(Path(out.name) / "rate.json")
    os.environ["TFSTUDIO_BENCH_STEPS"] = str(args.steps)

    import psutil
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from tfstudio.core.channel import Channel
    from tfstudio.core.process import ProcessLauncher
    from tfstudio.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    launcher = ProcessLauncher(Channel(), script_cwd=True, keep_spare=False)
    window = MainWindow(
        launcher.channel, launcher, QSettings(os.devnull, QSettings.Format.IniFormat)
    )
    window.show()
    bridge = window.bridge
    rng = random.Random(0)
    fits = [0]
    state: dict = {"kind": None, "order": []}
    phases: dict[str, list[tuple[float, int, float, int]]] = {k: [] for k in KINDS}

    def sample() -> tuple[float, int, float, int]:
        worker = launcher.current
        times = psutil.Process(launcher.pid()).cpu_times()
        steps = worker.global_step if worker is not None else 0
        return times.user + times.system, steps, time.perf_counter(), bridge.redraws

    def switch() -> None:
        if state["kind"] is not None:
            start = state["start"]
            end = sample()
            phases[state["kind"]].append(
                (end[0] - start[0], end[1] - start[1], end[2] - start[2], end[3] - start[3])
            )
        if not state["order"]:
            state["order"] = rng.sample(KINDS, len(KINDS))
        kind = state["order"].pop()
        if kind == "off":
            bridge._due = lambda now: False  # noqa: SLF001 - no redraw while live
        else:
            bridge.__dict__.pop("_due", None)
        state["kind"] = kind
        state["start"] = sample()

    timer = QTimer()
    timer.timeout.connect(switch)

    def started(_event: object) -> None:
        fits[0] += 1
        if fits[0] == 2:  # the timed fit (the first is the script's warm-up)
            switch()
            timer.start(int(args.phase * 1000))

    def ended(status: str, code: int) -> None:
        timer.stop()
        bridge.__dict__.pop("_due", None)
        QTimer.singleShot(0, app.quit)

    bridge.fit_started.connect(started)
    window.run_finished.connect(ended)
    window.open_script(str(SCRIPT))
    QTimer.singleShot(0, lambda: window.run_script(()))
    app.exec()
    launcher.shutdown()
    bridge.stop()

    def per_step(kind: str) -> float:
        rows = [r for r in phases[kind][1:] if r[1] > 0]  # the first round: set-up
        return sum(r[0] for r in rows) / sum(r[1] for r in rows)

    def redraw_rate(kind: str) -> float:
        rows = phases[kind][1:]
        return sum(r[3] for r in rows) / sum(r[2] for r in rows)

    def ratio_of_pairs(a: str, b: str) -> float:
        """Median of per-round ratios (each round has one phase of every kind)."""
        pairs = [
            (x[0] / x[1]) / (y[0] / y[1])
            for x, y in zip(phases[a][1:], phases[b][1:], strict=False)
            if x[1] and y[1]
        ]
        return statistics.median(pairs)

    on = sum(1 for r in phases["on"][1:] if r[1] > 0)
    print(
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
        f"{on} rounds of {args.phase:.1f} s phases"
    )
    for kind in KINDS:
        print(
            f"{kind:4s} {per_step(kind) * 1e6:7.0f} us worker CPU/step, "
            f"{redraw_rate(kind):5.1f} redraws/s"
        )
    both_on = (per_step("on") + per_step("on'")) / 2
    r = both_on / per_step("off")
    print(
        f"medians of rounds: on/off {ratio_of_pairs('on', 'off'):.3f}, "
        f"on'/on {ratio_of_pairs(KINDS[2], 'on'):.3f}"
    )
    print(f"control: on'/on = {per_step(KINDS[2]) / per_step('on'):.3f}")
    redraws = (redraw_rate("on") + redraw_rate("on'")) / 2
    print(f"window: worker cpu per step redrawing/not = {r:.3f} (redraws {redraws:.1f}/s)")
    out.cleanup()
    sys.exit(0)


if __name__ == "__main__":
    main()
