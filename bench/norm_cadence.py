"""What a graph loop's norm twin costs when one step function is called over and over.

``bench/loop_overhead.py`` calls eight traces in random order, so every call switches
graphs and the norm twin's own switch does not show. A real loop calls one function:
there a call of the twin (a graph of its own) costs TensorFlow ~0.12-0.15 ms more than
a call of the function's graph. This bench runs the small MLP's train step as a
monitored ``tf.function`` loop (the worker side of ``bench/overhead.py``) in short
blocks of consecutive steps, alternating three ways in random order: the norm twin
every 10th call (``NORM_MIN_GAP_S = 0``, as before the cap), every 10th call but at
most 20 times a second (the cap, the setting now), and bare blocks of a bare trace
through TensorFlow's own call (the reference; its two halves give a control).

A shared VM's speed jumps between regimes for seconds at a time, so blocks come in
sets of four (one per way, in a fresh random order, ~0.3 s a set) and each set gives
its own ratios: the figures are the medians of the sets' ratios (a bare block against
the other bare block of its set is the control).

    python bench/norm_cadence.py [--sets 120] [--steps 100]

Prints each way's median ``bare/this`` over the sets, and its mean step time.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's tfstudio


def main() -> None:
    """Alternate the ways set by set and print the medians of the sets' ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=120, help="sets of four blocks")
    parser.add_argument("--steps", type=int, default=100, help="consecutive steps per block")
    args = parser.parse_args()

    from loop_overhead import mlp_step, traces
    from overhead import WorkerSide
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    from tfstudio.core.options import RunOptions
    from tfstudio.engine.loops import LoopInterceptor, sampling

    x, y, step = mlp_step()
    original = polymorphic_function.Function.__call__
    (bare,) = traces(step, x, y, 1)
    capped_gap = sampling.NORM_MIN_GAP_S
    side = WorkerSide(RunOptions(inspector=False))
    ways = ["bare A", "bare B", "every 10th", "capped"]
    sets: list[dict[str, float]] = []
    with LoopInterceptor(side.monitor):
        (monitored,) = traces(step, x, y, 1)
        for _ in range(30):  # its norm twin's trace (untimed)
            monitored(x, y)
        order = random.Random(0)
        clock = time.perf_counter
        for _ in range(args.sets):
            order.shuffle(ways)
            times: dict[str, float] = {}
            for way in ways:
                if way.startswith("bare"):
                    start = clock()
                    for _ in range(args.steps):
                        original(bare, x, y)
                else:
                    sampling.NORM_MIN_GAP_S = capped_gap if way == "capped" else 0.0
                    start = clock()
                    for _ in range(args.steps):
                        monitored(x, y)
                times[way] = (clock() - start) / args.steps
            sets.append(times)
        sampling.NORM_MIN_GAP_S = capped_gap
    side.close()
    for way in ("bare B", "every 10th", "capped"):
        ratios = [t["bare A"] / t[way] for t in sets]
        mean = statistics.fmean(t[way] for t in sets)
        label = "control (bare A/bare B)" if way == "bare B" else f"bare/{way}"
        print(
            f"{label:24s}: median of sets {statistics.median(ratios):.4f} "
            f"(mean step {mean * 1e6:.1f} us)"
        )
    print(f"bare A: mean step {statistics.fmean(t['bare A'] for t in sets) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
