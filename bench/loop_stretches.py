"""A graph loop's quiet stretches without the ``tf.function`` wrapper, and the norm twins' cap,
before and after, alternated in one process.

The small MLP's train step of ``bench/loop_overhead.py`` traced ``--traces`` times under
:class:`LoopInterceptor` (monitored traces), with the worker side of
``bench/overhead.py`` running. Blocks of ``--rounds`` rounds alternate between
settings; in every round each trace is called three ways in a fresh random order, every
call timed:

- ``G``: TensorFlow's own ``__call__`` (the graph alone);
- ``H``: the same again (the control: how far two identical ways land apart);
- ``M``: as a run calls it (``fn(x, y)``: the wrapper, its twins, or, in a quiet stretch
  without the wrapper, TensorFlow's own ``__call__``).

Settings: ``before`` (every call through the wrapper; norm twins at most 20 calls a
second, ``NORM_MIN_GAP_S`` 0.05), ``cap`` (the same wrapper, at most 10 a second) and
``after`` (quiet stretches without the wrapper, at most 10 a second: this tree's
defaults). For each it prints ``M - G`` and ``H - G`` and the
reader thread's CPU per monitored call (its beats and ticks): each difference is taken
within a round, a trace's calls a millisecond apart, then averaged (and, "clipped",
without the pairs more than 2 ms apart: a call the OS preempted), or its median (the
typical call: twins, ~2% of the monitored calls here, barely move it). Monitored calls are a
third of all calls here, so what is capped by time (twin calls a second, the reader's
wakes) weighs about three times what it weighs per step in a loop of its own.

    python bench/loop_stretches.py [--blocks 30] [--rounds 100] [--traces 4]
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

SETTINGS = {  # name -> (OFF_AFTER, NORM_MIN_GAP_S)
    "before": (1 << 62, 0.05),
    "cap": (1 << 62, 0.1),
    "after": (None, None),  # this tree's defaults
}


def main() -> None:
    """Alternate the settings block by block; print each one's costs against G."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=30, help="blocks of each setting")
    parser.add_argument("--rounds", type=int, default=100, help="rounds a block")
    parser.add_argument("--traces", type=int, default=4, help="monitored traces of the step")
    args = parser.parse_args()

    from interleave import thread_cpu
    from loop_overhead import mlp_step, traces
    from overhead import WorkerSide
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    from tfstudio.core.options import RunOptions
    from tfstudio.engine.loops import LoopInterceptor, sampling
    from tfstudio.engine.loops.ring import NORM_EVERY

    defaults = (sampling.OFF_AFTER, sampling.NORM_MIN_GAP_S)
    x, y, step = mlp_step()
    own = polymorphic_function.Function.__call__
    side = WorkerSide(RunOptions(inspector=False))
    # per setting, way: M - G and H - G of each trace in each round (calls ~1 ms apart)
    diffs = {name: {way: [] for way in "HM"} for name in SETTINGS}
    base = {name: [] for name in SETTINGS}
    reader_cpu = dict.fromkeys(SETTINGS, 0.0)
    order = random.Random(0)
    pc = time.perf_counter
    with LoopInterceptor(side.monitor) as interceptor:
        sampler = interceptor.sampler
        fns = traces(step, x, y, args.traces)
        for k in range((NORM_EVERY + 1) * len(fns) * 8):  # twins traced, past OFF_AFTER
            fns[k % len(fns)](x, y)
        calls = [(way, i) for way in "GHM" for i in range(len(fns))]
        for block in range(args.blocks * len(SETTINGS)):
            name = list(SETTINGS)[block % len(SETTINGS)]
            off_after, gap = SETTINGS[name]
            sampling.OFF_AFTER = defaults[0] if off_after is None else off_after
            sampling.NORM_MIN_GAP_S = defaults[1] if gap is None else gap
            if sampler.off and off_after is not None:
                sampler.arm()  # the wrapper back for a setting without stretches
            # the next call takes the full path, which plans the block's first stretch (as
            # a run's steady state would have it), not the previous block's quiet path
            sampler.quiet_until = 0
            got = diffs[name]
            reader = interceptor.reader.thread
            cpu = thread_cpu(reader)
            for _ in range(args.rounds):
                order.shuffle(calls)
                took = {}
                for way, i in calls:
                    fn = fns[i]
                    t = pc()
                    if way == "M":
                        fn(x, y)
                    else:
                        own(fn, x, y)
                    took[way, i] = pc() - t
                for i in range(len(fns)):
                    g = took["G", i]
                    base[name].append(g)
                    got["M"].append(took["M", i] - g)
                    got["H"].append(took["H", i] - g)
            reader_cpu[name] += thread_cpu(reader) - cpu
    sampling.OFF_AFTER, sampling.NORM_MIN_GAP_S = defaults
    side.close()
    print(
        f"machine: {os.cpu_count()} cpus (load average {os.getloadavg()[0]:.2f}); MLP "
        f"32-64-64-10, batch 64, Adam; {args.traces} traces; {args.blocks} blocks of "
        f"{args.rounds} rounds a setting, alternated"
    )
    for name, got in diffs.items():
        m, h = _stats(got["M"]), _stats(got["H"])
        per_call = reader_cpu[name] / len(got["M"])
        print(
            f"{name}: G {statistics.fmean(base[name]) * 1e6:.1f} us; M - G mean {m[0]:+.1f}, "
            f"clipped {m[1]:+.1f}, median {m[2]:+.1f} us (control H - G {h[0]:+.1f}, "
            f"{h[1]:+.1f}, {h[2]:+.1f}); reader {per_call * 1e6:.1f} us per monitored call"
        )


def _stats(d: list[float]) -> tuple[float, float, float]:
    """Mean, mean of the pairs within 2 ms (a preempted call left out), median; in us."""
    clipped = [v for v in d if abs(v) < 2e-3]
    return (
        statistics.fmean(d) * 1e6,
        statistics.fmean(clipped) * 1e6,
        statistics.median(d) * 1e6,
    )


if __name__ == "__main__":
    main()
