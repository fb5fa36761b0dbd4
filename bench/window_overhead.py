"""What watching costs the training process: its CPU time per step headless vs in the window.

Runs ``bench/mlp_steps.py`` (a small MLP, 2,000 timed steps) through tfstudio as
separate processes, interleaved round by round: ``tfstudio run`` (headless) and
the window offscreen with live plots, redrawing at the rate the bridge chooses
for this machine (see ``choose_redraw_hz`` in ui/bridge.py: fewer redraws when
the run leaves no core to spare). Both train in a worker process; the script
measures its own CPU time per step (all its threads), which the window's
painting, in another process, should not touch. The window run also reports
how often the window redrew during the run, and the window process's own CPU
(its share of one core, and per redraw).

    python bench/window_overhead.py [--rounds 6]

Ends with one line: ``window: worker cpu per step window/headless = R`` (median of
the rounds' ratios; target R <= 1.03) and the window's redraws per second.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "mlp_steps.py"
DRIVER = ROOT / "bench" / "window_driver.py"


def measure(mode: str) -> tuple[dict, dict | None]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rate.json"
        stats = Path(tmp) / "window.json"
        env = dict(os.environ, TFSTUDIO_BENCH_OUT=str(out), QT_QPA_PLATFORM="offscreen")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        if mode == "headless":
            cmd = [sys.executable, "-m", "tfstudio", "run", str(SCRIPT)]
        else:
            cmd = [sys.executable, str(DRIVER), str(SCRIPT), str(stats)]
        subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=True)
        window = json.loads(stats.read_text()) if mode == "window" else None
        return json.loads(out.read_text()), window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    cpu: dict[str, list[float]] = {"headless": [], "window": []}
    rate: dict[str, list[float]] = {"headless": [], "window": []}
    redraws: list[float] = []
    window_cpu: list[float] = []  # the window process's CPU seconds per second of the run
    per_redraw: list[float] = []
    for r in range(args.rounds):
        for mode in ("headless", "window") if r % 2 == 0 else ("window", "headless"):
            result, window = measure(mode)
            cpu[mode].append(result["cpu_per_step"])
            rate[mode].append(result["rate"])
            if window is not None:
                redraws.append(window["redraws_per_s"])
                window_cpu.append(window["window_cpu_s"] / window["run_s"])
                per_redraw.append(window["cpu_per_redraw_ms"])
        print(
            f"round {r + 1}: "
            + "  ".join(
                f"{m} {rate[m][-1]:6.1f} steps/s, {cpu[m][-1] * 1e6:5.0f} us CPU/step" for m in cpu
            )
            + f"  window redraws {redraws[-1]:.1f}/s, window CPU {window_cpu[-1]:.0%} of a core",
            flush=True,
        )
    ratio = statistics.median(w / h for w, h in zip(cpu["window"], cpu["headless"], strict=True))
    speed = statistics.median(w / h for w, h in zip(rate["window"], rate["headless"], strict=True))
    print(
        f"medians: headless {statistics.median(rate['headless']):.1f} steps/s, "
        f"window {statistics.median(rate['window']):.1f} steps/s (ratio {speed:.3f}); "
        f"window redraws {statistics.median(redraws):.1f}/s during the run"
    )
    print(
        f"window process: {statistics.median(window_cpu):.0%} of a core during the run, "
        f"{statistics.median(per_redraw):.1f} ms CPU per redraw (everything it does, shared "
        f"out); machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"window: worker cpu per step window/headless = {ratio:.3f} "
        f"(redraws {statistics.median(redraws):.1f}/s)"
    )


if __name__ == "__main__":
    main()
