"""What a graph loop's norm twin costs when one step function is called over and over.

``bench/loop_overhead.py`` calls eight traces in random order, so every call switches
graphs and the norm twin's own switch does not show. A real loop calls one function:
there a call of the twin (a graph of its own) costs TensorFlow ~0.12-0.15 ms more than
a call of the function's graph. This bench runs the small MLP's train step as a
monitored ``tf.function`` loop (the worker side of ``bench/overhead.py``) in short
blocks of consecutive steps, alternating three ways in random order: the norm twin
every 10th call (``NORM_MIN_GAP_S = 0``, as before the cap), every 10th call but at
most 1 / NORM_MIN_GAP_S times a second (the cap, the setting now: 20), and bare
blocks of a bare trace through TensorFlow's own call (the reference; its two halves give a control).

A shared VM's speed jumps between regimes for seconds at a time, so blocks come in
sets of four (one per way, in a fresh random order, ~0.3 s a set) and each set gives
its own ratios: the figures are the medians of the sets' ratios (a bare block against
the other bare block of its set is the control).

    python bench/norm_cadence.py [--sets 120] [--steps 100] [--gaps 0,cap]

``--gaps 0.05,0.1`` compares two caps instead (the clock the sampler spaces twins by is
the wall clock, the other ways' blocks included, so each way's rate of twin calls a
second of its own steps is printed beside its ratio).

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
    parser.add_argument("--sets", type=int, default=120, help="sets of blocks, one per way")
    parser.add_argument("--steps", type=int, default=100, help="consecutive steps per block")
    parser.add_argument(
        "--gaps",
        default="0,cap",
        help="the monitored ways: NORM_MIN_GAP_S of each, comma-separated ('cap': the "
        "setting now, 0: every 10th call), e.g. 0.05,0.1",
    )
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
    gaps = {}
    for g in args.gaps.split(","):
        gap = capped_gap if g == "cap" else float(g)
        label = "every 10th" if gap == 0 else f"gap {gap:g} s"
        gaps[label + (" (now)" if gap == capped_gap else "")] = gap
    side = WorkerSide(RunOptions(inspector=False))
    ways = ["bare A", "bare B", *gaps]
    sets: list[dict[str, float]] = []
    twins = dict.fromkeys(gaps, 0)
    own: dict[str, float] = dict.fromkeys(gaps, 0.0)
    with LoopInterceptor(side.monitor) as interceptor:
        sampler = interceptor.sampler
        twin_call = sampler._norm_twin_call  # noqa: SLF001
        way_now = [""]

        def counted(*a: object) -> object:
            twins[way_now[0]] = twins.get(way_now[0], 0) + 1
            return twin_call(*a)

        sampler._norm_twin_call = counted  # noqa: SLF001
        (monitored,) = traces(step, x, y, 1)
        for _ in range(30):  # its norm twin's trace (untimed)
            monitored(x, y)
        twins = dict.fromkeys(gaps, 0)
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
                    sampling.NORM_MIN_GAP_S = gaps[way]
                    way_now[0] = way
                    start = clock()
                    for _ in range(args.steps):
                        monitored(x, y)
                    own[way] += clock() - start
                times[way] = (clock() - start) / args.steps
            sets.append(times)
        sampling.NORM_MIN_GAP_S = capped_gap
    side.close()
    for way in ("bare B", *gaps):
        ratios = [t["bare A"] / t[way] for t in sets]
        mean = statistics.fmean(t[way] for t in sets)
        label = "control (bare A/bare B)" if way == "bare B" else f"bare/{way}"
        rate = (
            f"; {twins[way] / own[way]:.1f} twin calls a second of its own time"
            if way in gaps
            else ""
        )
        print(
            f"{label:28s}: median of sets {statistics.median(ratios):.4f} "
            f"(mean step {mean * 1e6:.1f} us{rate})"
        )
    print(f"bare A: mean step {statistics.fmean(t['bare A'] for t in sets) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
