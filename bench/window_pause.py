"""How soon Pause and Resume show in the real window, with the bridge resting or not.

A run of ``bench/mlp_steps.py`` (20,000 steps) in the window (offscreen, as
``window_driver.py`` runs it). From its timed fit's start, every ``--every`` seconds the
window presses Pause (the control panel's ``toggle_pause``, as the toolbar does), waits
until the panel shows the run paused, keeps it paused ``--paused`` seconds (long enough
for the run to go quiet and the bridge to rest: ``Bridge.resting``), then presses
Resume and waits until a redraw shows a step past the pause. Per press it reports:

- **pause shown**: the press to the first redraw after the panel took the run's
  ``paused`` state;
- **resume shown**: the press to the first redraw holding a step trained after it;
- whether the bridge was resting when Resume was pressed.

Modes, one process each, interleaved round by round: ``rested`` (this tree: a quiet
run's bridge ticks every ``QUIET_TICK_S`` and a command wakes it) and ``unrested`` (the
bridge ticks at the redraw rate while the run is live: before 2026-11-27's sixth stop).

    python bench/window_pause.py [--rounds 3] [--presses 4] [--paused 2] [--every 1.5]
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
SCRIPT = ROOT / "bench" / "mlp_steps.py"
MODES = ("rested", "unrested")


def one(mode: str, out: Path, presses: int, paused_s: float, every_s: float) -> None:
    """Run the script in the window, press Pause and Resume; write the latencies."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT / "bench"))
    from PySide6.QtCore import QTimer
    from window_driver import run_window

    from tfstudio.ui.bridge import Bridge

    if mode == "unrested":
        Bridge._rest_if_quiet = lambda self: False  # type: ignore[method-assign]
    results: list[dict[str, float]] = []
    state: dict[str, object] = {"phase": "wait", "window": None}

    def on_redraw(window: object) -> None:  # after every panel's refresh
        now = time.perf_counter()
        state["window"] = window
        control, bridge = window.control, window.bridge  # type: ignore[attr-defined]
        phase = state["phase"]
        if phase == "pausing" and control.paused:
            state["row"]["pause_s"] = now - state["pressed"]  # type: ignore[index]
            state["phase"] = "paused"
            QTimer.singleShot(round(1000 * paused_s), resume)
        elif phase == "resuming" and bridge.steps_consumed > state["steps"]:
            row = state["row"]
            row["resume_s"] = now - state["pressed"]  # type: ignore[index]
            results.append(row)  # type: ignore[arg-type]
            state["phase"] = "wait"
            if len(results) < presses:
                QTimer.singleShot(round(1000 * every_s), pause)
            else:
                out.write_text(json.dumps(results))
                window.launcher.stop()  # type: ignore[attr-defined]

    def pause() -> None:
        window = state["window"]
        state["row"] = {}
        state["phase"] = "pausing"
        state["pressed"] = time.perf_counter()
        window.control.toggle_pause()  # type: ignore[attr-defined]

    def resume() -> None:
        window = state["window"]
        bridge = window.bridge  # type: ignore[attr-defined]
        state["row"]["rested"] = float(bridge.resting)  # type: ignore[index]
        state["steps"] = bridge.steps_consumed
        state["phase"] = "resuming"
        state["pressed"] = time.perf_counter()
        window.control.toggle_pause()  # type: ignore[attr-defined]

    def started(_event: object) -> None:
        if state["phase"] == "wait" and not results and "armed" not in state:
            state["armed"] = True
            QTimer.singleShot(round(1000 * every_s), pause)

    def hook(window: object) -> None:
        if state["window"] is None:
            state["window"] = window
            window.bridge.fit_started.connect(started)  # type: ignore[attr-defined]
        on_redraw(window)

    run_window(str(SCRIPT), on_redraw=hook)


def measure(mode: str, presses: int, paused_s: float, every_s: float) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "presses.json"
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TFSTUDIO_BENCH_STEPS="20000")
        env["TFSTUDIO_BENCH_OUT"] = str(Path(tmp) / "rate.json")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        cmd = [sys.executable, __file__, "--one", mode, str(out)]
        cmd += ["--presses", str(presses), "--paused", str(paused_s), "--every", str(every_s)]
        subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=False)
        return json.loads(out.read_text()) if out.exists() else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--presses", type=int, default=4)
    parser.add_argument("--paused", type=float, default=2.0)
    parser.add_argument("--every", type=float, default=1.5)
    parser.add_argument("--one", nargs=2, metavar=("MODE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.one[0], Path(args.one[1]), args.presses, args.paused, args.every)
        return
    rows: dict[str, list[dict]] = {m: [] for m in MODES}
    for r in range(args.rounds):
        for mode in MODES if r % 2 == 0 else MODES[::-1]:
            got = measure(mode, args.presses, args.paused, args.every)
            rows[mode] += got
            print(
                f"round {r + 1} {mode:>8}: "
                + "  ".join(f"{g['pause_s'] * 1000:.0f}/{g['resume_s'] * 1000:.0f}" for g in got)
                + " ms (pause/resume shown)",
                flush=True,
            )
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    for mode, got in rows.items():
        if not got:
            print(f"{mode}: no press measured")
            continue
        print(
            f"{mode}: pause shown median {statistics.median(g['pause_s'] for g in got) * 1000:.0f}"
            f" ms, resume shown median {statistics.median(g['resume_s'] for g in got) * 1000:.0f}"
            f" ms (max {max(g['resume_s'] for g in got) * 1000:.0f}), bridge resting at "
            f"{sum(g['rested'] for g in got):.0f} of {len(got)} resumes"
        )


if __name__ == "__main__":
    main()
