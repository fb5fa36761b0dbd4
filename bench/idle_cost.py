"""What a live run costs while no step comes: the window's asks, the worker's beats.

A script often stops stepping while it runs: between fits, in its own evaluation, in
a long ``tf.data`` warm-up, or paused by the user. ``bench/idle_steps.py`` trains a
little, sleeps ``--idle`` seconds, trains a little again, in the real window
(offscreen, as ``window_driver.py`` runs it). Over the quiet stretch (its middle:
half a second off each end) it reports, per second: the training process's CPU (all
its threads: the pump, the pipe's sender, the recorder), the window process's CPU,
the pulls the window sent and the redraws it made.

Modes, one process each, interleaved round by round: ``quiet`` (this tree: the
window stops asking once nothing came for ``ProcessLauncher.quiet_pull_s``, and its
bridge rests: a tick every ``QUIET_TICK_S``, no pull planned), ``unrested`` (it stops
asking but ticks and plans pulls at the redraw rate: before 2026-11-27's sixth stop)
and ``always`` (it asks before every redrawing tick, as before 2026-11-27).

With ``--gpu-figures`` the worker sends made-up GPU memory figures every second, as
its sampler does on a GPU machine, and the modes are ``quiet`` and ``any-batch`` (any
batch ends the quiet, those figures too: the rule before 2026-11-27's sixth stop).

With ``--no-run`` it measures the window with no run at all (opened, then left alone:
its CPU over ``--idle`` seconds after a 3 s settling), modes ``rested`` (this tree: the
bridge ticks every ``QUIET_TICK_S`` once nothing came for ``IDLE_REST_S``) and
``unrested`` (30 ticks a second throughout: before 2026-11-27's sixth stop).

    python bench/idle_cost.py [--rounds 4] [--idle 6] [--gpu-figures | --no-run]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "idle_steps.py"
MODES = ("quiet", "unrested", "always")
EDGE_S = 0.5  # left off each end of the quiet stretch


def one(mode: str, out: Path) -> None:
    """Run the script in the window; write the window's samples and the script's figures."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT / "bench"))
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    from window_driver import run_window

    from tfstudio.core import process
    from tfstudio.core.process import ProcessLauncher
    from tfstudio.ui.bridge import Bridge

    if mode in ("always", "unrested"):
        Bridge._rest_if_quiet = lambda self: False  # type: ignore[method-assign]
    if mode == "always":
        ProcessLauncher.quiet_pull_s = None
    elif mode == "any-batch":
        process.ROUTINE_EVENTS = frozenset()
    samples: list[tuple[float, float, int, int]] = []
    bridges: list[object] = []

    def sample() -> None:
        if bridges:
            b = bridges[0]
            samples.append((time.perf_counter(), time.process_time(), b.pulls, b.redraws))

    app = QApplication.instance() or QApplication([])  # before the timer  # noqa: F841
    timer = QTimer()
    timer.setInterval(100)
    timer.timeout.connect(sample)
    timer.start()
    run_window(str(SCRIPT), on_redraw=lambda w: bridges or bridges.append(w.bridge))
    out.write_text(json.dumps({"samples": samples}))


def empty_window(mode: str, seconds: float) -> float:
    """The window's CPU (ms a second) with no run, left alone for ``seconds``."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    import tfstudio.ui.bridge as bridge_module
    from tfstudio.core.channel import Channel
    from tfstudio.core.process import ProcessLauncher
    from tfstudio.ui.main_window import MainWindow

    if mode == "unrested":
        bridge_module.IDLE_REST_S = float("inf")
    app = QApplication.instance() or QApplication([])
    channel = Channel()
    launcher = ProcessLauncher(channel, keep_spare=False)
    window = MainWindow(channel, launcher, QSettings(os.devnull, QSettings.Format.IniFormat))
    window.show()
    marks: list[tuple[float, float]] = []
    mark = lambda: marks.append((time.perf_counter(), time.process_time()))  # noqa: E731
    QTimer.singleShot(3000, mark)
    QTimer.singleShot(round(1000 * (3 + seconds)), lambda: (mark(), app.quit()))
    app.exec()
    launcher.shutdown()
    (t0, c0), (t1, c1) = marks
    return 1000 * (c1 - c0) / (t1 - t0)


def stretch(samples: list[list[float]], t0: float, t1: float) -> dict[str, float]:
    """Per second over [t0, t1]: the window's CPU, pulls and redraws (nearest samples)."""
    inside = [s for s in samples if t0 <= s[0] <= t1]
    (a, b) = inside[0], inside[-1]
    dt = b[0] - a[0]
    return {
        "window_ms": 1000 * (b[1] - a[1]) / dt,
        "pulls": (b[2] - a[2]) / dt,
        "redraws": (b[3] - a[3]) / dt,
    }


