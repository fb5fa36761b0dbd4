"""What a monitored ``fit`` step spends in tfstudio's batch hook, on the training thread.

A monitored fit of the small MLP (the worker side of ``bench/overhead.py``: pump,
advisor, recorder, a viewer process; inspector off, 100-step epochs), every call of
``StudioCallback.on_train_batch_end`` timed over ``--steps`` steps after 200 warm ones.
Prints the median and mean, percentiles, how many calls took over 100 us (a variable
read, e.g. the loss tracker's count) and the helper threads' CPU per step. Pass a
checkout's path to time that tree's hook instead of this one's.

    python bench/hook_time.py [--steps 3000] [--tree PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main() -> None:
    """Run the fit, time the hook, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="timed steps")
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parents[1]))
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.tree) / "bench"))
    sys.path.insert(1, args.tree)

    import numpy as np
    from overhead import WorkerSide, twin

    import tfstudio.engine.callback as callback
    from tfstudio.core.options import RunOptions

    hook = callback.StudioCallback.on_train_batch_end
    times: list[int] = []

    def timed(self: callback.StudioCallback, batch: int, logs: dict | None = None) -> None:
        start = time.perf_counter_ns()
        hook(self, batch, logs)
        times.append(time.perf_counter_ns() - start)

    callback.StudioCallback.on_train_batch_end = timed
    worker = WorkerSide(RunOptions(inspector=False))
    steps = worker.fit(*twin(), epochs=-(-(args.steps + 200) // 100) + 1)
    for _ in range(200):
        next(steps)
    times.clear()
    cpu0, t0 = worker.pump_cpu(), time.perf_counter()
    for _ in range(args.steps):
        next(steps)
    elapsed, cpu = time.perf_counter() - t0, worker.pump_cpu() - cpu0
    timed_calls = list(times)
    for _ in steps:
        pass
    worker.close()
    us = np.asarray(timed_calls) / 1e3
    p50, p90, p99 = np.percentile(us, [50, 90, 99])
    print(f"tree: {callback.__file__}")
    print(
        f"hook: median {statistics.median(us):.1f} us, mean {us.mean():.1f} us "
        f"(p90 {p90:.1f}, p99 {p99:.1f}); {(us > 100).sum()} of {len(us)} calls over 100 us; "
        f"step {elapsed / args.steps * 1e6:.0f} us; helper threads {cpu / args.steps * 1e6:.1f} "
        "us/step"
    )


if __name__ == "__main__":
    main()
