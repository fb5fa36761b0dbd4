"""What live smoothing costs the metrics view, measured side by side in one process.

Feeds a real ``MetricsPanel`` (offscreen, no window) the frames a 10k steps/s run
sends at 30 Hz (334 steps per frame, 12 per-step keys, all 12 plots shown: the worst
case; hidden plots smooth nothing), through its ingest and refresh (every frame
redraws: no redraw budget here), alternately with smoothing off (0) and on (0.6),
several rounds, and reports the median milliseconds per frame of each and their ratio.
Also the cost of moving the slider (re-smoothing every stored curve from its store).

    QT_QPA_PLATFORM=offscreen python bench/smoothing_cost.py [--frames 300] [--rounds 3]

The last line: ``smoothing: frame ms off = X, on = Y (ratio R); slider move ms = Z``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PySide6.QtWidgets import QApplication  # noqa: E402

from tfstudio.core.events import FitStarted, ModelSummary, RunStarted, StepEnded  # noqa: E402
from tfstudio.ui.panels.metrics import MetricsPanel  # noqa: E402

KEYS = ("loss", *(f"metric_{i:02d}" for i in range(1, 12)))
STEPS_PER_FRAME = 334  # 10,000 steps/s at 30 frames/s


def frames(n_frames: int):
    """Lists of StepEnded, one per frame."""
    g = 0
    for _ in range(n_frames):
        batch = []
        for _ in range(STEPS_PER_FRAME):
            g += 1
            v = {k: 1.0 / (1 + 1e-3 * g) + 0.1 * math.sin(g * (i + 1)) for i, k in enumerate(KEYS)}
            batch.append(StepEnded(0, g, 0, g, 1, v, v, g * 1e-4))
        yield batch


def one_pass(app: QApplication, weight: float, batches: list) -> tuple[list[float], MetricsPanel]:
    """ms per frame (ingest + refresh) of one run through a fresh panel."""
    panel = MetricsPanel()
    panel.resize(1200, 700)
    panel.show()
    panel.set_smoothing(weight)
    panel.ingest_event(RunStarted("/bench/train.py", ("train.py",), "/bench", 0.0))
    model = ModelSummary("m", "Sequential", (), 1, 1)
    panel.ingest_event(FitStarted(0, model, 1, 0, 10**9, 1, 0, 0.0))
    times = []
    for i, batch in enumerate(batches):
        t0 = time.perf_counter()
        panel.ingest_steps(batch)
        panel.refresh()
        times.append((time.perf_counter() - t0) * 1000)
        if i == 0:  # more than 4 families start hidden: show them all (the worst case)
            for family in list(panel.plots):
                panel.set_family_shown(family, True)
    app.processEvents()
    return times, panel


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300, help="frames per pass")
    parser.add_argument("--rounds", type=int, default=3, help="off/on pairs")
    opts = parser.parse_args()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    batches = list(frames(opts.frames))
    steps = opts.frames * STEPS_PER_FRAME
    print(
        f"{opts.frames} frames of {STEPS_PER_FRAME} steps x {len(KEYS)} per-step keys "
        f"({steps:,} steps, all 12 plots shown); {opts.rounds} rounds, off and on alternating"
    )
    off: list[float] = []
    on: list[float] = []
    moves: list[float] = []
    for r in range(opts.rounds):
        t_off, p = one_pass(app, 0.0, batches)
        p.deleteLater()
        t_on, panel = one_pass(app, 0.6, batches)
        t0 = time.perf_counter()
        panel.set_smoothing(0.9)  # the slider moved: every stored curve re-smoothed
        moves.append((time.perf_counter() - t0) * 1000)
        panel.deleteLater()
        off += t_off
        on += t_on
        print(
            f"round {r + 1}: median frame ms off {statistics.median(t_off):.2f}, "
            f"on {statistics.median(t_on):.2f}; slider move {moves[-1]:.1f} ms"
        )
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(
        f"smoothing: frame ms off = {m_off:.2f}, on = {m_on:.2f} (ratio {m_on / m_off:.2f}); "
        f"slider move ms = {statistics.median(moves):.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