def measure(mode: str, idle: float, gpu_figures: bool = False) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        script_out = Path(tmp) / "script.json"
        window_out = Path(tmp) / "window.json"
        env = dict(os.environ, TFSTUDIO_BENCH_OUT=str(script_out), QT_QPA_PLATFORM="offscreen")
        env["TFSTUDIO_BENCH_IDLE"] = str(idle)
        env["TFSTUDIO_BENCH_GPU_FIGURES"] = "1" if gpu_figures else "0"
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        cmd = [sys.executable, __file__, "--one", mode, str(window_out)]
        subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=True)
        script = json.loads(script_out.read_text())
        samples = json.loads(window_out.read_text())["samples"]
    t0, t1 = script["t0"] + EDGE_S, script["t1"] - EDGE_S
    result = stretch(samples, t0, t1)
    result["worker_ms"] = 1000 * script["cpu_s"] / (script["t1"] - script["t0"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--idle", type=float, default=6.0)
    parser.add_argument(
        "--gpu-figures", action="store_true", help="the worker sends GPU memory figures"
    )
    parser.add_argument("--no-run", action="store_true", help="the window with no run")
    parser.add_argument("--one", nargs=2, metavar=("MODE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        if args.no_run:
            Path(args.one[1]).write_text(json.dumps(empty_window(args.one[0], args.idle)))
        else:
            one(args.one[0], Path(args.one[1]))
        return
    if args.no_run:
        no_run(args.rounds, args.idle)
        return
    modes = ("quiet", "any-batch") if args.gpu_figures else MODES
    results: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    for r in range(args.rounds):
        for mode in modes if r % 2 == 0 else modes[::-1]:
            res = measure(mode, args.idle, args.gpu_figures)
            results[mode].append(res)
            print(
                f"round {r + 1} {mode:>9}: training process {res['worker_ms']:5.2f} ms CPU/s, "
                f"window {res['window_ms']:5.2f} ms CPU/s, {res['pulls']:4.1f} pulls/s, "
                f"{res['redraws']:4.1f} redraws/s",
                flush=True,
            )
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; quiet {args.idle} s")
    for mode, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"idle ({mode}): training process {med['worker_ms']:.2f} ms CPU a second, "
            f"window {med['window_ms']:.2f} ms CPU a second, {med['pulls']:.1f} pulls/s, "
            f"{med['redraws']:.1f} redraws/s"
        )


def no_run(rounds: int, idle: float) -> None:
    """The window with no run, modes interleaved round by round."""
    got: dict[str, list[float]] = {"rested": [], "unrested": []}
    for r in range(rounds):
        for mode in list(got) if r % 2 == 0 else list(got)[::-1]:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "window.json"
                cmd = [sys.executable, __file__, "--no-run", "--idle", str(idle)]
                cmd += ["--one", mode, str(out)]
                env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
                subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=True)
                got[mode].append(json.loads(out.read_text()))
            print(f"round {r + 1} {mode:>8}: window {got[mode][-1]:5.2f} ms CPU/s", flush=True)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {idle} s alone")
    for mode, values in got.items():
        print(f"no run ({mode}): window {statistics.median(values):.2f} ms CPU a second")


if __name__ == "__main__":
    main()
