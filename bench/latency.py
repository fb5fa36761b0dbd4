"""Step-to-pixel latency: from a step's batch hook in the worker to the redraw that shows it.

Runs ``FAST_STEPS`` (a tiny model at ~1k steps/s, which logs the
monotonic time of each batch hook) in the real window, offscreen, through a
worker process. The window records, at each redraw, the monotonic time after
the panels were updated and the newest step they hold. A step's latency is the
time from its hook to the first redraw holding it (the paint of that redraw
follows in the same turn of the event loop). The first 500 steps (warm-up,
tracing) are left out.

    python bench/latency.py [--steps 6000]

Ends with one line: ``latency: step to pixel median ms = X, p99 = Y``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
FAST_STEPS = """\
import json, os, time
import keras, numpy as np

stamps = []


class Stamp(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        stamps.append(time.perf_counter())  # CLOCK_MONOTONIC: shared by every process


x = np.random.default_rng(0).normal(size=(8 * 500, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
steps = int(os.environ.get("TFSTUDIO_BENCH_STEPS", "6000"))
model.fit(x, y, batch_size=8, epochs=steps // 500, verbose=0, callbacks=[Stamp()])
with open(os.environ["TFSTUDIO_BENCH_OUT"], "w") as f:
    json.dump(stamps, f)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6000)
    args = parser.parse_args()
    from window_driver import run_window

    redraws: list[tuple[float, int]] = []

    def on_redraw(window: object) -> None:
        newest = window.status.tracker.progress.global_step  # type: ignore[attr-defined]
        redraws.append((time.perf_counter(), newest))

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stamps.json"
        os.environ["TFSTUDIO_BENCH_OUT"] = str(out)
        os.environ["TFSTUDIO_BENCH_STEPS"] = str(args.steps)
        script = Path(tmp) / "fast_steps.py"
        script.write_text(FAST_STEPS)
        stats = run_window(str(script), on_redraw=on_redraw)
        stamps = json.loads(out.read_text())
    shown_steps = [step for _, step in redraws]
    latencies = []
    for step, hooked in enumerate(stamps, start=1):
        if step <= 500:
            continue
        i = bisect.bisect_left(shown_steps, step)
        if i < len(redraws):
            latencies.append(redraws[i][0] - hooked)
    run_s = (stamps[-1] - stamps[500]) if len(stamps) > 500 else float("nan")
    rate = (len(stamps) - 500) / run_s
    q = statistics.quantiles(latencies, n=100)
    print(
        f"{len(stamps)} steps at {rate:.0f} steps/s; {len(latencies)} steps timed; "
        f"window redraws {stats['redraws_per_s']:.1f}/s"
    )
    print(
        f"latency ms: min {min(latencies) * 1e3:.1f}, p50 {q[49] * 1e3:.1f}, "
        f"p90 {q[89] * 1e3:.1f}, p99 {q[98] * 1e3:.1f}, max {max(latencies) * 1e3:.1f}"
    )
    print(f"latency: step to pixel median ms = {q[49] * 1e3:.1f}, p99 = {q[98] * 1e3:.1f}")


if __name__ == "__main__":
    main()
