"""What watching costs the training process: its CPU time per step headless vs in the window.

Runs ``bench/bench_model.py`` as a script (a small MLP, 2,000 timed steps) through tfstudio as
separate processes, interleaved round by round: ``tfstudio run`` (headless) and
the window offscreen with live plots, redrawing at the rate the bridge chooses
for this machine (see ``choose_redraw_hz`` in ui/bridge.py: fewer redraws when
the run leaves no core to spare). Both train in a worker process; the script
measures its own CPU time per step (all its threads), which the window's
painting, in another process, should not touch. The window run also reports
how often the window redrew during the run, and the window process's own CPU
(its share of one core, and per redraw).

    python bench/window_overhead.py [--rounds 6]

A third arm in every round is the control: the headless run again, beside a
process that only burns CPU, as much as the window took in the latest window round
and in the same rhythm (its CPU per redraw, at its redraw rate), drawing nothing.
``control: worker cpu per step busy/headless = C`` is what any process as busy as
the window costs the training on this machine; the window's own way of working
(its threads, wake-ups, pulls) is what R has beyond C.

Ends with ``window: worker cpu per step window/headless = R`` (median of the rounds'
ratios; target R <= 1.03) and the window's redraws per second.
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
SCRIPT = ROOT / "bench" / "bench_model.py"  # run as a script: the MLP reports its speed
DRIVER = ROOT / "bench" / "window_driver.py"
BUSY = """
import sys, time
busy, period = float(sys.argv[1]), float(sys.argv[2])
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < busy:
        pass
    time.sleep(max(0.0, period - (time.perf_counter() - t)))
"""


def process_cpu_s(pid: int) -> float:
    """CPU seconds a process has used (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(mode: str, busy: tuple[float, float] = (0.0, 1.0)) -> tuple[dict, dict | None]:
    """One run of the script: ``headless``, ``window`` or ``busy`` (headless beside a
    process burning ``busy[0]`` seconds of CPU every ``busy[1]`` seconds).

    Returns the script's own figures and the other process's: the window's statistics
    (``window_driver.py``), ``{"share": ...}`` (the busy process's CPU share of a core),
    or None (headless alone).
    """
    burner = None
    if mode == "busy":
        burner = subprocess.Popen([sys.executable, "-c", BUSY, str(busy[0]), str(busy[1])])
        started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rate.json"
        stats = Path(tmp) / "window.json"
        env = dict(os.environ, TFSTUDIO_BENCH_OUT=str(out), QT_QPA_PLATFORM="offscreen")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        if mode == "window":
            cmd = [sys.executable, str(DRIVER), str(SCRIPT), str(stats)]
        else:
            cmd = [sys.executable, "-m", "tfstudio", "run", str(SCRIPT)]
        try:
            subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=True)
        finally:
            if burner is not None:
                share = process_cpu_s(burner.pid) / (time.perf_counter() - started)
                burner.kill()
                burner.wait()
        other = None
        if mode == "window":
            other = json.loads(stats.read_text())
        elif burner is not None:
            other = {"share": share}
        return json.loads(out.read_text()), other


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    cpu: dict[str, list[float]] = {"headless": [], "window": [], "busy": []}
    rate: dict[str, list[float]] = {"headless": [], "window": [], "busy": []}
    busy = (0.020, 1 / 12)  # until a window round measured it: ~20 ms of CPU, 12 times a second
    busy_share: list[float] = []
    redraws: list[float] = []
    pulls: list[float] = []  # the batches the window asked the worker for, a second
    window_cpu: list[float] = []  # the window process's CPU seconds per second of the run
    per_redraw: list[float] = []
    for r in range(args.rounds):
        modes = ["headless", "window", "busy"]
        for mode in modes[r % 3 :] + modes[: r % 3]:  # each arm first, second and third in turn
            result, window = measure(mode, busy)
            cpu[mode].append(result["cpu_per_step"])
            rate[mode].append(result["rate"])
            if mode == "busy":
                busy_share.append(window["share"])
            elif window is not None:
                redraws.append(window["redraws_per_s"])
                pulls.append(window["pulls_per_s"])
                window_cpu.append(window["window_cpu_s"] / window["run_s"])
                per_redraw.append(window["cpu_per_redraw_ms"])
                rate_hz = max(window["redraws_per_s"], 1.0)
                busy = (window_cpu[-1] / rate_hz, 1 / rate_hz)
        print(
            f"round {r + 1}: "
            + "  ".join(
                f"{m} {rate[m][-1]:6.1f} steps/s, {cpu[m][-1] * 1e6:5.0f} us CPU/step" for m in cpu
            )
            + f"  window redraws {redraws[-1]:.1f}/s, window CPU {window_cpu[-1]:.0%} of a core"
            + f", busy process {busy_share[-1]:.0%}",
            flush=True,
        )
    ratio = statistics.median(w / h for w, h in zip(cpu["window"], cpu["headless"], strict=True))
    control = statistics.median(b / h for b, h in zip(cpu["busy"], cpu["headless"], strict=True))
    speed = statistics.median(w / h for w, h in zip(rate["window"], rate["headless"], strict=True))
    print(
        f"medians: headless {statistics.median(rate['headless']):.1f} steps/s, "
        f"window {statistics.median(rate['window']):.1f} steps/s (ratio {speed:.3f}); "
        f"window redraws {statistics.median(redraws):.1f}/s during the run, pulls "
        f"{statistics.median(pulls):.1f}/s (the worker's pump beats when pulled)"
    )
    print(
        f"window process: {statistics.median(window_cpu):.0%} of a core during the run, "
        f"{statistics.median(per_redraw):.1f} ms CPU per redraw (everything it does, shared "
        f"out); machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"control: worker cpu per step busy/headless = {control:.3f} (a process burning "
        f"{statistics.median(busy_share):.0%} of a core in the window's rhythm, drawing nothing)"
    )
    print(
        f"window: worker cpu per step window/headless = {ratio:.3f} "
        f"(redraws {statistics.median(redraws):.1f}/s)"
    )


if __name__ == "__main__":
    main()
