"""What a user pays for watching: steps/s of the same script plain, headless and in the window.

Runs ``bench/mlp_steps.py`` (a small MLP, ~2k steps) as separate processes,
interleaved round by round: ``python script``, ``tfstudio run script`` and
``tfstudio script --run --quit-when-done`` (the window, offscreen, plotting
live). The script measures its own steps/s around ``fit``, so start-up is not
counted.

    python bench/window_overhead.py [--rounds 5]

Ends with one line: ``window: window/plain = R1, headless/plain = R2`` (medians
of each round's ratios).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "mlp_steps.py"
MODES = {
    "plain": [sys.executable, str(SCRIPT)],
    "headless": [sys.executable, "-m", "tfstudio", "run", str(SCRIPT)],
    "window": [sys.executable, str(ROOT / "main.py"), str(SCRIPT), "--run", "--quit-when-done"],
}


def measure(mode: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rate"
        env = dict(os.environ, TFSTUDIO_BENCH_OUT=str(out), QT_QPA_PLATFORM="offscreen")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        subprocess.run(MODES[mode], cwd=ROOT, env=env, capture_output=True, check=True)
        return float(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {m: [] for m in MODES}
    order = list(MODES)
    for r in range(args.rounds):
        for mode in order if r % 2 == 0 else order[::-1]:
            rates[mode].append(measure(mode))
        print(
            f"round {r + 1}: " + "  ".join(f"{m} {rates[m][-1]:6.1f} steps/s" for m in MODES),
            flush=True,
        )
    window = statistics.median(w / p for w, p in zip(rates["window"], rates["plain"], strict=True))
    headless = statistics.median(
        h / p for h, p in zip(rates["headless"], rates["plain"], strict=True)
    )
    print("medians: " + "  ".join(f"{m} {statistics.median(v):.1f}" for m, v in rates.items()))
    print(f"window: window/plain = {window:.3f}, headless/plain = {headless:.3f}")


if __name__ == "__main__":
    main()
