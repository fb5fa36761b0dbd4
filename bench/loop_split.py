"""Where a monitored ``tf.function`` loop step's extra time goes: the wrapper and the graph's write.

The small MLP's train step of ``bench/loop_overhead.py``, traced ``--traces`` times bare
(before monitoring) and ``--traces`` times under :class:`LoopInterceptor` (their graphs
write each step's loss into the ring buffer), each trace called both ways, all calls in
a fresh random order every round, one step each, every call timed:

- ``B``: a bare trace through the unpatched ``Function.__call__`` (what a script runs);
- ``W``: the same bare traces called as a monitored run calls them (tfstudio's
  ``Function.__call__`` wrapper, or TensorFlow's own while a quiet stretch of the
  monitored traces runs without it: ``engine/loops/sampling.py``);
- ``G``: a monitored trace through the unpatched call (the graph's write alone);
- ``M``: the same monitored traces called so (a monitored step: the write, the wrapper
  or a quiet stretch without it, in rounds of at most 10 twin calls a second the
  traces' norm twins).

``W - B`` and ``M - G`` compare the same traces (a trace's own speed differs by up to
~1.5%); ``G - B`` compares different traces. The worker side of ``bench/overhead.py``
(pump, recorder, viewer) runs, as in a monitored run.

    python bench/loop_split.py [--steps 1500] [--traces 3]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's tfstudio


def main() -> None:
    """Time the four kinds of call, interleaved, and print each one's mean and median."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500, help="rounds (calls per trace and way)")
    parser.add_argument("--traces", type=int, default=3, help="traces per side")
    args = parser.parse_args()

    from interleave import Interleaved
    from loop_overhead import mlp_step, traces
    from overhead import WorkerSide
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    from tfstudio.core.options import RunOptions
    from tfstudio.engine.loops import LoopInterceptor
    from tfstudio.engine.loops.ring import NORM_EVERY

    x, y, step = mlp_step()
    original = polymorphic_function.Function.__call__
    bare = traces(step, x, y, args.traces)
    side = WorkerSide(RunOptions(inspector=False))
    kinds: dict[str, list[str]] = {k: [] for k in "BWGM"}
    steps = {}

    def add(kind: str, fn: Any, direct: bool) -> None:
        name = f"{kind}{len(kinds[kind])}"
        kinds[kind].append(name)
        steps[name] = (lambda: original(fn, x, y)) if direct else (lambda: fn(x, y))

    with LoopInterceptor(side.monitor):
        mons = traces(step, x, y, args.traces)
        for k in range((NORM_EVERY + 1) * len(mons)):  # the norm twins' traces, untimed
            mons[k % len(mons)](x, y)
        for fn in bare:
            add("B", fn, True)
            add("W", fn, False)
        for fn in mons:
            add("G", fn, True)
            add("M", fn, False)
        bench = Interleaved(steps)
        bench.run(args.steps)
    side.close()
    labels = {
        "B": "bare",
        "W": "bare, called as monitored",
        "G": "monitored graph",
        "M": "monitored",
    }
    bench.report(kinds, labels, "B")
    wrap = bench.mean(*kinds["W"]) - bench.mean(*kinds["B"])
    call = bench.mean(*kinds["M"]) - bench.mean(*kinds["G"])
    print(
        f"the monitored call on bare traces {wrap * 1e6:+.1f} us; "
        f"on monitored ones {call * 1e6:+.1f} us"
    )


if __name__ == "__main__":
    main()
