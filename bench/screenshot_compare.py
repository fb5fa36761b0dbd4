"""Screenshots of a live run beside two earlier runs of the same script, taken by the app.

Records two runs of the bundled MLP example headless (``tfstudio run``), then opens
the window on the same script with ``--run``: the earlier run of the two is picked
with ``--compare``, the later one is the script's previous run, drawn faintly behind
the live one by itself. Smoothing 0.8. One screenshot on the global-step axis, one
on the step-within-fit axis (each run again, live).

    QT_QPA_PLATFORM=offscreen python bench/screenshot_compare.py docs/compare_runs.png \\
        docs/compare_runs_per_fit.png
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "resources" / "examples" / "mlp_classifier.py"
ARGS = ["--", "--epochs", "4", "--samples", "4000"]
AT_STEP = 300  # of 4 x 100 steps


def main() -> int:
    out_global, out_fit = (os.path.abspath(p) for p in sys.argv[1:3])
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    with tempfile.TemporaryDirectory(prefix="tfstudio-compare-") as tmp:
        runs = Path(tmp) / "runs"
        for _ in range(2):
            cmd = [sys.executable, "-m", "tfstudio", "run", "--logdir", str(runs), str(SCRIPT)]
            subprocess.run([*cmd, *ARGS[1:]], check=True, env=env, stdout=subprocess.DEVNULL)
        first = sorted(p for p in runs.iterdir() if p.is_dir())[0]
        for out, axis in ((out_global, "global"), (out_fit, "fit")):
            cmd = [sys.executable, "-m", "tfstudio", str(SCRIPT), "--run", "--quit-when-done"]
            cmd += ["--logdir", str(runs), "--compare", str(first), "--smoothing", "0.8"]
            cmd += ["--x-axis", axis, "--screenshot", out, "--screenshot-at-step", str(AT_STEP)]
            subprocess.run([*cmd, *ARGS], check=True, env=env)
            print(f"screenshot: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
